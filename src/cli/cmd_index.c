/* cmd_index -- `amla-lab check DIR` on a lightning-indexer capture (DeepGEMM's fp8_mqa_logits or
 * fp8_paged_mqa_logits: index/index.h): the kernel's logits against Golden's and against the kernel's arithmetic
 * bit for bit, and what its top-K selects against the exact top-K */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "config/opts.h"
#include "data/files.h"
#include "data/npy.h"
#include "index/index.h"

#define IDX_TOPK_DEFAULT 2048 /* DeepSeek-V3.2's index_topk */

typedef struct {
    long same, n;
    double max_ulp, rel; /* the largest ulp distance, and rel_fro against Golden */
} idx_score_t;

static idx_score_t idx_score(const idx_case_t *c, const double *x, const double *ref, const double *g)
{
    idx_score_t s = {0, 0, 0, 0};
    double num = 0, den = 0;
    for (long i = 0; i < c->S * c->L; i++) {
        if (g[i] != g[i])
            continue;
        s.n++;
        int same = x[i] == ref[i] && signbit(x[i]) == signbit(ref[i]);
        s.same += same;
        double u = same ? 0 : !isfinite(x[i]) || !isfinite(ref[i]) ? INFINITY
                                                                   : (double)llabs(fmt_ordinal(x[i], c->out) - fmt_ordinal(ref[i], c->out));
        s.max_ulp = u > s.max_ulp ? u : s.max_ulp;
        num += (x[i] - g[i]) * (x[i] - g[i]);
        den += g[i] * g[i];
    }
    s.rel = sqrt(num) / (sqrt(den) + 1e-10);
    return s;
}

