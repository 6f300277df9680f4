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
#include "index/index.h"
#include "config/opts.h"
#include "data/npy.h"
#include "report/check.h"
#include "run/run.h"

static const char CHECK_USAGE[] =
    "usage: amla-lab check DIR [--candidates a,b:key=value,...] [--exhaustive] [--format table|json] [run options]\n"
    "DIR holds the kernel's inputs as `run --load` reads them (q.npy, k.npy, optionally v.npy and\n"
    "seqlens.npy, or cu_seqlens_q.npy and cu_seqlens_k.npy) and its output out.npy in the layout `--dump`\n"
    "writes ([B, Sq, Hq, Dv] with seqlens.npy, [total_q, Hq, Dv] with cu_seqlens, else [Hq, Sq, Dv]; float\n"
    "values or bit patterns of --out-format), optionally its log-sum-exp lse.npy ([B, Hq, Sq],\n"
    "[Hq, total_q] or [Hq, Sq], natural log). Prints the kernel's error against\n"
    "Golden, every candidate emulation ranked by the share of output elements bit-identical to\n"
    "the kernel's (with the largest and median ulp distance in the output format), a verdict, and\n"
    "where the best candidate departs from the kernel. Default candidates: every variant and\n"
    "accumulation model that applies, flashmla and flashmla-etap with their split counts; on an\n"
    "FP8 sparse case (kcache.npy) flashmla-sparse with its split count and one split, base and\n"
    "standard with and without tc-hopper; on other shapes PyTorch's SDPA backends too (fa2, sdpa-efficient,\n"
    "sdpa-cudnn, sdpa-math, and from 256 keys sdpa-math with cuBLAS's split-K counts 2-8 and 16) "
    "(--candidates all: every registered variant). The default candidates are screened: each runs first on a\n"
    "part of the case (whole KV-head groups and batch entries spread over it, one in 32) and only the leaders\n"
    "there run in full; --exhaustive (or --all) runs every one in full and lists them all, as named candidates\n"
    "always are. Golden and the candidates share the --threads. The run options (--in-format, --out-format,\n"
    "--scale, --causal, --dv, --sm-count, --threads, ...) are run's. A sparse prefill case (kv.npy, indices.npy)\n"
    "takes out.npy [s_q, h_q, 512], lse.npy and max_logits.npy [s_q, h_q]; its candidates are FlashMLA's sparse\n"
    "prefill in both builds (build=ieee: without --use_fast_math), base and standard with tc-hopper.\n"
    "usage: amla-lab check DIR [--topk K] [--out-format fp32|bf16] [--dump OUT]\n"
    "on a lightning-indexer case (weights.npy beside k_scale.npy or kv_cache.npy: DeepGEMM's fp8_mqa_logits or\n"
    "fp8_paged_mqa_logits arguments, logits.npy its output): the logits against the exact ones and DeepGEMM's\n"
    "arithmetic bit for bit, and its top-K (2048; topk.npy's where given) against the exact top-K.\n";

/* The sparse prefill's per-row outputs, lse.npy and max_logits.npy float32 [s_q, h_q], into klse's two planes
 * (max_logits NaN where only lse.npy is given; neither: klse stays NULL). */
static int check_read_rows(const attn_batch_t *bt, const char *dir, double **klse, err_t *e)
{
    long nl = bt->n * bt->entry[0].s.hq;
    static const char *const names[2] = {"lse.npy", "max_logits.npy"};
    char path[2][4096];
    struct stat st;
    int have[2];
    for (int p = 0; p < 2; p++) {
        snprintf(path[p], sizeof path[p], "%s/%s", dir, names[p]);
        have[p] = lstat(path[p], &st) == 0;
    }
    if (!have[0])
        return have[1] ? err_set(e, ERR_USAGE, "%s: max_logits.npy without lse.npy (the kernel returns both)", path[1])
                       : ERR_OK;
    *klse = err_malloc((size_t)(2 * nl), sizeof(double));
    for (long i = nl; i < 2 * nl; i++)
        (*klse)[i] = NAN;
    int rc = ERR_OK;
    for (int p = 0; p < 2 && !rc; p++) {
        io_npy_t a;
        if (!have[p] || (rc = io_npy_read(&a, path[p], e)))
            continue;
        char sh[128];
        io_npy_shape_text(sh, sizeof sh, &a);
        if (a.codes || a.integer || a.ndim != 2 || a.shape[0] != bt->n || a.shape[1] != bt->entry[0].s.hq)
            rc = err_set(e, ERR_USAGE, "%s: shape %s%s, but the inputs give float [%ld, %ld] ([s_q, h_q])", path[p], sh,
                         a.codes || a.integer ? " of integers or codes" : "", bt->n, bt->entry[0].s.hq);
        else
            memcpy(*klse + p * nl, a.data, sizeof(double) * (size_t)nl);
        io_npy_free(&a);
    }
    return rc;
}

