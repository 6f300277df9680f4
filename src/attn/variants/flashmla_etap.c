/* flashmla-etap -- FlashMLA-ETAP's decode kernel as it runs on an H100 (pengcuo/FlashMLA-ETAP 39e6160,
 * csrc/flash_fwd_mla_kernel.h and softmax.h; docs/REFERENCES.md, FlashMLA-ETAP), instruction by
 * instruction as its sm_90a SASS shows them. One CTA takes 16 query rows; warpgroup 0 computes
 * S^T = K Q^T (WGMMA M = 64 keys, N = 16 rows) and the softmax along the key axis, both warpgroups
 * accumulate half of O^T = V^T P^T each (WGMMA M = 256 columns, K = 64 keys). The 64-key blocks
 * run from the last to the first. The running maximum is of the raw scores, reduced across lanes
 * and warps every block; each thread keeps its own row sums (keys r and r + 8 of its warp's 16)
 * and they are reduced once, in the epilogue. Every FP32 operation flushes subnormals
 * (--use_fast_math); exp2 and 1/x are the SFU's ex2.approx and rcp.approx, __logf is lg2.approx
 * times fl32(ln 2), expf is ex2.approx of x times fl32(log2 e). Split-KV uses FlashMLA's
 * scheduler without its payload floor, and a combine kernel in the natural-log domain. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/variants/flashmla.h"
#include "attn/variants/gpu_fp.h"
#include "attn/variants/variants.h"

#define ETK_BLOCK ATTN_KERNEL_TILE /* keys per block (kBlockN, the page size) */
#define ETK_WARPS 4                /* warps of the softmax warpgroup, 16 keys each */
#define ETK_ROWS 8                 /* lane rows of a warp's accumulator (lane / 4): keys r and r + 8 */
#define ETK_LOG2E 0x1.71547652b82fep0 /* M_LOG2E (double), for scale_softmax_log2 */
#define ETK_LOG2E_F 0x1.715476p0      /* fl32(log2 e): __expf's multiplier */
#define ETK_LN2_F 0x1.62e43p-1        /* fl32(ln 2): __logf's multiplier */
#define ETK_LANES 32

