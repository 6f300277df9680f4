/* shapes -- kernel variants on shapes of their own, which the bench's MLA decode sample is not: FlashAttention-3 on
 * DeepSeek's 192/128 prefill pair and FlashMLA's sparse prefill on a token's 2048 keys, each against the one-thread
 * FP32 BLAS attention of its shape (target BENCH_TARGET_TC: their products are tensor-core models) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/opts.h"
#include "data/gen.h"
#include "run/run.h"

#include "bench.h"

/* One row: each variant of the row timed on one sample (no Golden), reps times after a warm run. */
static int bench_shape_case(bench_shape_t *bs, int reps)
{
    run_cfg_t *c = malloc(sizeof *c);
    err_t e = {0};
    run_cfg_default(c);
    c->shape = (attn_shape_t){bs->hq, bs->hkv, bs->sq, bs->sk, bs->dk, bs->dv, 0};
    c->samples = 1;
    c->threads = 1;
    int rc = opts_parse_variants(c, bs->variants, &e) || run_validate(c, &e);
    attn_input_t in = {.s = c->shape};
    long sk = bs->sk;
    attn_batch_t bt = {.n = 1, .entry = &in, .seqlens = &sk, .smax = sk};
    if (!rc)
        rc = gen_sample(&in, &c->gen, c->seed, 0, &e);
    long n = bs->hq * bs->sq * bs->dv, nl = bs->hq * bs->sq * 2;
    int nv = c->nvariants + 1;
    double **outs = calloc((size_t)nv, sizeof(double *)), **lses = calloc((size_t)nv, sizeof(double *));
    for (int v = 1; v < nv; v++)
        outs[v] = malloc(sizeof(double) * (size_t)n), lses[v] = malloc(sizeof(double) * (size_t)nl);
    run_row_t *rows = calloc((size_t)nv, sizeof *rows);
    double t[4][BENCH_MAX_REPS];
    c->input = &bt;
    for (int rep = -1; rep < reps && !rc; rep++)
        for (int v = 1; v < nv && v <= 4 && !rc; v++) {
            run_cfg_t one = *c;
            one.nvariants = 1;
            one.variants[0] = c->variants[v - 1];
            one.vcfg[0] = c->vcfg[v - 1];
            double *o2[2] = {NULL, outs[v]}, *l2[2] = {NULL, lses[v]}, t0 = bench_now();
            rc = run_outputs(&one, &bt, 0, o2, l2, NULL, rows, 1, &e);
            if (rep >= 0)
                t[v - 1][rep] = bench_now() - t0;
        }
    if (!rc) {
        bs->ref = bench_shape_ref_time(&in, c->attn.scale, reps);
        for (int v = 1; v < nv && v <= 4; v++) {
            bs->t[v - 1] = bench_median(t[v - 1], reps);
            bs->ratio[v - 1] = bs->t[v - 1] / bs->ref;
        }
    }
    if (rc)
        fprintf(stderr, "bench: %s: %s\n", bs->name, e.msg);
    for (int v = 1; v < nv; v++)
        free(outs[v]), free(lses[v]);
    free(outs), free(lses), free(rows);
    attn_input_free(&in);
    free(c);
    return rc;
}

int bench_shape_rows(bench_shape_t *rows, int n, int reps)
{
    for (int i = 0; i < n; i++) {
        if (bench_shape_case(&rows[i], reps))
            return 1;
        const char *p = rows[i].variants;
        for (int v = 0; v < 4 && p; v++, p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
            int len = (int)(strchr(p, ',') ? strchr(p, ',') - p : (long)strlen(p));
            printf("%-36s %-.*s: %8.4f s %7.2f x the FP32 BLAS attention (%.4f s, 1 thread), target %.0f: %s\n",
                   rows[i].name, len, p, rows[i].t[v], rows[i].ratio[v], rows[i].ref, BENCH_TARGET_TC,
                   bench_met(rows[i].ratio[v], BENCH_TARGET_TC));
        }
    }
    return 0;
}

void bench_md_shapes(FILE *f, const bench_shape_t *rows, int n)
{
    fprintf(f, "## Kernels on shapes of their own\n\nOne sample of each variant on one thread (no Golden), against the "
               "one-thread FP32 BLAS attention of the same shape (all query heads on one KV head: the same products as "
               "one KV head each), target %.0f (tensor-core models):\n\n| shape | variant | s | BLAS s | ratio | met |\n"
               "| --- | --- | --- | --- | --- | --- |\n", BENCH_TARGET_TC);
    for (int i = 0; i < n; i++) {
        const char *p = rows[i].variants;
        for (int v = 0; v < 4 && p; v++, p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
            int len = (int)(strchr(p, ',') ? strchr(p, ',') - p : (long)strlen(p));
            fprintf(f, "| %s | %.*s | %.4f | %.4f | %.2f | %s |\n", rows[i].name, len, p, rows[i].t[v], rows[i].ref,
                    rows[i].ratio[v], bench_met(rows[i].ratio[v], BENCH_TARGET_TC));
        }
    }
    fputc('\n', f);
}