/* DIR/out.npy (and lse.npy) into the lab's order [B][hq][sq][dv] ([B][hq][sq]; a varlen batch's entries each of
 * their sq); shapes and values checked against the loaded inputs. */
static int check_read_outputs(const run_cfg_t *c, const char *dir, double **kout, double **klse, err_t *e)
{
    const attn_batch_t *bt = c->input;
    const attn_shape_t *s = &bt->entry[0].s;
    long B = bt->n, rows = attn_batch_row(bt, B), n = rows * s->hq * s->dv, nl = rows * s->hq;
    int vl = bt->qoff != NULL; /* FlashAttention's varlen layout: out [total_q, Hq, Dv], lse [Hq, total_q] */
    int tr = bt->token_rows;   /* the sparse prefill's: out [s_q, Hq, Dv], lse and max_logits [s_q, Hq] */
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
    long w3v[3] = {rows, s->hq, s->dv};
    int ok = !rc && a.n == n && a.ndim == (fl ? 4 : 3);
    for (int i = 0; ok && i < a.ndim; i++)
        ok = a.shape[i] == (fl ? w4[i] : vl || tr ? w3v[i] : w3[i]);
    ok |= !rc && !fl && !tr && s->sq == 1 && a.ndim == 2 && a.shape[0] == s->hq && a.shape[1] == s->dv;
    if (!rc && !ok) {
        io_npy_shape_text(have, sizeof have, &a);
        if (fl)
            snprintf(want, sizeof want, "[%ld, %ld, %ld, %ld] ([B, Sq, Hq, Dv])", w4[0], w4[1], s->hq, s->dv);
        else if (vl || tr)
            snprintf(want, sizeof want, "[%ld, %ld, %ld] (%s)", rows, s->hq, s->dv, vl ? "[total_q, Hq, Dv]" : "[s_q, h_q, d_v]");
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
        for (long b = 0; b < B; b++) /* [B, Sq, Hq, Dv] or [total_q, Hq, Dv] -> [B][hq][sq][dv]; one entry is in order */
            for (long t = 0, sq = bt->entry[b].s.sq, r = attn_batch_row(bt, b); t < sq; t++)
                for (long h = 0; h < s->hq; h++)
                    memcpy(*kout + (r * s->hq + h * sq + t) * s->dv,
                           a.data + (fl || vl || tr ? ((r + t) * s->hq + h) : (h * s->sq + t)) * s->dv,
                           sizeof(double) * (size_t)s->dv);
    }
    io_npy_free(&a);
    if (tr)
        return rc ? rc : check_read_rows(bt, dir, klse, e);
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
    long l3[3] = {w4[0], s->hq, vl ? rows : w4[1]};
    ok = !a.codes && !a.integer && a.n == nl && (a.ndim == (fl ? 3 : 2) || (!fl && !vl && s->sq == 1 && a.ndim == 1));
    for (int i = 0; ok && i < a.ndim; i++)
        ok = a.shape[i] == l3[i + 3 - a.ndim - (!fl && a.ndim == 1)];
    if (!ok) {
        io_npy_shape_text(have, sizeof have, &a);
        rc = err_set(e, ERR_USAGE, "%s: shape %s%s, but the inputs give %s", path, have,
                     a.codes || a.integer ? " of integers" : "",
                     fl ? "[B, Hq, Sq] values" : vl ? "[Hq, total_q] values" : "[Hq, Sq] values");
    }
    if (!rc && sp) { /* [B, Hq, Sq] -> the entries' [B Sq][Hq] */
        *klse = err_malloc((size_t)nl, sizeof(double));
        for (long b = 0; b < w4[0]; b++)
            for (long t = 0; t < sp; t++)
                for (long h = 0; h < s->hq; h++)
                    (*klse)[(b * sp + t) * s->hq + h] = a.data[(b * s->hq + h) * sp + t];
    } else if (!rc && vl) { /* [Hq, total_q] -> the entries' [hq][sq] */
        *klse = err_malloc((size_t)nl, sizeof(double));
        for (long b = 0; b < B; b++)
            for (long h = 0; h < s->hq; h++)
                for (long t = 0, sq = bt->entry[b].s.sq, r = attn_batch_row(bt, b); t < sq; t++)
                    (*klse)[r * s->hq + h * sq + t] = a.data[h * rows + r + t];
    } else if (!rc) {
        *klse = a.data;
        a.data = NULL;
    }
    io_npy_free(&a);
    return rc;
}

