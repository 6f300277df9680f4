/* cmd_check -- `amla-lab check DIR`: a kernel's captured output (DIR/out.npy, optionally
 * DIR/lse.npy) beside its inputs in the --load layout, against Golden and every candidate
 * emulation, ranked by bit-identity */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attn/kernel.h"
#include "cli/cli.h"
#include "config/opts.h"
#include "data/npy.h"
#include "report/check.h"
#include "run/run.h"

static const char CHECK_USAGE[] =
    "usage: amla-lab check DIR [--candidates a,b:key=value,...] [--format table|json] [run options]\n"
    "DIR holds the kernel's inputs as `run --load` reads them (q.npy, k.npy, optionally v.npy and\n"
    "seqlens.npy) and its output out.npy in the layout `--dump` writes ([B, Sq, Hq, Dv] with\n"
    "seqlens.npy, else [Hq, Sq, Dv]; float values or bit patterns of --out-format), optionally its\n"
    "log-sum-exp lse.npy ([B, Hq, Sq] or [Hq, Sq], natural log). Prints the kernel's error against\n"
    "Golden, every candidate emulation ranked by the share of output elements bit-identical to\n"
    "the kernel's (with the largest and median ulp distance in the output format), a verdict, and\n"
    "where the best candidate departs from the kernel. Default candidates: every variant and\n"
    "accumulation model that applies, flashmla and flashmla-etap with their split counts; on an\n"
    "FP8 sparse case (kcache.npy) flashmla-sparse with its split count and one split, base and\n"
    "standard with and without tc-hopper; on other shapes PyTorch's SDPA backends too (fa2, sdpa-efficient,\n"
    "sdpa-cudnn, sdpa-math, and from 256 keys sdpa-math with cuBLAS's split-K counts 2-8 and 16) "
    "(--candidates all: every registered variant). The run options (--in-format, --out-format, --scale, --causal, --dv,\n"
    "--sm-count, --threads, ...) are run's.\n";

#define CHECK_MAX_CAND 64
#define CHECK_SPLIT_MIN_KEYS 256 /* keys from which check tries sdpa-math's split-K counts */

/* The default candidates for c's shape and formats. */
static int check_default_candidates(const run_cfg_t *c, char (*out)[RUN_VSPEC_LEN])
{
    static const char *const fixed[] = {"standard", "standard:acc=tc-ampere", "standard:acc=tc-hopper", "base",
                                        "base:acc=tc-ampere", "base:acc=tc-hopper", "amla", "amla:amla-form=paper",
                                        "fastattn", "seesaw", "etap", "flashmla", "flashmla:sm-parts=1",
                                        "flashmla-etap", "flashmla-etap:sm-parts=1", "fa2", "fa2:sm-parts=1"};
    int n = 0;
    if (c->input && c->input->sparse_sq) { /* an FP8 sparse cache: its kernel, its no-split path, and Base and
                                              standard (with tc-hopper) on the same dequantized cache */
        static const char *const sparse[] = {"flashmla-sparse", "flashmla-sparse:sm-parts=1", "base",
                                             "base:acc=tc-hopper", "standard", "standard:acc=tc-hopper"};
        for (size_t i = 0; i < sizeof sparse / sizeof sparse[0]; i++)
            snprintf(out[n++], RUN_VSPEC_LEN, "%s", sparse[i]);
        return n;
    }
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        snprintf(out[n++], RUN_VSPEC_LEN, "%s", fixed[i]);
    if (c->attn.in_format == FMT_FP16)
        snprintf(out[n++], RUN_VSPEC_LEN, "fastattn-fp16acc");
    /* flashmla's and flashmla-etap's split counts on the SM counts of other Hopper parts (H100 PCIe
     * 114, H20 78, ETAP's own target): the parts the kernel would choose there, where they differ
     * from --sm-count's (both kernels share get_mla_metadata's choice) */
    const attn_shape_t *s = &c->shape;
    if (s->dk != 576 || s->dv != 512) { /* not an MLA case: PyTorch's other SDPA backends */
        snprintf(out[n++], RUN_VSPEC_LEN, "sdpa-efficient");
        snprintf(out[n++], RUN_VSPEC_LEN, "sdpa-cudnn");
        snprintf(out[n++], RUN_VSPEC_LEN, "sdpa-math");
        /* cuBLAS splits the math path's P.V by shape (seen from 300 keys on, 4, 5 and 8 ways): the counts
         * 2 to 8 and 16, as the xmma SIMT kernels' round-robin tiles and as contiguous ranges */
        for (int inter = 1; s->sk >= CHECK_SPLIT_MIN_KEYS && inter >= 0; inter--)
            for (long k = 2; k <= 16; k = k < 8 ? k + 1 : 2 * k)
                snprintf(out[n++], RUN_VSPEC_LEN, "sdpa-math:split-k=%ld%s", k, inter ? "i" : "");
        return n;
    }
    long rows = (s->sq * s->hq / s->hkv + 63) / 64, own = c->attn.sm_count / s->hkv / rows;
    long sms[2] = {114, 78}, seen[3] = {own, 1, 0};
    for (int i = 0; i < 2; i++) {
        long p = sms[i] / s->hkv / rows;
        if (p > 1 && p != seen[0] && p != seen[1] && p != seen[2]) {
            snprintf(out[n++], RUN_VSPEC_LEN, "flashmla:sm-parts=%ld", p);
            snprintf(out[n++], RUN_VSPEC_LEN, "flashmla-etap:sm-parts=%ld", p);
            seen[2] = p;
        }
    }
    return n;
}

