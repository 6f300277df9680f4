/* standard -- non-flash attention with the roundings of a framework's eager ops */
#include <math.h>
#include <stdlib.h>

#include "attn/variants/variants.h"

/* As PyTorch eager runs softmax((q @ k.T) * scale, dim=-1) @ v on tensors of the input
 * format: each matmul accumulates in FP32 and returns the input format; the scale product
 * is computed in FP32 and returned in the input format; softmax computes max, exp, sum and
 * division in FP32 (sequential sum here) and returns the input format. */
#define STANDARD_SITES(X) \
    X(QK_ACC, "qk_acc", "S = Q K^T accumulation", SITE_ACC_QK, FMT_FP32, FMT_RNE, 0) \
    X(S_CAST, "s_cast", "S returned in the input format", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0) \
    X(S_SCALE, "s_scale", "S * scale in fp32, returned in the input format", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0) \
    X(P_EXP, "p_exp", "softmax: exp(s - max) in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(L_SUM, "l_sum", "softmax: row sum in fp32, in order", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(P_DIV, "p_div", "softmax: p / sum in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(P_CAST, "p_cast", "softmax output in the input format", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0) \
    X(PV_ACC, "pv_acc", "O = P V accumulation", SITE_ACC_PV, FMT_FP32, FMT_RNE, 0) \
    X(PV_CAST, "pv_cast", "P V returned in the input format", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0) \
    X(OUT_CAST, "out_cast", "output cast", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)

enum { STANDARD_SITES(SITE_ENUM) };

const site_def_t attn_standard_sites[] = {STANDARD_SITES(SITE_ROW) SITE_END};

/* One row of S into P, element by element in the kernel's order (the stochastic sites' draws
 * in that order). */
static void standard_row(attn_ctx_t *ctx, double *row, long valid, long sk, double scale)
{
    double m = -INFINITY;
    for (long j = 0; j < valid; j++) {
        double x = attn_round(ctx, S_CAST, row[j]);
        row[j] = attn_round(ctx, S_SCALE, attn_fp32(ctx, S_SCALE, x * scale));
        m = row[j] > m ? row[j] : m;
    }
    double sum = 0.0;
    for (long j = 0; j < sk; j++) {
        row[j] = j < valid ? attn_round(ctx, P_EXP, exp(attn_round(ctx, P_EXP, row[j] - m))) : 0.0;
        sum = attn_round(ctx, L_SUM, sum + row[j]);
    }
    for (long j = 0; j < valid; j++)
        row[j] = attn_round(ctx, P_CAST, attn_round(ctx, P_DIV, row[j] / sum));
}

/* standard_row as passes over the row, where no site draws: each element's operations are the
 * same; the keys past valid are zeros, whose additions leave the (rounded) sum as it is. */
static void standard_row_passes(attn_ctx_t *ctx, double *row, long valid, long sk, double scale)
{
    const int fp32 = !ctx->site[S_SCALE].exact;
    attn_round_n(ctx, S_CAST, row, valid);
    double m = -INFINITY;
    if (fp32)
#pragma omp simd
        for (long j = 0; j < valid; j++)
            row[j] = (double)(float)(row[j] * scale);
    else
#pragma omp simd
        for (long j = 0; j < valid; j++)
            row[j] = row[j] * scale;
    attn_round_n(ctx, S_SCALE, row, valid);
    for (long j = 0; j < valid; j++)
        m = row[j] > m ? row[j] : m;
    double sum = attn_exp_row(ctx, P_EXP, L_SUM, row, sk, valid, m);
#pragma omp simd
    for (long j = 0; j < valid; j++)
        row[j] = row[j] / sum;
    attn_round_n(ctx, P_DIV, row, valid);
    attn_round_n(ctx, P_CAST, row, valid);
}

/* Rows of S held at once where no site draws: every row's S, P and O are its own (each product element's chain
 * runs over k alone), so chunks of rows give the same bits while S stays within about STANDARD_CHUNK_SCORES values
 * however many query rows share the KV head (a grouped or MQA prefill) */
#define STANDARD_CHUNK_SCORES (1L << 22)

ATTN_VARIANT(attn_standard)
{
    long R = g->R, sk = g->sk, dv = g->dv;
    /* the op holds the Python scalar in fp32 (opmath) */
    double scale = attn_fp32(ctx, S_SCALE, ctx->cfg->scale);
    /* with no stochastic site (none draws from ctx->rng in an order to keep), each step a pass over
     * the row: the same operations on each element, the roundings vectorized; and the rows in chunks */
    int draws = 0;
    for (int site = QK_ACC; site <= OUT_CAST; site++)
        draws |= attn_site_draws(ctx, site);
    long chunk = draws ? R : STANDARD_CHUNK_SCORES / (sk > 0 ? sk : 1);
    chunk = chunk < 1 ? 1 : chunk > R ? R : chunk;
    double *s = err_malloc((size_t)(chunk * sk), sizeof(double));
    for (long r0 = 0; r0 < R; r0 += chunk) {
        long n = R - r0 < chunk ? R - r0 : chunk;
        attn_gemm(ctx, QK_ACC, s, sk, g->q + r0 * g->dk, g->dk, g->k, g->dk, 1, n, sk, g->dk);
        for (long r = 0; r < n; r++) {
            double *row = s + r * sk;
            long valid = g->limit[r0 + r] + 1;
            if (draws)
                standard_row(ctx, row, valid, sk, scale);
            else
                standard_row_passes(ctx, row, valid, sk, scale);
        }
        attn_gemm(ctx, PV_ACC, o + r0 * dv, dv, s, sk, g->v, dv, 0, n, dv, sk);
    }
    for (long i = 0; i < R * dv; i++)
        o[i] = attn_round(ctx, OUT_CAST, attn_round(ctx, PV_CAST, o[i]));
    free(s);
}
