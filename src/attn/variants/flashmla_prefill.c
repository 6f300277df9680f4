/* flashmla_prefill -- FlashMLA's sparse prefill kernel as a Hopper GPU runs it (deepseek-ai/FlashMLA 9241ae3,
 * csrc/sm90/prefill/sparse/phase1.cuh, flash_mla_sparse_fwd: DeepSeek-V3.2's DSA attention, d_qk 576, and V4's,
 * d_qk 512, with topk_length and attn_sink; docs/REFERENCES.md, FlashMLA). The producer gathers each query token's
 * top-k list 64 slots a block, an invalid slot (index < 0, >= s_kv, or past topk_length) as zeros whose score is
 * masked to -inf in place; the two warpgroups take the blocks in pairs, warpgroup 0 the first block's scores (Q.K^T
 * by WGMMA over dims 0..d_qk) and O's columns 0-255, warpgroup 1 the second's (dims 256.. first, then 0..255) and
 * columns 256-511. Warpgroup 0's online softmax on its block sets the maximum m0 (sM); warpgroup 1's takes m0 and
 * its block to m1, rescaling its O by ex2(m_old - m1) in one step; warpgroup 0 then rescales its P (fp32) by
 * ex2(m0 - m1) into the bf16 P warpgroup 1 multiplies with V0's right half, and its O and sums by the same before
 * P1 V1's left half. Each thread keeps its row sums (16 of a block's 64 columns, in pairs); at the end the quad's
 * butterfly and the two warpgroups' sum give L, O is scaled by 1 / (L + ex2(sink log2 e - m)) (0 where L is 0) and
 * cast to bf16; max_logits = m ln 2 and lse = logf(L) + m ln 2 (+inf and -inf for a row of no valid index). The
 * build (--build) decides the FP32 operations: FTZ and the SFU's approximations with --use_fast_math (FlashMLA's
 * setup.py), subnormals, exp2f's fix-up, libdevice's logf and the IEEE division without (vLLM's CMake). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/variants/gpu_fp.h"
#include "attn/variants/variants.h"
#include "num/acc/acc_tc.h"

#define PF_BLOCK ATTN_KERNEL_TILE   /* B_TOPK: slots per block */
#define PF_HALF 256                 /* O columns per warpgroup (D_V / 2) */
#define PF_QUAD 4                   /* threads sharing a row of the accumulator layout */
#define PF_K_SPLIT 256              /* warpgroup 1 accumulates Q.K^T over dims 256.. first */
#define PF_M_INIT (-1e30f)          /* MAX_INIT_VAL */
#define PF_LOG2E 0x1.715476p0       /* LOG_2_E = 1.44269504f (the API's sm_scale * LOG_2_E) and CUDART_L2E_F */
#define PF_LN2 0x1.62e43p-1         /* CUDART_LN2_F */
#define PF_LOG2E_EXACT 0x1.71547652b82fep0