/* Candidates from a comma-separated list ("all": every registered variant). */
static int check_list_candidates(const char *list, char (*out)[RUN_VSPEC_LEN], err_t *e)
{
    int n = 0;
    if (strcmp(list, "all") == 0) {
        for (int i = 0; i < attn_variant_count && n < CHECK_MAX_CAND; i++)
            snprintf(out[n++], RUN_VSPEC_LEN, "%s", attn_variants[i].name);
        return n;
    }
    size_t total = strlen(list);
    if (total && list[total - 1] == ',')
        return err_set(e, ERR_USAGE, "--candidates: an empty name at the end of '%s'", list), -1;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= RUN_VSPEC_LEN)
            return err_set(e, ERR_USAGE, "--candidates: %s name in '%s'", len ? "too long a" : "an empty", list), -1;
        if (n == CHECK_MAX_CAND)
            return err_set(e, ERR_USAGE, "--candidates: more than %d", CHECK_MAX_CAND), -1;
        memcpy(out[n], p, len);
        out[n][len] = 0;
        if (strcmp(out[n], "golden") == 0 || strcmp(out[n], "all") == 0)
            return err_set(e, ERR_USAGE, "--candidates: %s", out[n][0] == 'g' ? "golden is the reference every candidate "
                           "is measured against, not a candidate" : "'all' stands alone"), -1;
        for (int i = 0; i < n; i++)
            if (strcmp(out[i], out[n]) == 0)
                return err_set(e, ERR_USAGE, "--candidates: '%s' is listed twice in '%s'", out[n], list), -1;
        n++;
        p += len + (p[len] == ',');
    }
    return n ? n : (err_set(e, ERR_USAGE, "--candidates: empty list"), -1);
}

/* DIR/out.npy (and lse.npy) into the lab's order [B][hq][sq][dv] ([B][hq][sq]); shapes and
 * values checked against the loaded inputs. */