#define ETAPK_SITES(X)                                                                                          \
    X(QK_ACC, "qk_acc", "S^T = K Q^T, WGMMA (tc-hopper) over dims 0..575 in order", SITE_ACC_HOPPER, FMT_FP32,  \
      FMT_RNE, 0)                                                                                               \
    X(P_EXP, "p_exp", "p = ex2.approx(fma(s, scale_log2, -fl(m scale_log2))), m the raw maximum", SITE_FMT_FIXED, \
      FMT_FP32, FMT_RNE, 0)                                                                                     \
    X(L_SUM, "l_sum", "per-thread sums fma(l, scale, p_r) + p_r+8; warp butterfly and warp sum at the end",     \
      SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                                                                     \
    X(P_CAST, "p_cast", "P^T cast for O^T = V^T P^T", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0)                         \
    X(PV_ACC, "pv_acc", "O^T += V^T P^T, WGMMA accumulating into O^T (tc-hopper)", SITE_ACC_HOPPER, FMT_FP32,   \
      FMT_RNE, 0)                                                                                               \
    X(O_RESCALE, "o_rescale", "scale = ex2.approx(fl(m_old - m) scale_log2); O^T times scale; the combine",     \
      SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                                                                     \
    X(O_DIV, "o_div", "O^T rcp.approx(L) in fp32 (FTZ)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                   \
    X(OUT_CAST, "out_cast", "output cast (after the transpose back)", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)

enum { ETAPK_SITES(SITE_ENUM) };

const site_def_t attn_flashmla_etap_sites[] = {ETAPK_SITES(SITE_ROW) SITE_END};

typedef struct {
    const attn_group_t *g;
    attn_ctx_t *ctx;
    double sl2;     /* scale_softmax_log2 = fl32(fl32(scale) log2 e) */
    double scale;   /* scale_softmax, fl32 */
    int check_inf;  /* Is_causal: a masking step's all-masked maximum counts as 0 */
    double *s;      /* S^T of a block, the lab's way round: [R][64] */
    double *o;      /* O [R][dv] */
    double *m;      /* the running maximum of the raw scores, per row */
    double *l;      /* per-thread row sums [R][ETK_WARPS][ETK_ROWS] */
} etk_t;

/* The scores of the block at key j0 (nb keys) for every row, masked ones -inf. */
static void etk_scores(etk_t *f, long j0, long nb)
{
    const attn_group_t *g = f->g;
    long R = g->R, dk = g->dk;
    for (long i = 0; i < R * ETK_BLOCK; i++)
        f->s[i] = 0;
    gpu_gemm(f->ctx, QK_ACC, 0, f->s, ETK_BLOCK, g->q, dk, g->k + j0 * dk, dk, 1, R, nb, dk);
    for (long r = 0; r < R; r++)
        for (long c = 0; c < ETK_BLOCK; c++)
            if (c >= nb || j0 + c > g->limit[r])
                f->s[r * ETK_BLOCK + c] = -INFINITY;
}

/* Softmax::softmax on row r of the block: the new maximum, the old one's scale (0 on the first
 * step: scale_o is cleared), p in place, and the thread sums. */
static double etk_softmax(etk_t *f, long r, int first, int check_inf)
{
    attn_ctx_t *ctx = f->ctx;
    double *p = f->s + r * ETK_BLOCK, *l = f->l + r * ETK_WARPS * ETK_ROWS;
    double mx = attn_row_max(p, ETK_BLOCK, first ? -INFINITY : f->m[r]);
    double scale = 0;
    if (!first) {
        double cur = check_inf && mx == -INFINITY ? 0 : mx;
        scale = gpu_ex2(ctx, O_RESCALE, gpu_f32(ctx, O_RESCALE, gpu_f32(ctx, O_RESCALE, f->m[r] - cur) * f->sl2));
    }
    f->m[r] = mx;
    double ms = mx == -INFINITY ? 0 : gpu_f32(ctx, P_EXP, mx * f->sl2);
    gpu_ex2_fma_n(ctx, P_EXP, p, ETK_BLOCK, f->sl2, -ms);
    for (int w = 0; w < ETK_WARPS; w++)
        for (int t = 0; t < ETK_ROWS; t++) {
            double a = p[16 * w + t], b = p[16 * w + t + 8], *lt = &l[w * ETK_ROWS + t];
            *lt = first ? gpu_f32(ctx, L_SUM, a + b) : gpu_f32(ctx, L_SUM, gpu_fma(ctx, L_SUM, *lt, scale, a) + b);
        }
    return scale;
}

/* Blocks [b0, b1) from the last to the first: O [R][dv] as the kernel leaves it (O rcp(L); L 0
 * gives 1), the reduced L per row. */
static void etk_range(etk_t *f, long b0, long b1, double *lsum)
{
    const attn_group_t *g = f->g;
    attn_ctx_t *ctx = f->ctx;
    long R = g->R, dv = g->dv, sk = g->sk;
    double *pb = err_malloc((size_t)(R * ETK_BLOCK), sizeof(double)), *sc = err_malloc((size_t)R, sizeof(double));
    memset(f->o, 0, sizeof(double) * (size_t)(R * dv));
    /* n_masking_steps: the first step, and the second too for a causal kernel */
    int masking = f->check_inf ? 2 : 1;
    for (long b = b1 - 1, step = 0; b >= b0; b--, step++) {
        long j0 = b * ETK_BLOCK, nb = sk - j0 < ETK_BLOCK ? sk - j0 : ETK_BLOCK;
        if (nb <= 0) /* an entry with no keys (a sparse case's empty row, run on the dense kernel's arithmetic) */
            continue;
        etk_scores(f, j0, nb);
        for (long r = 0; r < R; r++)
            sc[r] = etk_softmax(f, r, step == 0, step < masking && f->check_inf);
        memcpy(pb, f->s, sizeof(double) * (size_t)(R * ETK_BLOCK));
        attn_round_n(ctx, P_CAST, pb, R * ETK_BLOCK);
        /* O rescaled (o_rescale) by the product as it reads O; V rows past the keys are zero in shared memory
         * (Clear_OOB_MN) and P is 0 there */
        gpu_gemm_scaled(ctx, PV_ACC, O_RESCALE, f->o, dv, sc, pb, ETK_BLOCK, g->v + j0 * dv, dv, 0, R, dv, nb);
    }
    free(pb);
    free(sc);
    /* reduce_group_4x8_4_sum: butterfly over the lane rows (xor 16, 8, 4), then the warps from 0 */
    for (long r = 0; r < R; r++) {
        double L = 0;
        for (int w = 0; w < ETK_WARPS; w++) {
            double lane[ETK_ROWS];
            memcpy(lane, f->l + (r * ETK_WARPS + w) * ETK_ROWS, sizeof lane);
            L = gpu_f32(ctx, L_SUM, L + gpu_butterfly_sum(ctx, L_SUM, lane, ETK_ROWS, 1));
        }
        lsum[r] = L;
        double inv = L == 0 ? 1 : gpu_rcp(ctx, O_DIV, L);
        for (long c = 0; c < dv; c++)
            f->o[r * dv + c] = ctx->site[O_DIV].exact ? f->o[r * dv + c] / (L == 0 ? 1 : L)
                                                      : gpu_f32(ctx, O_DIV, f->o[r * dv + c] * inv);
    }
}

/* lse = m scale + __logf(L): FFMA(m, scale, fl(lg2.approx(L) fl32(ln 2))); L 0 gives `empty` */
static double etk_lse(etk_t *f, long r, double L, double empty)
{
    attn_ctx_t *ctx = f->ctx;
    if (L == 0)
        return empty;
    if (ctx->site[O_RESCALE].exact)
        return f->m[r] * f->scale + log(L);
    return gpu_fma(ctx, O_RESCALE, f->m[r], f->scale, gpu_f32(ctx, O_RESCALE, gpu_lg2(ctx, O_RESCALE, L) * ETK_LN2_F));
}

/* __expf(x) = ex2.approx(fl(x fl32(log2 e))) at site ss */
static double etk_expf(attn_ctx_t *ctx, int ss, double x)
{
    return ctx->site[ss].exact ? exp(x) : gpu_ex2(ctx, ss, gpu_f32(ctx, ss, x * ETK_LOG2E_F));
}

double flashmla_combine_ln(attn_ctx_t *ctx, int site_sum, int site_scale, double *o, const double *oacc, long ldo_split,
                           const double *lse, long nsplit, long dv, long max_splits)
{
    double gmax = -INFINITY;
    for (long i = 0; i < nsplit; i++)
        gmax = lse[i] > gmax ? lse[i] : gmax;
    if (gmax == -INFINITY)
        gmax = 0;
    double lane[ETK_LANES];
    for (int t = 0; t < ETK_LANES; t++) {
        lane[t] = 0;
        for (long i = t; i < max_splits && i < nsplit; i += ETK_LANES)
            lane[t] = gpu_f32(ctx, site_sum, lane[t] + etk_expf(ctx, site_scale, gpu_f32(ctx, site_scale, lse[i] - gmax)));
    }
    double sum = gpu_butterfly_sum(ctx, site_sum, lane, ETK_LANES, 1);
    double g = sum == 0 ? INFINITY
               : ctx->site[site_scale].exact ? log(sum) + gmax
                                            : gpu_fma(ctx, site_scale, gpu_lg2(ctx, site_scale, sum), ETK_LN2_F, gmax);
    for (long c = 0; c < dv; c++)
        o[c] = 0;
    for (long i = 0; i < nsplit; i++)
        gpu_fma_acc_n(ctx, site_scale, o, oacc + i * ldo_split, dv,
                      etk_expf(ctx, site_scale, gpu_f32(ctx, site_scale, lse[i] - g)));
    return g;
}

static double etk_f32(double x)
{
    volatile float t = (float)x;
    return t;
}

ATTN_VARIANT(attn_flashmla_etap)
{
    long R = g->R, dv = g->dv, sk = g->sk;
    etk_t f = {g, ctx, 0, 0, 0, NULL, NULL, NULL, NULL};
    /* the scale in fp32 (params.scale_softmax) and scale_softmax_log2 = fl32(fl32(scale) M_LOG2E),
     * rounded through a volatile binary32: GCC 12 at -O2 dropped both (double)(float) casts of the
     * plain expressions here (it stored the two fields as one vector), leaving scale_log2 unrounded */
    int ex = ctx->site[P_EXP].exact;
    f.scale = ex ? ctx->cfg->scale : etk_f32(ctx->cfg->scale);
    f.sl2 = ex ? ctx->cfg->scale * ETK_LOG2E : etk_f32(etk_f32(ctx->cfg->scale) * ETK_LOG2E);
    /* Is_causal: the API turns causal off for one query token; a row whose keys stop short of the
     * last is what a causal mask leaves */
    for (long r = 0; r < R; r++)
        f.check_inf |= g->limit[r] < sk - 1;
    f.s = err_malloc((size_t)(R * ETK_BLOCK), sizeof(double));
    f.m = err_malloc((size_t)R, sizeof(double));
    f.l = err_calloc((size_t)(R * ETK_WARPS * ETK_ROWS), sizeof(double));
    double *lsum = err_malloc((size_t)R, sizeof(double));
    long parts = flashmla_parts(ctx, R);
    long alone = sk, nb = ctx->batch_n > 0 ? ctx->batch_n : 1, bi = ctx->batch_n > 0 ? ctx->batch_i : 0;
    const long *seqlens = ctx->batch_n > 0 ? ctx->batch_seqlens : &alone;
    long nblocks = (sk + ETK_BLOCK - 1) / ETK_BLOCK;
    long *begin = err_malloc((size_t)(parts + 1), sizeof(long));
    long first, total;
    long nsplit = flashmla_splits(begin, &first, &total, seqlens, nb, bi, parts, 0);
    if (ctx->extra && bi == 0)
        flashmla_dump_schedule(ctx, seqlens, nb, parts, 0);
    if (nsplit <= 1) { /* NoSplit: the split kernel writes O and lse itself */
        f.o = o;
        etk_range(&f, 0, nblocks, lsum);
        for (long i = 0; i < R * dv; i++)
            o[i] = attn_round(ctx, OUT_CAST, o[i]);
        for (long r = 0; r < R && ctx->lse; r++)
            ctx->lse[r] = etk_lse(&f, r, lsum[r], INFINITY);
    } else {
        double *oacc = err_malloc((size_t)(nsplit * R * dv), sizeof(double));
        double *lse = err_malloc((size_t)(nsplit * R), sizeof(double));
        for (long i = 0; i < nsplit; i++) {
            f.o = oacc + i * R * dv;
            etk_range(&f, begin[i], begin[i + 1], lsum);
            for (long r = 0; r < R; r++)
                lse[r * nsplit + i] = etk_lse(&f, r, lsum[r], -INFINITY);
        }
        /* the combine kernel's template bound on the splits (MLA_NUM_SPLITS_SWITCH) */
        long max_splits = (parts + 31) / 32 * 32;
        double *ocomb = err_malloc((size_t)dv, sizeof(double));
        for (long r = 0; r < R; r++) {
            double gl = flashmla_combine_ln(ctx, L_SUM, O_RESCALE, ocomb, oacc + r * dv, R * dv, lse + r * nsplit, nsplit, dv, max_splits);
            if (ctx->lse)
                ctx->lse[r] = gl;
            for (long c = 0; c < dv; c++)
                o[r * dv + c] = attn_round(ctx, OUT_CAST, ocomb[c]);
        }
        free(ocomb);
        free(oacc);
        free(lse);
    }
    (void)first;
    (void)total;
    free(begin);
    free(lsum);
    free(f.s);
    free(f.m);
    free(f.l);
}