#define FLASHMLA_PREFILL_SITES(X)                                                                                 \
    X(QK_ACC, "qk_acc", "S = Q K^T, WGMMA 64x64x16 (tc-hopper), warpgroup 1 from dim 256 on", SITE_ACC_HOPPER,   \
      FMT_FP32, FMT_RNE, 0)                                                                                        \
    X(P_EXP, "p_exp", "m = max(m, fl(max s * scale_log2)); p = exp2f(fma(s, scale_log2, -m))", SITE_FMT_FIXED,     \
      FMT_FP32, FMT_RNE, 0)                                                                                        \
    X(L_SUM, "l_sum", "per-thread sums of p in pairs, L = fma(L, scale, sum); quad and warpgroup sums",           \
      SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                                                                        \
    X(P_CAST, "p_cast", "p (and warpgroup 0's p ex2(m0 - m1)) cast for P.V", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0)    \
    X(PV_ACC, "pv_acc", "O += P V_half, WGMMA accumulating into O (tc-hopper)", SITE_ACC_HOPPER, FMT_FP32,       \
      FMT_RNE, 0)                                                                                                  \
    X(O_RESCALE, "o_rescale", "scale = exp2f(m_old - m); O and L rescales in fp32; max_logits and lse",           \
      SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                                                                        \
    X(O_DIV, "o_div", "O 1 / (L + exp2f(sink log2 e - m)) in fp32", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)          \
    X(OUT_CAST, "out_cast", "output cast", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)

enum { FLASHMLA_PREFILL_SITES(SITE_ENUM) };

const site_def_t attn_flashmla_prefill_sites[] = {FLASHMLA_PREFILL_SITES(SITE_ROW) SITE_END};

typedef struct {
    attn_ctx_t *ctx;
    const attn_group_t *g;
    long R, dk, dv, next; /* next: the first key not gathered yet */
    const long *kpos;     /* key j's slot (generated inputs: j) */
    double sl2;           /* sm_scale_div_log2 = fl32(fl32(scale) LOG_2_E) */
    double *kb[2], *vb[2], *s[2], *p0, *pb[2], *ps0; /* a pair's blocks: K [64][dk], V [64][dv], S, P [R][64] */
    long *valid[2];       /* a block's slots: the key index, or -1 */
    double *o, *m, *sc[3]; /* O [R][dv]; m per row; per row: ex2(m - m0), ex2(m - m1), ex2(m0 - m1) */
    double (*l)[2][PF_QUAD];
} pf_t;

/* Block bi of the slots into buffer b: each valid slot's K and V rows, zeros elsewhere. */
static void pf_gather(pf_t *f, long bi, int b)
{
    const attn_group_t *g = f->g;
    long dk = f->dk, dv = f->dv;
    memset(f->kb[b], 0, sizeof(double) * (size_t)(PF_BLOCK * dk));
    memset(f->vb[b], 0, sizeof(double) * (size_t)(PF_BLOCK * dv));
    for (int c = 0; c < PF_BLOCK; c++)
        f->valid[b][c] = -1;
    for (; f->next < g->sk && f->kpos[f->next] < (bi + 1) * PF_BLOCK; f->next++) {
        long j = f->next, c = f->kpos[j] - bi * PF_BLOCK;
        memcpy(f->kb[b] + c * dk, g->k + j * dk, sizeof(double) * (size_t)dk);
        memcpy(f->vb[b] + c * dv, g->v + j * dv, sizeof(double) * (size_t)dv);
        f->valid[b][c] = j;
    }
}

/* S [R][64] of buffer b in warpgroup w's order of dims; invalid slots (and keys past a row's limit) -inf. */
static void pf_scores(pf_t *f, int b)
{
    const attn_group_t *g = f->g;
    long R = f->R, dk = f->dk;
    double *s = f->s[b];
    if (b == 1 && dk > PF_K_SPLIT) {
        gpu_gemm(f->ctx, QK_ACC, 0, s, PF_BLOCK, g->q + PF_K_SPLIT, dk, f->kb[b] + PF_K_SPLIT, dk, 1, R, PF_BLOCK,
                 dk - PF_K_SPLIT);
        gpu_gemm(f->ctx, QK_ACC, 1, s, PF_BLOCK, g->q, dk, f->kb[b], dk, 1, R, PF_BLOCK, PF_K_SPLIT);
    } else {
        gpu_gemm(f->ctx, QK_ACC, 0, s, PF_BLOCK, g->q, dk, f->kb[b], dk, 1, R, PF_BLOCK, dk);
    }
    for (long r = 0; r < R; r++)
        for (int c = 0; c < PF_BLOCK; c++) {
            long j = f->valid[b][c];
            if (j < 0 || (g->limit && !g->kpos && j > g->limit[r]))
                s[r * PF_BLOCK + c] = -INFINITY;
        }
}

/* Row r's online softmax on buffer b (online_softmax_and_rescale_o) from the maximum mold: the new maximum, O's
 * scale ex2(m_run - new) into *sc (m_run: the warpgroup's own running maximum), p in place, and the warpgroup's
 * per-thread sums. */
static double pf_softmax(pf_t *f, int b, long r, double mold, double mrun, double *sc, double *l)
{
    attn_ctx_t *ctx = f->ctx;
    double *p = f->s[b] + r * PF_BLOCK, cur = -INFINITY;
    for (int c = 0; c < PF_BLOCK; c++)
        cur = p[c] > cur ? p[c] : cur;
    cur = gpu_f32(ctx, P_EXP, cur * f->sl2);
    double mnew = mold > cur ? mold : cur;
    *sc = gpu_ex2(ctx, O_RESCALE, gpu_f32(ctx, O_RESCALE, mrun - mnew));
    gpu_ex2_fma_n(ctx, P_EXP, p, PF_BLOCK, f->sl2, -mnew);
    /* thread q holds columns 8j + 2q and 8j + 2q + 1: cur_sum += p_a + p_b, j in order */
    for (int q = 0; q < PF_QUAD; q++) {
        double cs = 0;
        for (int j = 0; j < PF_BLOCK / 8; j++)
            cs = gpu_f32(ctx, L_SUM, cs + gpu_f32(ctx, L_SUM, p[8 * j + 2 * q] + p[8 * j + 2 * q + 1]));
        l[q] = gpu_fma(ctx, L_SUM, l[q], *sc, cs);
    }
    return mnew;
}

/* O's half h (+)= P V_half over buffer b's slots, O's rows first scaled by rs (NULL: not) */
static void pf_pv(pf_t *f, int h, const double *p, int b, const double *rs)
{
    long dv = f->dv, c0 = h * PF_HALF, n = h ? dv - PF_HALF : (dv < PF_HALF ? dv : PF_HALF);
    if (n <= 0)
        return;
    if (rs)
        gpu_gemm_scaled(f->ctx, PV_ACC, O_RESCALE, f->o + c0, dv, rs, p, PF_BLOCK, f->vb[b] + c0, dv, 0, f->R, n,
                        PF_BLOCK);
    else
        gpu_gemm(f->ctx, PV_ACC, 1, f->o + c0, dv, p, PF_BLOCK, f->vb[b] + c0, dv, 0, f->R, n, PF_BLOCK);
}

/* One pair of blocks, bi and bi + 1 (a loop iteration of both warpgroups). */
static void pf_pair(pf_t *f, long bi)
{
    attn_ctx_t *ctx = f->ctx;
    long R = f->R;
    for (int b = 0; b < 2; b++) {
        pf_gather(f, bi + b, b);
        pf_scores(f, b);
    }
    double *m0 = err_malloc((size_t)R, sizeof(double));
    for (long r = 0; r < R; r++) { /* warpgroup 0 on block 0: m0, P0 in fp32 and bf16 */
        m0[r] = pf_softmax(f, 0, r, f->m[r], f->m[r], &f->sc[0][r], f->l[r][0]);
        memcpy(f->p0 + r * PF_BLOCK, f->s[0] + r * PF_BLOCK, sizeof(double) * PF_BLOCK);
    }
    memcpy(f->pb[0], f->p0, sizeof(double) * (size_t)(R * PF_BLOCK));
    attn_round_n(ctx, P_CAST, f->pb[0], R * PF_BLOCK);
    pf_pv(f, 0, f->pb[0], 0, f->sc[0]); /* O_L = O_L ex2(m - m0) + P0 V0L */
    for (long r = 0; r < R; r++) {     /* warpgroup 1 on block 1 from m0: m1 and O_R's scale ex2(m - m1) */
        double m1 = pf_softmax(f, 1, r, m0[r], f->m[r], &f->sc[1][r], f->l[r][1]);
        f->sc[2][r] = gpu_ex2(ctx, O_RESCALE, gpu_f32(ctx, O_RESCALE, m0[r] - m1));
        f->m[r] = m1;
        /* warpgroup 0's P0 scaled by ex2(m0 - m1) in fp32 and cast (scale_rS), and its sums (rescale_rO) */
        for (int c = 0; c < PF_BLOCK; c++)
            f->ps0[r * PF_BLOCK + c] = gpu_f32(ctx, O_RESCALE, f->p0[r * PF_BLOCK + c] * f->sc[2][r]);
        for (int q = 0; q < PF_QUAD; q++)
            f->l[r][0][q] = gpu_f32(ctx, L_SUM, f->l[r][0][q] * f->sc[2][r]);
    }
    memcpy(f->pb[1], f->s[1], sizeof(double) * (size_t)(R * PF_BLOCK));
    attn_round_n(ctx, P_CAST, f->pb[1], R * PF_BLOCK);
    attn_round_n(ctx, P_CAST, f->ps0, R * PF_BLOCK);
    pf_pv(f, 1, f->pb[1], 1, f->sc[1]); /* O_R = O_R ex2(m - m1) + P1 V1R */
    pf_pv(f, 1, f->ps0, 0, NULL);       /* O_R += (P0 ex2(m0 - m1)) V0R */
    pf_pv(f, 0, f->pb[1], 1, f->sc[2]); /* O_L = O_L ex2(m0 - m1) + P1 V1L */
    free(m0);
}

/* The epilogue for row r (reduce_L, store_O and the lse): O scaled and cast, max_logits and lse. */
static void pf_finish(pf_t *f, long r, double *orow)
{
    attn_ctx_t *ctx = f->ctx;
    const attn_group_t *g = f->g;
    double lw[2];
    for (int w = 0; w < 2; w++) {
        const double *l = f->l[r][w];
        lw[w] = gpu_f32(ctx, L_SUM, gpu_f32(ctx, L_SUM, l[0] + l[1]) + gpu_f32(ctx, L_SUM, l[2] + l[3]));
    }
    double L = gpu_f32(ctx, L_SUM, lw[0] + lw[1]), m = f->m[r], sink = g->sink ? g->sink[r / g->sq] : -INFINITY;
    long dv = f->dv;
    if (L == 0) {
        memset(orow, 0, sizeof(double) * (size_t)dv);
    } else if (ctx->site[O_DIV].exact) {
        double den = L + (sink == -INFINITY ? 0 : exp2(sink * PF_LOG2E_EXACT - m));
        for (long c = 0; c < dv; c++)
            orow[c] /= den;
    } else {
        double sk2 = sink == -INFINITY ? sink : gpu_f32(ctx, O_DIV, sink * PF_LOG2E);
        double den = gpu_f32(ctx, O_DIV, L + gpu_ex2(ctx, O_DIV, gpu_f32(ctx, O_DIV, sk2 - m)));
        gpu_f32_scale(ctx, O_DIV, orow, dv, gpu_div(ctx, O_DIV, 1.0, den)); /* 1.0f / den, then O times it */
    }
    for (long c = 0; c < dv; c++)
        orow[c] = attn_round(ctx, OUT_CAST, orow[c]);
    int exact = ctx->site[O_RESCALE].exact;
    double mln = exact ? m / PF_LOG2E_EXACT : gpu_f32(ctx, O_RESCALE, m * PF_LN2);
    if (ctx->mlog)
        ctx->mlog[r] = L == 0 ? -INFINITY : mln;
    if (ctx->lse)
        ctx->lse[r] = L == 0 ? INFINITY : gpu_logf_add(ctx, O_RESCALE, L, mln);
}

ATTN_VARIANT(attn_flashmla_prefill)
{
    long R = g->R, dk = g->dk, dv = g->dv, sk = g->sk;
    pf_t f;
    memset(&f, 0, sizeof f);
    f.ctx = ctx, f.g = g, f.R = R, f.dk = dk, f.dv = dv;
    long *pos = NULL, nslots = g->kslots;
    if (!g->kpos) { /* generated (dense) inputs: every key valid, in order, in whole pairs of blocks */
        pos = err_malloc((size_t)(sk > 0 ? sk : 1), sizeof(long));
        for (long j = 0; j < sk; j++)
            pos[j] = j;
        nslots = (sk + 2 * PF_BLOCK - 1) / (2 * PF_BLOCK) * 2 * PF_BLOCK;
    }
    f.kpos = g->kpos ? g->kpos : pos;
    /* sm_scale * LOG_2_E, both float, on the host */
    f.sl2 = ctx->site[P_EXP].exact ? ctx->cfg->scale * PF_LOG2E_EXACT : (double)((float)ctx->cfg->scale * (float)PF_LOG2E);
    for (int b = 0; b < 2; b++) {
        f.kb[b] = err_malloc((size_t)(PF_BLOCK * dk), sizeof(double));
        f.vb[b] = err_malloc((size_t)(PF_BLOCK * dv), sizeof(double));
        f.s[b] = err_malloc((size_t)(R * PF_BLOCK), sizeof(double));
        f.pb[b] = err_malloc((size_t)(R * PF_BLOCK), sizeof(double));
        f.valid[b] = err_malloc(PF_BLOCK, sizeof(long));
    }
    f.p0 = err_malloc((size_t)(R * PF_BLOCK), sizeof(double));
    f.ps0 = err_malloc((size_t)(R * PF_BLOCK), sizeof(double));
    for (int i = 0; i < 3; i++)
        f.sc[i] = err_malloc((size_t)R, sizeof(double));
    f.m = err_malloc((size_t)R, sizeof(double));
    f.l = err_calloc((size_t)R, sizeof *f.l);
    for (long r = 0; r < R; r++)
        f.m[r] = PF_M_INIT;
    f.o = o;
    memset(o, 0, sizeof(double) * (size_t)(R * dv));
    for (long bi = 0; bi < nslots / PF_BLOCK; bi += 2)
        pf_pair(&f, bi);
    for (long r = 0; r < R; r++)
        pf_finish(&f, r, o + r * dv);
    for (int b = 0; b < 2; b++) {
        free(f.kb[b]);
        free(f.vb[b]);
        free(f.s[b]);
        free(f.pb[b]);
        free(f.valid[b]);
    }
    free(f.p0);
    free(f.ps0);
    for (int i = 0; i < 3; i++)
        free(f.sc[i]);
    free(f.m);
    free(f.l);
    free(pos);
}