static int check_read_outputs(const run_cfg_t *c, const char *dir, double **kout, double **klse, err_t *e)
{
    const attn_batch_t *bt = c->input;
    const attn_shape_t *s = &bt->entry[0].s;
    long B = bt->n, n = B * s->hq * s->sq * s->dv, nl = B * s->hq * s->sq;
    char path[4096], have[128], want[128];
    snprintf(path, sizeof path, "%s/out.npy", dir);
    io_npy_t a;
    int rc = io_npy_read(&a, path, e);
    if (rc)
        return rc;
    fmt_id_t f = c->attn.out_format;
    if (a.integer) /* neither values nor --out-format's codes (those are unsigned, of its width) */
        rc = err_set(e, ERR_USAGE, "%s: %d-byte signed integers are neither float values nor %s codes (uint%d)", path,
                     a.elsize, fmt_table[f].name, 8 * fmt_cast_width(f));
    else if (a.codes)
        rc = io_npy_decode(&a, f, path, "--out-format", e);
    int fl = bt->flashmla_layout;
    long sp = bt->sparse_sq; /* a sparse batch: entry b sp + t is query token t of batch entry b */
    long w4[4] = {sp ? B / sp : B, sp ? sp : s->sq, s->hq, s->dv}, w3[3] = {s->hq, s->sq, s->dv};
    int ok = !rc && a.n == n && a.ndim == (fl ? 4 : 3);
    for (int i = 0; ok && i < a.ndim; i++)
        ok = a.shape[i] == (fl ? w4[i] : w3[i]);
    ok |= !rc && !fl && s->sq == 1 && a.ndim == 2 && a.shape[0] == s->hq && a.shape[1] == s->dv;
    if (!rc && !ok) {
        io_npy_shape_text(have, sizeof have, &a);
        if (fl)
            snprintf(want, sizeof want, "[%ld, %ld, %ld, %ld] ([B, Sq, Hq, Dv])", w4[0], w4[1], s->hq, s->dv);
        else
            snprintf(want, sizeof want, "[%ld, %ld, %ld] ([Hq, Sq, Dv])", s->hq, s->sq, s->dv);
        rc = err_set(e, ERR_USAGE, "%s: shape %s, but the inputs give %s", path, have, want);
    }
    for (long i = 0; !rc && i < n; i++) {
        double x = a.data[i];
        /* a non-finite value is what a broken kernel gives: reported by check_run, not refused */
        if (isfinite(x) && fmt_round(x, f, FMT_RNE, 0, NULL) != x)
            rc = err_set(e, ERR_USAGE, "%s: element %ld = %.9g is not a %s value (name the kernel's output format with --out-format)",
                         path, i, x, fmt_table[f].name);
    }
    if (!rc) {
        *kout = err_malloc((size_t)n, sizeof(double));
        for (long b = 0; b < B; b++) /* [B, Sq, Hq, Dv] -> [B][hq][sq][dv]; one entry is already in order */
            for (long t = 0; t < s->sq; t++)
                for (long h = 0; h < s->hq; h++)
                    memcpy(*kout + ((b * s->hq + h) * s->sq + t) * s->dv,
                           a.data + (fl ? ((b * s->sq + t) * s->hq + h) : (h * s->sq + t)) * s->dv,
                           sizeof(double) * (size_t)s->dv);
    }
    io_npy_free(&a);
    snprintf(path, sizeof path, "%s/lse.npy", dir);
    struct stat st;
    if (rc || lstat(path, &st) != 0)
        return rc;
    if ((rc = io_npy_read(&a, path, e)))
        return rc;
    if (a.codes || a.integer) {
        rc = err_set(e, ERR_USAGE, "%s: %s, but the log-sum-exp is float values (natural log)", path,
                     a.codes ? "bit patterns (uint8/uint16)" : "integers");
        io_npy_free(&a);
        return rc;
    }
    long l3[3] = {w4[0], s->hq, w4[1]};
    ok = !a.codes && !a.integer && a.n == nl && (a.ndim == (fl ? 3 : 2) || (!fl && s->sq == 1 && a.ndim == 1));
    for (int i = 0; ok && i < a.ndim; i++)
        ok = a.shape[i] == l3[i + 3 - a.ndim - (!fl && a.ndim == 1)];
    if (!ok) {
        io_npy_shape_text(have, sizeof have, &a);
        rc = err_set(e, ERR_USAGE, "%s: shape %s%s, but the inputs give %s", path, have,
                     a.codes || a.integer ? " of integers" : "",
                     fl ? "[B, Hq, Sq] values" : "[Hq, Sq] values");
    }
    if (!rc && sp) { /* [B, Hq, Sq] -> the entries' [B Sq][Hq] */
        *klse = err_malloc((size_t)nl, sizeof(double));
        for (long b = 0; b < w4[0]; b++)
            for (long t = 0; t < sp; t++)
                for (long h = 0; h < s->hq; h++)
                    (*klse)[(b * sp + t) * s->hq + h] = a.data[(b * s->hq + h) * sp + t];
    } else if (!rc) {
        *klse = a.data;
        a.data = NULL;
    }
    io_npy_free(&a);
    return rc;
}