int cmd_index_check(const char *dir, int argc, char **argv)
{
    long K = IDX_TOPK_DEFAULT;
    int k_given = 0, fmt = -1;
    const char *dump_dir = NULL;
    err_t e = {0};
    int rc = ERR_OK;
    for (int i = 0; i < argc && !rc; i++) {
        if (strcmp(argv[i], dir) == 0)
            continue;
        const char *opt = argv[i], *eq = strchr(opt, '='), *val = NULL;
        size_t len = eq ? (size_t)(eq - opt) : strlen(opt);
        int topk = len == 6 && strncmp(opt, "--topk", 6) == 0, outf = len == 12 && strncmp(opt, "--out-format", 12) == 0;
        int dump = len == 6 && strncmp(opt, "--dump", 6) == 0;
        if ((topk || outf || dump) && eq)
            val = eq + 1;
        else if ((topk || outf || dump) && i + 1 < argc)
            val = argv[++i];
        if (!val)
            rc = err_set(&e, ERR_USAGE, "check: %s: an indexer case (%s/weights.npy) takes --topk K, --out-format "
                         "fp32|bf16 and --dump DIR alone", opt, dir);
        else if (dump)
            dump_dir = val;
        else if (topk && !(rc = opts_parse_long("--topk", val, &K, &e)) && K < 1)
            rc = err_set(&e, ERR_USAGE, "--topk: %ld, but K must be 1 or more", K);
        else if (outf && (fmt = fmt_from_name(val)) != FMT_FP32 && fmt != FMT_BF16)
            rc = err_set(&e, ERR_USAGE, "--out-format: '%s', but DeepGEMM's indexer writes fp32 or bf16 logits", val);
        k_given |= topk;
    }
    idx_case_t c;
    memset(&c, 0, sizeof c);
    if (!rc)
        rc = idx_load(&c, dir, &e);
    if (!rc && c.logits && fmt >= 0 && (fmt_id_t)fmt != c.out)
        rc = err_set(&e, ERR_USAGE, "--out-format %s: %s/logits.npy holds %s logits", fmt_table[fmt].name, dir,
                     fmt_table[c.out].name);
    if (rc) {
        idx_free(&c);
        return cli_fail(&e);
    }
    if (c.topk && (!k_given || K > c.K)) /* topk.npy's K, or fewer of its keys */
        K = c.K;
    long n = c.S * c.L;
    double *g = malloc(sizeof(double) * (size_t)n), *x = malloc(sizeof(double) * (size_t)n),
           *y = malloc(sizeof(double) * (size_t)n);
    /* no logits.npy: the kernel's arithmetic stands for its output (in --out-format's logits, fp32 by default) */
    int modelled = !c.logits;
    if (modelled) {
        c.out = fmt >= 0 ? (fmt_id_t)fmt : FMT_FP32;
        c.logits = malloc(sizeof(double) * (size_t)n);
        idx_deepgemm(&c, c.logits);
        memcpy(x, c.logits, sizeof(double) * (size_t)n);
    } else {
        idx_deepgemm(&c, x);
    }
    idx_golden(&c, g, y);
    for (long i = 0; i < n; i++) /* the exact arithmetic, cast to the logits' format as the kernel's last step */
        y[i] = y[i] == y[i] ? fmt_round(y[i], c.out, FMT_RNE, 0, NULL) : y[i];
    /* --dump: Golden's and the model's logits [S, L] (NaN where not valid), as binary64 */
    long shape[2] = {c.S, c.L};
    char path[4096];
    const char *const dn[2] = {"golden", c.paged ? "deepgemm-paged-mqa-logits" : "deepgemm-mqa-logits"};
    const double *dx[2] = {g, x};
    for (int f = 0; f < 2 && dump_dir && !rc; f++) {
        snprintf(path, sizeof path, "%s/%s.npy", dump_dir, dn[f]);
        rc = io_ensure_dir(dump_dir, &e);
        if (!rc)
            rc = io_npy_write(path, dx[f], shape, 2, 0, &e);
    }
    if (rc) {
        free(g), free(x), free(y);
        idx_free(&c);
        return cli_fail(&e);
    }
    const char *kernel = c.paged ? "DeepGEMM's sm90_fp8_paged_mqa_logits" : "DeepGEMM's sm90_fp8_mqa_logits";
    const char *name = c.paged ? "deepgemm-paged-mqa-logits" : "deepgemm-mqa-logits";
    idx_score_t kg = idx_score(&c, c.logits, g, g), ks = idx_score(&c, x, c.logits, g), ke = idx_score(&c, y, c.logits, g);
    printf("# check %s: DeepGEMM's lightning indexer (%s), %ld query rows x %ld heads x %ld dims, %ld valid logits "
           "(%s)%s%s\n", dir, c.paged ? "paged" : "prefill", c.S, c.H, c.D, kg.n, fmt_table[c.out].name,
           c.compressed ? ", compressed" : "", modelled ? "; no logits.npy: the kernel's arithmetic stands for them" : "");
    printf("kernel against golden: rel_fro %.4e\n\n", kg.rel);
    printf("%-28s %-22s %8s %s\n", "candidate", "bit-identical", "max_ulp", "rel_fro");
    printf("%-28s %6.2f%% (%-12ld) %8.0f %.4e\n", name, floor(10000.0 * (double)ks.same / (double)ks.n) / 100,
           ks.same, ks.max_ulp, ks.rel);
    printf("%-28s %6.2f%% (%-12ld) %8.0f %.4e\n", "exact, cast", floor(10000.0 * (double)ke.same / (double)ke.n) / 100,
           ke.same, ke.max_ulp, ke.rel);
    /* the selection: per row, the kernel's top-K (topk.npy's, or its logits') against Golden's */
    long rows = 0, full = 0, hit = 0, kk = 0, ties = 0, zeros = 0, worst = 0;
    double rmin = 1;
    for (long i = 0; i < c.S; i++) {
        idx_sel_t s;
        idx_select(&c, c.logits, g, i, K, &s);
        if (s.K == 0)
            continue;
        rows++;
        hit += s.hit, kk += s.K;
        full += s.hit == s.K;
        double r = (double)s.hit / (double)s.K;
        rmin = r < rmin ? r : rmin;
        ties = s.ties > ties ? s.ties : ties;
        zeros = s.tie_zeros > zeros ? s.tie_zeros : zeros;
        worst = s.worst > worst ? s.worst : worst;
    }
    printf("\nselection: the kernel's top-%ld (%s) against Golden's, %ld rows: recall %.6f (smallest %.6f; %ld rows "
           "whole), %ld of %ld keys missed; at most %ld keys tied at a row's K-th exact logit (%ld of them exact "
           "zeros); the worst key kept is Golden's rank %ld\n",
           K, c.topk ? "topk.npy" : "of its logits", rows, kk ? (double)hit / (double)kk : 1, rmin, full, kk - hit, kk, ties,
           zeros, worst);
    if (modelled)
        printf("\nverdict: none (no kernel output given): the rows above are %s's arithmetic against the exact logits\n",
               name);
    else if (ks.same == ks.n)
        printf("\nverdict: bit-identical to %s on 100.00%% of %ld logits; %s is %s (54e2261)\n", name, ks.n, name, kernel);
    else
        printf("\nverdict: no candidate reproduces the kernel's bits: closest is %s, bit-identical on %.2f%% of %ld "
               "logits (largest distance %.0f ulp)\n",
               ks.same >= ke.same ? name : "exact, cast", floor(10000.0 * (double)(ks.same >= ke.same ? ks.same : ke.same) /
                                                                   (double)ks.n) / 100, ks.n,
               ks.same >= ke.same ? ks.max_ulp : ke.max_ulp);
    free(g), free(x), free(y);
    idx_free(&c);
    return cli_finish_stdout(0);
}
