/* seesaw -- FlashMLA's "seesaw" schedule (the FlashMLA deep dive, steps 0-11): two KV blocks per step,
 * O split into O_L / O_R held by two warpgroups, the rescales applied in the blog's order */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/variants/variants.h"

#define SEESAW_BLOCK 64 /* FlashMLA's KV block (tokens); --block does not apply */

#define SEESAW_SITES(X) \
    X(QK_ACC, "qk_acc", "p_b = q K_b^T (steps 1-2)", SITE_ACC_QK, FMT_FP32, FMT_RNE, 0) \
    X(S_SCALE, "s_scale", "scores times the softmax scale in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(P_EXP, "p_exp", "scale_b = exp(m - m_new_b), p_b = exp(p_b - m_new_b) in fp32 (3-4, 6-7)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(L_SUM, "l_sum", "l = l scale_b + rowsum(p_b) in fp32, in order", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(P_CAST, "p_cast", "p_0, p_1 and p_0 scale_1 cast for the P.V products", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0) \
    X(PV_ACC, "pv_acc", "p_b V_bL / V_bR (steps 5, 8, 10, 11)", SITE_ACC_PV, FMT_FP32, FMT_RNE, 0) \
    X(O_RESCALE, "o_rescale", "scale_0 scale_1, p_0 scale_1, O_L/O_R rescales and sums in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(O_DIV, "o_div", "O / l in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(OUT_CAST, "out_cast", "output cast", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)

enum { SEESAW_SITES(SITE_ENUM) };

const site_def_t attn_seesaw_sites[] = {SEESAW_SITES(SITE_ROW) SITE_END};

/* One warpgroup's softmax step on block b for row r: m_new = max(m, rowmax), the scale
 * exp(m - m_new) (the blog writes exp(m_new - m), which would grow without bound: the lab
 * takes FlashAttention's direction), p = exp(p - m_new) in place, l updated; returns scale. */
static double seesaw_softmax(double *p, long nb, long valid, double *m, double *l, attn_ctx_t *ctx)
{
    double mnew = *m;
    for (long c = 0; c < valid; c++)
        mnew = p[c] > mnew ? p[c] : mnew;
    if (valid <= 0) {
        for (long c = 0; c < nb; c++)
            p[c] = 0.0;
        return 1.0;
    }
    double scale = attn_round(ctx, P_EXP, exp(attn_round(ctx, P_EXP, *m - mnew)));
    double sum = attn_exp_row(ctx, P_EXP, L_SUM, p, nb, valid, mnew); /* p = exp(p - m_new), its rounded sum */
    *l = attn_round(ctx, L_SUM, attn_round(ctx, L_SUM, *l * scale) + sum);
    *m = mnew;
    return scale;
}

/* O[:, lo:hi] = O * scale + P V[:, lo:hi] (scale per row, 1 to only add). */
static void seesaw_update(double *o, const double *scale, const double *p, long nb, const double *v, long lo, long hi,
                          const attn_group_t *g, double *t, attn_ctx_t *ctx)
{
    long R = g->R, dv = g->dv, w = hi - lo;
    attn_pv_rescale(ctx, PV_ACC, O_RESCALE, o + lo, dv, t, w, p, nb, v + lo, dv, R, w, nb, scale, 0);
}

static void seesaw_cast(double *dst, const double *src, long n, attn_ctx_t *ctx)
{
    memcpy(dst, src, sizeof(double) * (size_t)n);
    attn_round_n(ctx, P_CAST, dst, n);
}

ATTN_VARIANT(attn_seesaw)
{
    long R = g->R, dv = g->dv, B = SEESAW_BLOCK, half = dv / 2;
    double *p0 = err_malloc((size_t)(R * B), sizeof(double)), *p1 = err_malloc((size_t)(R * B), sizeof(double));
    double *pc = err_malloc((size_t)(R * B), sizeof(double)), *t = err_malloc((size_t)(R * dv), sizeof(double));
    double *tmax = err_malloc((size_t)R, sizeof(double)), *m = err_malloc((size_t)R, sizeof(double));
    double *l = err_calloc((size_t)R, sizeof(double)), *sc0 = err_malloc((size_t)R, sizeof(double));
    double *sc1 = err_malloc((size_t)R, sizeof(double)), *sc01 = err_malloc((size_t)R, sizeof(double));
    double *one = err_malloc((size_t)R, sizeof(double));
    long *v0 = err_malloc((size_t)R, sizeof(long)), *v1 = err_malloc((size_t)R, sizeof(long));
    double scale = attn_round(ctx, S_SCALE, ctx->cfg->scale);
    for (long r = 0; r < R; r++) {
        m[r] = -INFINITY;
        one[r] = 1.0;
    }
    for (long i = 0; i < R * dv; i++)
        o[i] = 0.0;
    for (long j0 = 0; j0 < g->sk; j0 += 2 * B) {
        long n0 = g->sk - j0 < B ? g->sk - j0 : B;
        long j1 = j0 + n0, n1 = g->sk - j1 < B ? g->sk - j1 : B;
        if (n1 < 0)
            n1 = 0;
        /* steps 1-2 */
        attn_tile_scores(p0, v0, tmax, ctx, QK_ACC, S_SCALE, g, j0, n0, scale);
        if (n1)
            attn_tile_scores(p1, v1, tmax, ctx, QK_ACC, S_SCALE, g, j1, n1, scale);
        /* steps 3-5: warpgroup 0 */
        for (long r = 0; r < R; r++)
            sc0[r] = seesaw_softmax(p0 + r * n0, n0, v0[r], &m[r], &l[r], ctx);
        seesaw_cast(pc, p0, R * n0, ctx);
        seesaw_update(o, sc0, pc, n0, g->v + j0 * dv, 0, half, g, t, ctx);
        if (!n1) { /* an odd last block: O_R takes scale_0 and p_0 V_0R */
            seesaw_update(o, sc0, pc, n0, g->v + j0 * dv, half, dv, g, t, ctx);
            break;
        }
        /* steps 6-8: warpgroup 1 */
        for (long r = 0; r < R; r++) {
            sc1[r] = seesaw_softmax(p1 + r * n1, n1, v1[r], &m[r], &l[r], ctx);
            sc01[r] = attn_round(ctx, O_RESCALE, sc0[r] * sc1[r]);
        }
        seesaw_cast(pc, p1, R * n1, ctx);
        seesaw_update(o, sc01, pc, n1, g->v + j1 * dv, half, dv, g, t, ctx);
        /* step 11 (independent of 9-10): O_L = O_L scale_1 + p_1 V_1L */
        seesaw_update(o, sc1, pc, n1, g->v + j1 * dv, 0, half, g, t, ctx);
        /* steps 9-10: p_0 <- p_0 scale_1, cast again; O_R += p_0 V_0R */
        if (attn_site_draws(ctx, O_RESCALE) && attn_site_draws(ctx, P_CAST)) /* the draws in order */
            for (long r = 0; r < R; r++)
                for (long c = 0; c < n0; c++)
                    pc[r * n0 + c] = attn_round(ctx, P_CAST, attn_round(ctx, O_RESCALE, p0[r * n0 + c] * sc1[r]));
        else { /* each site's roundings at once (vectorized) */
            for (long r = 0; r < R; r++)
                for (long c = 0; c < n0; c++)
                    pc[r * n0 + c] = p0[r * n0 + c] * sc1[r];
            attn_round_n(ctx, O_RESCALE, pc, R * n0);
            attn_round_n(ctx, P_CAST, pc, R * n0);
        }
        seesaw_update(o, one, pc, n0, g->v + j0 * dv, half, dv, g, t, ctx);
    }
    attn_finish(o, R, dv, l, ctx, O_DIV, OUT_CAST);
    free(p0);
    free(p1);
    free(pc);
    free(t);
    free(tmax);
    free(m);
    free(l);
    free(sc0);
    free(sc1);
    free(sc01);
    free(one);
    free(v0);
    free(v1);
}
