/* amla_naive -- AMLA's Eq. (3): O^ += exp(m_i) P_i V_i without safe softmax (overflows) */
#include <math.h>
#include <stdlib.h>

#include "attn/variants/variants.h"

#define AMLA_NAIVE_SITES(X) \
    X(QK_ACC, "qk_acc", "S_i = Q K_i^T", SITE_ACC_QK, FMT_FP32, FMT_RNE, 0) \
    X(S_SCALE, "s_scale", "S_i / sqrt(Dk) in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(P_EXP, "p_exp", "exp(m_i), exp(S_i - m_i) and their product in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(L_SUM, "l_sum", "l^ += exp(m_i) rowsum(P_i) in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(P_CAST, "p_cast", "exp(m_i) P_i cast for P.V", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0) \
    X(PV_ACC, "pv_acc", "T = (exp(m_i) P_i) V_i", SITE_ACC_PV, FMT_FP32, FMT_RNE, 0) \
    X(O_ACC, "o_acc", "O^ += T, the FP32 AtomicAdd", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(O_DIV, "o_div", "O^ / l^ in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(OUT_CAST, "out_cast", "output cast", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)

enum { AMLA_NAIVE_SITES(SITE_ENUM) };

const site_def_t attn_amla_naive_sites[] = {AMLA_NAIVE_SITES(SITE_ROW) SITE_END};

/* Eq. (3) keeps O^_i = exp(m_i) O_i, so block i adds exp(m_i) P_i V_i with P_i = exp(S_i - m_i)
 * (m_i the running max, as the kernel still computes it); exp(m_i) overflows FP32 once
 * m_i > 88.72. Events count the rows and blocks where exp(m_i) overflowed. */
ATTN_VARIANT(attn_amla_naive)
{
    long R = g->R, B = attn_tile(ctx, g->sk), dv = g->dv;
    double *s = err_malloc((size_t)(R * B), sizeof(double));
    double *t = err_malloc((size_t)(R * dv), sizeof(double));
    double *m = err_malloc((size_t)R, sizeof(double)), *l = err_calloc((size_t)R, sizeof(double));
    double *tmax = err_malloc((size_t)R, sizeof(double));
    long *valid = err_malloc((size_t)R, sizeof(long));
    double scale = attn_round(ctx, S_SCALE, ctx->cfg->scale);
    for (long r = 0; r < R; r++)
        m[r] = -INFINITY;
    for (long i = 0; i < R * dv; i++)
        o[i] = 0.0;
    for (long j0 = 0; j0 < g->sk; j0 += B) {
        long nb = g->sk - j0 < B ? g->sk - j0 : B;
        attn_tile_scores(s, valid, tmax, ctx, QK_ACC, S_SCALE, g, j0, nb, scale);
        for (long r = 0; r < R; r++) {
            double *row = s + r * nb;
            m[r] = tmax[r] > m[r] ? tmax[r] : m[r];
            double em = valid[r] > 0 ? attn_round(ctx, P_EXP, exp(m[r])) : 0.0;
            ctx->stats->events += isinf(em);
            double sum = 0.0;
            for (long c = 0; c < nb; c++) {
                double p = 0.0;
                if (c < valid[r])
                    p = attn_round(ctx, P_EXP, em * attn_round(ctx, P_EXP, exp(attn_round(ctx, P_EXP, row[c] - m[r]))));
                sum = attn_round(ctx, L_SUM, sum + p);
                row[c] = attn_round(ctx, P_CAST, p);
            }
            l[r] = attn_round(ctx, L_SUM, l[r] + sum);
        }
        attn_gemm(ctx, PV_ACC, t, dv, s, nb, g->v + j0 * dv, dv, 0, R, dv, nb);
        for (long i = 0; i < R * dv; i++)
            o[i] = attn_round(ctx, O_ACC, o[i] + t[i]);
    }
    attn_finish(o, R, dv, l, ctx, O_DIV, OUT_CAST);
    free(s);
    free(t);
    free(m);
    free(l);
    free(tmax);
    free(valid);
}
