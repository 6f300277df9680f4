/* base -- FlashAttention-2 / AMLA Algorithm 1: tiled online softmax, FP32 vector math */
#include <math.h>
#include <stdlib.h>

#include "attn/variants/base.h"
#include "attn/variants/variants.h"

enum { BASE_SITES(SITE_ENUM) };

const site_def_t attn_base_sites[] = {BASE_SITES(SITE_ROW) SITE_END};

/* One KV-head group. Per KV block of cfg->block tokens and per row r:
 *   s = S * scale, m_new = max(m, max s), alpha = exp(m - m_new), p = exp(s - m_new),
 *   l = l alpha + sum p (sequential), P = cast(p), O = O alpha + P V.
 * Masked keys (causal) get p = 0; a row whose block is fully masked is left untouched. */
ATTN_VARIANT(attn_base)
{
    attn_base_tiles(o, g, ctx, NULL, NULL);
}

void attn_base_tiles(double *o, const attn_group_t *g, attn_ctx_t *ctx, attn_base_tile_fn load, void *arg)
{
    long R = g->R, B = attn_tile(ctx, g->sk), dv = g->dv;
    double *s = err_malloc((size_t)(R * B), sizeof(double));
    double *t = err_malloc((size_t)(R * dv), sizeof(double));
    double *m = err_malloc((size_t)R, sizeof(double));
    double *l = err_malloc((size_t)R, sizeof(double));
    double *alpha = err_malloc((size_t)R, sizeof(double));
    double *tmax = err_malloc((size_t)R, sizeof(double));
    long *valid = err_malloc((size_t)R, sizeof(long));
    double scale = attn_round(ctx, S_SCALE, ctx->cfg->scale);
    for (long r = 0; r < R; r++) {
        m[r] = -INFINITY;
        l[r] = 0.0;
    }
    for (long i = 0; i < R * dv; i++)
        o[i] = 0.0;

    for (long j0 = 0; j0 < g->sk; j0 += B) {
        long nb = g->sk - j0 < B ? g->sk - j0 : B;
        const double *kt = g->k + j0 * g->dk, *vt = g->v + j0 * dv;
        if (load)
            load(arg, j0, nb, &kt, &vt);
        attn_tile_scores_k(s, valid, tmax, ctx, QK_ACC, S_SCALE, g, j0, nb, scale, kt);
        for (long r = 0; r < R; r++) {
            double *row = s + r * nb;
            if (valid[r] <= 0) {
                alpha[r] = 1.0;
                continue;
            }
            alpha[r] = attn_online_row(row, nb, valid[r], tmax[r], &m[r], &l[r], ctx, O_RESCALE, P_EXP, L_SUM, P_CAST);
        }
        attn_pv_rescale(ctx, PV_ACC, O_RESCALE, o, dv, t, dv, s, nb, vt, dv, R, dv, nb, alpha, 0);
    }
    attn_finish(o, R, dv, l, ctx, O_DIV, OUT_CAST);
    free(s);
    free(t);
    free(m);
    free(l);
    free(alpha);
    free(tmax);
    free(valid);
}