int cmd_check(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) /* DeepGEMM's lightning indexer: its own check (cmd_index.c) */
        if (strncmp(argv[i], "--", 2) != 0 && (i == 0 || strcmp(argv[i - 1], "--topk") != 0) && idx_is_case(argv[i]))
            return cmd_index_check(argv[i], argc, argv);
    run_cfg_t *c = malloc(sizeof *c);
    check_skip_t *skip = calloc(CHECK_MAX_CAND, sizeof *skip);
    if (!c || !skip) {
        free(c), free(skip);
        return cli_usage_error("check: out of memory%s%s", "", "");
    }
    run_cfg_default(c);
    err_t e = {0};
    const char *dir = NULL, *list = NULL;
    int rc = ERR_OK, dv_given = 0, exhaustive = 0;
    for (int i = 0; i < argc && !rc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--help") == 0) {
            fputs(CHECK_USAGE, stdout);
            free(c), free(skip);
            return cli_finish_stdout(0);
        }
        if (strcmp(opt, "--exhaustive") == 0 || strcmp(opt, "--all") == 0) {
            exhaustive = 1;
            continue;
        }
        if (strncmp(opt, "--", 2) != 0) {
            if (dir)
                rc = err_set(&e, ERR_USAGE, "check: unexpected argument '%s' (one DIR)", opt);
            dir = opt;
            continue;
        }
        const char *fval;
        const opts_def_t *d = opts_find_flag(opt + 2, &fval);
        if (d) {
            rc = opts_set(c, d->name, fval, &e);
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
    int nskip = 0;
    if (!rc)
        rc = check_candidates(c, list, skip, &nskip, &e);
    check_result_t r = {0};
    if (!rc)
        rc = check_run(&r, c, kout, klse, !exhaustive && !list, &e);
    if (!rc) {
        const attn_shape_t *s = &c->input->entry[0].s;
        char what[512];
        int off = snprintf(what, sizeof what, "%s: %s%ld entr%s, heads %ld sq %ld dk %ld dv %ld, keys", dir,
                           in.flashmla_layout ? "batch of " : in.qoff ? "varlen batch of " : "", in.n, in.n == 1 ? "y" : "ies",
                           s->hq, c->shape.sq, s->dk, s->dv);
        for (long b = 0; b < in.n && b < 8 && off < (int)sizeof what; b++)
            off += snprintf(what + off, sizeof what - (size_t)off, "%s%ld", b ? "," : " ", in.seqlens[b]);
        if (off < (int)sizeof what)
            snprintf(what + off, sizeof what - (size_t)off, "%s; %s in, %s out%s%s", in.n > 8 ? ",..." : "",
                     fmt_table[c->attn.in_format].name, fmt_table[c->attn.out_format].name,
                     c->shape.causal == ATTN_CAUSAL_TOP_LEFT ? ", causal (top-left)" : c->shape.causal ? ", causal" : "",
                     klse ? "; lse.npy given" : "");
        if (c->out == RUN_OUT_JSON)
            check_write_json(stdout, c, &r, what, skip, nskip);
        else
            check_write_table(stdout, c, &r, what, skip, nskip);
    }
    check_free(&r);
    free(kout);
    free(klse);
    attn_batch_free(&in);
    free(c), free(skip);
    return rc ? cli_fail(&e) : cli_finish_stdout(0);
}
