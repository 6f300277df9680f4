/* fastattn -- FastAttention (the FastAttention paper, section 3): two-level tiling (large Cube blocks of query rows
 * split into small Vector blocks) with the tiling-mask for causal attention, and the Volta
 * m8n8k4 path with FP16 accumulators in both products */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/variants/variants.h"

/* The sites of both paths; qk and pv are the accumulation sites' sources (the matrix unit's
 * models, or the Volta path's FP16 accumulators). */
#define FASTATTN_SITES(X, qk, pv)                                                                               \
    X(QK_ACC, "qk_acc", "S_i^(j) = Q_i K_j^T (Cube, Eq. 5)", qk, FMT_FP32, FMT_RNE, 0)                            \
    X(S_SCALE, "s_scale", "scores times the softmax scale in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)         \
    X(P_EXP, "p_exp", "P = exp(S - m), exp(m_old - m) in fp32 (Vector, Eqs. 8-9)", SITE_FMT_FIXED, FMT_FP32,      \
      FMT_RNE, 0)                                                                                               \
    X(L_SUM, "l_sum", "l = e^(m_old - m) l + rowsum(P) in fp32 (Eq. 10)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)   \
    X(P_CAST, "p_cast", "P cast for the Cube", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0)                                \
    X(PV_ACC, "pv_acc", "M = P V_j (Cube, Eq. 11)", pv, FMT_FP32, FMT_RNE, 0)                                     \
    X(O_RESCALE, "o_rescale", "O = O e^(m_old - m) + M in fp32 (Eq. 12)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)  \
    X(O_DIV, "o_div", "O / l in fp32 (Eq. 13)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                            \
    X(OUT_CAST, "out_cast", "output cast", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)

enum { FASTATTN_SITES(SITE_ENUM, 0, 0) };

const site_def_t attn_fastattn_sites[] = {FASTATTN_SITES(SITE_ROW, SITE_ACC_QK, SITE_ACC_PV) SITE_END};
const site_def_t attn_fastattn_fp16acc_sites[] = {FASTATTN_SITES(SITE_ROW, SITE_ACC_FP16, SITE_ACC_FP16) SITE_END};

/* The tiling-mask: a small lower-triangular M-mask from which the B-mask of any (row, KV
 * block) is cut: key j0 + c is visible from query position p iff M-mask[a][c] with a = p - j0
 * (a >= nb: every key of the block, no masking; a < 0: none, the block is skipped). The paper
 * keeps (2M) x (2M) to serve blocks of either unit; the causal B-masks of M-wide KV blocks
 * need its M x M corner, which is what is stored. */
typedef struct {
    long M;
    unsigned char *mask; /* [M][M] */
} fa_mmask_t;

static void fa_mmask_init(fa_mmask_t *mm, long M)
{
    mm->M = M;
    mm->mask = err_malloc((size_t)(M * M), 1);
    for (long a = 0; a < M; a++)
        for (long b = 0; b < M; b++)
            mm->mask[a * M + b] = b <= a;
}

/* Visible keys of the block for query position p: the count of ones in its B-mask row. */
static long fa_visible(const fa_mmask_t *mm, long p, long j0, long nb)
{
    long a = p - j0;
    if (a < 0)
        return 0;
    if (a >= nb)
        return nb;
    long n = 0;
    for (long c = 0; c < nb; c++)
        n += mm->mask[a * mm->M + c];
    return n;
}

/* Row block [r0, r1) of the group against every KV block (Eqs. 4-12), Vector passes of
 * sub_block rows. */
static void fa_rows(double *o, const attn_group_t *g, attn_ctx_t *ctx, long r0, long r1, const fa_mmask_t *mm)
{
    long Br = r1 - r0, B = attn_tile(ctx, g->sk), dv = g->dv, dk = g->dk;
    long Bb = ctx->cfg->sub_block > 0 ? ctx->cfg->sub_block : Br;
    double *s = err_malloc((size_t)(Br * B), sizeof(double)), *t = err_malloc((size_t)(Br * dv), sizeof(double));
    double *m = err_malloc((size_t)Br, sizeof(double)), *l = err_calloc((size_t)Br, sizeof(double));
    double *alpha = err_malloc((size_t)Br, sizeof(double));
    long *vis = err_malloc((size_t)Br, sizeof(long));
    double scale = attn_round(ctx, S_SCALE, ctx->cfg->scale);
    double *ob = o + r0 * dv;
    for (long r = 0; r < Br; r++)
        m[r] = -INFINITY;
    memset(ob, 0, sizeof(double) * (size_t)(Br * dv));
    for (long j0 = 0; j0 < g->sk; j0 += B) {
        long nb = g->sk - j0 < B ? g->sk - j0 : B;
        long any = 0;
        for (long r = 0; r < Br; r++) {
            /* query position of row r: the limit is t + (sk - sq), the B-mask's diagonal */
            vis[r] = fa_visible(mm, g->limit[r0 + r], j0, nb);
            any |= vis[r];
        }
        if (!any) /* all-zero B-masks: the block is skipped on both units */
            continue;
        attn_gemm(ctx, QK_ACC, s, nb, g->q + r0 * dk, dk, g->k + j0 * dk, dk, 1, Br, nb, dk);
        for (long k0 = 0; k0 < Br; k0 += Bb) /* Vector passes (second level) */
            for (long r = k0; r < k0 + Bb && r < Br; r++) {
                double *row = s + r * nb;
                if (vis[r] <= 0) {
                    memset(row, 0, sizeof(double) * (size_t)nb);
                    alpha[r] = 1.0;
                    continue;
                }
                double tmax = attn_scale_max(ctx, S_SCALE, row, vis[r], scale);
                alpha[r] = attn_online_row(row, nb, vis[r], tmax, &m[r], &l[r], ctx, P_EXP, P_EXP, L_SUM, P_CAST);
            }
        attn_pv_rescale(ctx, PV_ACC, O_RESCALE, ob, dv, t, dv, s, nb, g->v + j0 * dv, dv, Br, dv, nb, alpha, 0);
    }
    attn_finish(ob, Br, dv, l, ctx, O_DIV, OUT_CAST);
    free(s);
    free(t);
    free(m);
    free(l);
    free(alpha);
    free(vis);
}

ATTN_VARIANT(attn_fastattn)
{
    long Br = ctx->cfg->row_block > 0 && ctx->cfg->row_block < g->R ? ctx->cfg->row_block : g->R;
    fa_mmask_t mm;
    fa_mmask_init(&mm, attn_tile(ctx, g->sk));
    for (long r0 = 0; r0 < g->R; r0 += Br) /* first level: large blocks of query rows */
        fa_rows(o, g, ctx, r0, r0 + Br < g->R ? r0 + Br : g->R, &mm);
    free(mm.mask);
}
