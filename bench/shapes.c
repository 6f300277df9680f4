/* shapes -- kernel variants on shapes of their own, which the bench's MLA decode sample is not: FlashAttention-3 on
 * DeepSeek's 192/128 prefill pair and FlashMLA's sparse prefill on a token's 2048 keys, each against the one-thread
 * FP32 BLAS attention of its shape, and DeepGEMM's lightning indexer against the FP32 BLAS computation of its logits
 * (target BENCH_TARGET_TC: their products are tensor-core models) */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/opts.h"
#include "index/index.h"
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

void bench_md_shapes(FILE *f, const bench_shape_t *rows, int n, const bench_indexer_t *bi)
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
    if (bi && bi->ref > 0)
        fprintf(f, "| lightning indexer %ld x %ld x %ld, %ld keys | DeepGEMM's logits (index.h) | %.4f | %.4f (one SGEMM "
                   "and the weighted head sums) | %.2f | %s |\n", bi->S, bi->H, bi->D, bi->Skv, bi->t, bi->ref, bi->ratio,
                bench_met(bi->ratio, BENCH_TARGET_TC));
    fputc('\n', f);
}

/* The lightning indexer's logits (index/index.h: DeepGEMM's arithmetic, no Golden) for S queries of H heads x D dims
 * over Skv keys, against the plain FP32 computation of the same logits: one SGEMM (S H x D by D x Skv) and the
 * ReLU-weighted head sums, one thread; medians of reps runs. */
int bench_indexer_row(bench_indexer_t *bi, int reps)
{
    idx_case_t c;
    memset(&c, 0, sizeof c);
    c.S = bi->S, c.H = bi->H, c.D = bi->D, c.nrows = c.L = bi->Skv, c.out = FMT_FP32;
    long nq = c.S * c.H * c.D, nk = c.nrows * c.D;
    c.q = malloc(sizeof(double) * (size_t)nq), c.k = malloc(sizeof(double) * (size_t)nk);
    c.kscale = malloc(sizeof(double) * (size_t)c.nrows), c.w = malloc(sizeof(double) * (size_t)(c.S * c.H));
    c.ks = calloc((size_t)c.S, sizeof(long)), c.ke = malloc(sizeof(long) * (size_t)c.S);
    float *q32 = malloc(sizeof(float) * (size_t)nq), *k32 = malloc(sizeof(float) * (size_t)nk);
    float *s32 = malloc(sizeof(float) * (size_t)(c.S * c.H * c.nrows)), *o32 = malloc(sizeof(float) * (size_t)(c.S * c.nrows));
    double *x = malloc(sizeof(double) * (size_t)(c.S * c.L));
    fmt_rng_t rng;
    fmt_rng_seed(&rng, 11);
    for (long i = 0; i < nq + nk; i++) { /* e4m3 values of N(0, 1)-like spread: a code of 1 .. 0x5f either sign */
        double v = fmt_decode((uint32_t)(1 + fmt_rng_next(&rng) % 0x5f) | (fmt_rng_next(&rng) & 0x80u), FMT_E4M3);
        if (i < nq)
            c.q[i] = v, q32[i] = (float)v;
        else
            c.k[i - nq] = v, k32[i - nq] = (float)v;
    }
    for (long j = 0; j < c.nrows; j++)
        c.kscale[j] = 0.01;
    for (long i = 0; i < c.S * c.H; i++)
        c.w[i] = ldexp((double)(fmt_rng_next(&rng) >> 11), -53) - 0.5;
    for (long i = 0; i < c.S; i++)
        c.ke[i] = c.nrows;
    double t[BENCH_MAX_REPS], tr[BENCH_MAX_REPS];
    openblas_set_num_threads(1);
    for (int rep = -1; rep < reps; rep++) {
        double t0 = bench_now();
        idx_deepgemm(&c, x);
        double t1 = bench_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(c.S * c.H), (int)c.nrows, (int)c.D, 1.0f, q32,
                    (int)c.D, k32, (int)c.D, 0.0f, s32, (int)c.nrows);
        for (long i = 0; i < c.S; i++) { /* the heads' weighted ReLUs summed row by row (contiguous), then the scale */
            float *o = o32 + i * c.nrows;
            memset(o, 0, sizeof(float) * (size_t)c.nrows);
            for (long h = 0; h < c.H; h++) {
                const float *sr = s32 + (i * c.H + h) * c.nrows, wh = (float)c.w[i * c.H + h];
                for (long j = 0; j < c.nrows; j++)
                    o[j] += (sr[j] > 0 ? sr[j] : 0) * wh;
            }
            for (long j = 0; j < c.nrows; j++)
                o[j] *= (float)c.kscale[j];
        }
        if (rep >= 0)
            t[rep] = t1 - t0, tr[rep] = bench_now() - t1;
    }
    bi->t = bench_median(t, reps), bi->ref = bench_median(tr, reps), bi->ratio = bi->t / bi->ref;
    printf("%-36s %8.4f s %7.2f x the FP32 BLAS logits (%.4f s, 1 thread), target %.0f: %s\n", "lightning indexer "
           "64 x 64 x 128, 8192 keys", bi->t, bi->ratio, bi->ref, BENCH_TARGET_TC, bench_met(bi->ratio, BENCH_TARGET_TC));
    free(q32), free(k32), free(s32), free(o32), free(x);
    idx_free(&c);
    return 0;
}
