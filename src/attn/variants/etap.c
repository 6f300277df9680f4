/* etap -- FlashMLA-ETAP's transposed pipeline (the FlashMLA-ETAP paper): S^T = K Q^T, softmax along the
 * KV axis, O^T = V^T P^T, transposed back at the end */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/variants/variants.h"
#include "num/vec/vec.h"

#define ETAP_BLOCK 64 /* WGMMA M = 64 tokens per tile; --block does not apply */

#define ETAP_SITES(X) \
    X(QK_ACC, "qk_acc", "S^T = K Q^T (M = 64 tokens, N = heads)", SITE_ACC_QK, FMT_FP32, FMT_RNE, 0) \
    X(S_SCALE, "s_scale", "S^T times the softmax scale in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(P_EXP, "p_exp", "exp(s - m), exp(m_old - m) in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(L_SUM, "l_sum", "column sums along the tokens: pairwise tree per tile, fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(P_CAST, "p_cast", "P^T cast for the second product", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0) \
    X(PV_ACC, "pv_acc", "O^T = V^T P^T", SITE_ACC_PV, FMT_FP32, FMT_RNE, 0) \
    X(O_RESCALE, "o_rescale", "O^T = O^T alpha + V^T P^T in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(O_DIV, "o_div", "O^T / l in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(OUT_CAST, "out_cast", "output cast (after the transpose back)", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)

enum { ETAP_SITES(SITE_ENUM) };

const site_def_t attn_etap_sites[] = {ETAP_SITES(SITE_ROW) SITE_END};

/* Pairwise sum of x[0..n) with stride s: the order of a butterfly reduction across threads. */
static double etap_tree_sum(const double *x, long n, long s, attn_ctx_t *ctx)
{
    if (n == 1)
        return x[0];
    long h = n / 2;
    return attn_round(ctx, L_SUM, etap_tree_sum(x, h, s, ctx) + etap_tree_sum(x + h * s, n - h, s, ctx));
}

/* etap_tree_sum for every column of x [n][R] at once: sum[r] = etap_tree_sum(x + r, n, R),
 * each level's sums rounded over the row at once (tmp: R values per level below this one). */
static void etap_tree_sums(double *sum, const double *x, long n, long R, double *tmp, attn_ctx_t *ctx)
{
    if (n == 1) {
        memcpy(sum, x, sizeof(double) * (size_t)R);
        return;
    }
    long h = n / 2;
    etap_tree_sums(sum, x, h, R, tmp, ctx);
    etap_tree_sums(tmp, x + h * R, n - h, R, tmp + R, ctx);
    for (long r = 0; r < R; r++)
        sum[r] += tmp[r];
    attn_round_n(ctx, L_SUM, sum, R);
}

/* Tokens and columns of V per square of the tile's transpose (eight binary64: one cache line). */
#define ETAP_TRANSPOSE 8

ATTN_VARIANT(attn_etap)
{
    long R = g->R, dv = g->dv, dk = g->dk, B = ETAP_BLOCK;
    double *st = err_malloc((size_t)(B * R), sizeof(double)); /* S^T, then P^T: [tokens][heads] */
    double *vt = err_malloc((size_t)(dv * B), sizeof(double)); /* V^T of the tile */
    double *ot = err_calloc((size_t)(dv * R), sizeof(double));  /* O^T */
    double *tt = err_malloc((size_t)(dv * R), sizeof(double));
    double *m = err_malloc((size_t)R, sizeof(double)), *l = err_calloc((size_t)R, sizeof(double));
    double *alpha = err_malloc((size_t)R, sizeof(double));
    /* the column sums over the tile at once, where no site involved draws (else row by row,
     * the draws in the kernel's order) */
    const int rows_at_once = !attn_site_draws(ctx, L_SUM) && !attn_site_draws(ctx, P_CAST);
    double *sum = err_malloc((size_t)R, sizeof(double)), *tmp = err_malloc((size_t)(R * 8), sizeof(double));
    char *live = err_malloc((size_t)R, 1);
    double scale = attn_round(ctx, S_SCALE, ctx->cfg->scale);
    for (long r = 0; r < R; r++)
        m[r] = -INFINITY;
    for (long j0 = 0; j0 < g->sk; j0 += B) {
        long nb = g->sk - j0 < B ? g->sk - j0 : B;
        attn_gemm(ctx, QK_ACC, st, R, g->k + j0 * dk, dk, g->q, dk, 1, nb, R, dk);
        for (long r = 0; r < R; r++) {
            long valid = g->limit[r] - j0 + 1;
            if (valid > nb)
                valid = nb;
            double mnew = m[r];
            for (long j = 0; j < nb; j++) {
                double *x = &st[j * R + r];
                if (j < valid) {
                    *x = attn_round(ctx, S_SCALE, *x * scale);
                    mnew = *x > mnew ? *x : mnew;
                }
            }
            live[r] = valid > 0;
            if (valid <= 0) {
                alpha[r] = 1.0;
                for (long j = 0; j < nb; j++)
                    st[j * R + r] = 0.0;
                continue;
            }
            alpha[r] = attn_round(ctx, P_EXP, exp(attn_round(ctx, P_EXP, m[r] - mnew)));
            if (!attn_site_draws(ctx, P_EXP)) { /* the same roundings, a pass over a copy of the column each */
                double e[ETAP_BLOCK];
                for (long j = 0; j < nb; j++)
                    e[j] = j < valid ? st[j * R + r] - mnew : 0.0;
                attn_round_n(ctx, P_EXP, e, valid);
                attn_exp_n(ctx, P_EXP, e, valid, 0);
                for (long j = 0; j < nb; j++)
                    st[j * R + r] = e[j];
            } else
                for (long j = 0; j < nb; j++) {
                    double *x = &st[j * R + r];
                    *x = j < valid ? attn_round(ctx, P_EXP, exp(attn_round(ctx, P_EXP, *x - mnew))) : 0.0;
                }
            m[r] = mnew;
            if (rows_at_once)
                continue;
            double sr = etap_tree_sum(st + r, nb, R, ctx);
            l[r] = attn_round(ctx, L_SUM, attn_round(ctx, L_SUM, l[r] * alpha[r]) + sr);
            for (long j = 0; j < nb; j++)
                st[j * R + r] = attn_round(ctx, P_CAST, st[j * R + r]);
        }
        if (rows_at_once) {
            etap_tree_sums(sum, st, nb, R, tmp, ctx); /* nb <= 64: six levels below the top */
            for (long r = 0; r < R; r++)
                if (live[r])
                    l[r] = attn_round(ctx, L_SUM, attn_round(ctx, L_SUM, l[r] * alpha[r]) + sum[r]);
            attn_round_n(ctx, P_CAST, st, nb * R); /* the whole tile at once (vectorized; a zero stays one) */
        }
        /* V^T by squares of ETAP_TRANSPOSE tokens and columns: a cache line of each of the
         * square's rows of V read and of its rows of V^T written; V's rows go through in order */
        for (long jb = 0; jb < nb; jb += ETAP_TRANSPOSE)
            for (long c0 = 0; c0 < dv; c0 += ETAP_TRANSPOSE)
                for (long j = jb; j < jb + ETAP_TRANSPOSE && j < nb; j++)
                    for (long c = c0; c < c0 + ETAP_TRANSPOSE && c < dv; c++)
                        vt[c * nb + j] = g->v[(j0 + j) * dv + c];
        attn_gemm(ctx, PV_ACC, tt, R, vt, nb, st, R, 0, dv, R, nb);
        for (long c = 0; c < dv; c++)
            if (attn_site_is_fp32(ctx, O_RESCALE)) /* the same roundings, vectorized */
                vec_rescale_add32_each(ot + c * R, tt + c * R, R, alpha);
            else
                for (long r = 0; r < R; r++) {
                    double *x = &ot[c * R + r];
                    *x = attn_round(ctx, O_RESCALE, attn_round(ctx, O_RESCALE, *x * alpha[r]) + tt[c * R + r]);
                }
    }
    for (long r = 0; r < R; r++)
        for (long c = 0; c < dv; c++)
            o[r * dv + c] = attn_round(ctx, OUT_CAST, attn_round(ctx, O_DIV, ot[c * R + r] / l[r]));
    free(sum);
    free(tmp);
    free(live);
    free(st);
    free(vt);
    free(ot);
    free(tt);
    free(m);
    free(l);
    free(alpha);
}