int cmd_check(int argc, char **argv)
{
    run_cfg_t *c = malloc(sizeof *c), *t = malloc(sizeof *t);
    char(*cand)[RUN_VSPEC_LEN] = malloc(sizeof(char[CHECK_MAX_CAND][RUN_VSPEC_LEN]));
    check_skip_t *skip = calloc(CHECK_MAX_CAND, sizeof *skip);
    if (!c || !t || !cand || !skip) {
        free(c), free(t), free(cand), free(skip);
        return cli_usage_error("check: out of memory%s%s", "", "");
    }
    run_cfg_default(c);
    err_t e = {0};
    const char *dir = NULL, *list = NULL;
    int rc = ERR_OK, dv_given = 0;
    for (int i = 0; i < argc && !rc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--help") == 0) {
            fputs(CHECK_USAGE, stdout);
            free(c), free(t), free(cand), free(skip);
            return cli_finish_stdout(0);
        }
        if (strncmp(opt, "--", 2) != 0) {
            if (dir)
                rc = err_set(&e, ERR_USAGE, "check: unexpected argument '%s' (one DIR)", opt);
            dir = opt;
            continue;
        }
        const opts_def_t *d = opts_find(opt + 2);
        if (d && (d->where & OPTS_FLAG)) {
            rc = opts_set(c, opt + 2, "yes", &e);
            continue;
        }
        if (i + 1 >= argc) {
            rc = err_set(&e, ERR_USAGE, "%s: missing value", opt);
        } else if (strcmp(opt, "--candidates") == 0) {
            list = argv[++i];
        } else if (strcmp(opt, "--format") == 0 && strcmp(argv[i + 1], "table") != 0 &&
                   strcmp(argv[i + 1], "json") != 0) {
            rc = err_set(&e, ERR_USAGE, "--format: expected table or json, got '%s' (check prints no csv)", argv[i + 1]);
        } else if (strcmp(opt, "--variants") == 0 || strcmp(opt, "--load") == 0 || strcmp(opt, "--dump") == 0 ||
                   strcmp(opt, "--csv") == 0 || strcmp(opt, "--samples") == 0) {
            rc = err_set(&e, ERR_USAGE, "check: %s does not apply (candidates: --candidates; inputs: DIR)", opt);
        } else {
            dv_given |= strcmp(opt, "--dv") == 0;
            rc = opts_run_option(c, opt, argv[++i], &e);
        }
    }
    if (!rc && !dir)
        rc = err_set(&e, ERR_USAGE, "check: no DIR given (see 'amla-lab check --help')");
    if (!rc && c->out == RUN_OUT_CSV)
        rc = err_set(&e, ERR_USAGE, "check: --format is table or json");
    /* without v.npy, V = K[..., :dv]: dv is out.npy's last dimension unless --dv says */
    char path[4096];
    io_npy_t o = {0};
    snprintf(path, sizeof path, "%s/out.npy", dir ? dir : ".");
    if (!rc && !dv_given && (rc = io_npy_read(&o, path, &e)) == ERR_OK && o.ndim >= 2)
        c->shape.dv = o.shape[o.ndim - 1];
    io_npy_free(&o);
    attn_batch_t in = {0};
    double *kout = NULL, *klse = NULL;
    c->load_dir = dir;
    c->samples = 1;
    if (!rc)
        rc = run_load_input(c, &in, &e);
    if (!rc)
        rc = check_read_outputs(c, dir, &kout, &klse, &e);
    int ncand = 0, nskip = 0;
    if (!rc) {
        ncand = list ? check_list_candidates(list, cand, &e) : check_default_candidates(c, cand);
        rc = ncand < 0 ? ERR_USAGE : ERR_OK;
    }
    /* each candidate on its own: one that does not apply to the case is named, not fatal */
    char joined[CHECK_MAX_CAND * RUN_VSPEC_LEN] = "";
    for (int i = 0; i < ncand && !rc; i++) {
        *t = *c;
        err_t ve = {0};
        int bad = opts_parse_variants(t, cand[i], &ve) || run_validate(t, &ve);
        /* a default candidate whose real kernel does not run this case is named, not run */
        if (!bad && !list && attn_kernel_outside(t->variants[0], &t->vcfg[0], &t->shape, t->gen.kv_separate, t->input && t->input->sparse_sq, ve.msg,
                                                 sizeof ve.msg))
            bad = 1;
        if (bad) {
            if (list && strcmp(list, "all") != 0) {
                rc = err_set(&e, ERR_USAGE, "--candidates: %s", ve.msg);
                break;
            }
            snprintf(skip[nskip].variant, sizeof skip[nskip].variant, "%s", cand[i]);
            snprintf(skip[nskip++].reason, sizeof skip[0].reason, "%s", ve.msg);
            continue;
        }
        strcat(joined, joined[0] ? "," : "");
        strcat(joined, cand[i]);
    }
    if (!rc && !joined[0])
        rc = err_set(&e, ERR_USAGE, "check: no candidate applies to %s", dir);
    if (!rc)
        rc = opts_parse_variants(c, joined, &e);
    if (!rc)
        rc = run_validate(c, &e);
    check_result_t r = {0};
    if (!rc)
        rc = check_run(&r, c, kout, klse, &e);
    if (!rc) {
        const attn_shape_t *s = &c->input->entry[0].s;
        char what[512];
        int off = snprintf(what, sizeof what, "%s: %s%ld entr%s, heads %ld sq %ld dk %ld dv %ld, keys", dir,
                           in.flashmla_layout ? "batch of " : "", in.n, in.n == 1 ? "y" : "ies", s->hq, s->sq, s->dk, s->dv);
        for (long b = 0; b < in.n && b < 8 && off < (int)sizeof what; b++)
            off += snprintf(what + off, sizeof what - (size_t)off, "%s%ld", b ? "," : " ", in.seqlens[b]);
        if (off < (int)sizeof what)
            snprintf(what + off, sizeof what - (size_t)off, "%s; %s in, %s out%s%s", in.n > 8 ? ",..." : "",
                     fmt_table[c->attn.in_format].name, fmt_table[c->attn.out_format].name,
                     c->shape.causal ? ", causal" : "", klse ? "; lse.npy given" : "");
        if (c->out == RUN_OUT_JSON)
            check_write_json(stdout, c, &r, what, skip, nskip);
        else
            check_write_table(stdout, c, &r, what, skip, nskip);
    }
    check_free(&r);
    free(kout);
    free(klse);
    attn_batch_free(&in);
    free(c), free(t), free(cand), free(skip);
    return rc ? cli_fail(&e) : cli_finish_stdout(0);
}
