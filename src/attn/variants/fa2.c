/* fa2 -- FlashAttention-2's forward kernel as PyTorch's SDPA flash backend runs it on an H100
 * (Dao-AILab/flash-attention csrc/flash_attn/src/flash_fwd_kernel.h, softmax.h,
 * flash_fwd_launch_template.h and flash_api.cpp, as vendored by PyTorch; the arithmetic read off
 * the H100 SASS of PyTorch 2.11's build, which does not use --use_fast_math; docs/REFERENCES.md,
 * FlashAttention-2). flash_api picks a split count for the batch (attn_fa2_splits); one split
 * runs flash_fwd_kernel, more run flash_fwd_splitkv_kernel per split and the combine kernel.
 * Per row, the KV blocks of kBlockN keys in reverse order; S = Q K^T by mma.sync m16n8k16 from
 * zero over the head dim in 16-wide steps; on the first block m = max s, later ones m = max(m,
 * max s), scale = exp2f(fl32(fl32(m_old - m) scale_log2)), O and each thread's row sum times
 * scale; p = exp2f(fl32(fl32(s scale_log2) - fl32(m scale_log2))), each of the quad's four
 * threads summing its columns (8j + 2t, 8j + 2t + 1 for j in order) into its own partial; P cast
 * to the input format; O += P V by mma.sync accumulating into O; at the end the quad's
 * butterfly L = (l0 + l2) + (l1 + l3), O fl32(O fl32(1 / L)), lse = fma(m, scale, __logf(L)).
 * IEEE binary32 throughout (subnormals kept), CUDA's exp2f / expf / logf (num/sfu.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/variants/fa2.h"
#include "attn/variants/gpu_fp.h"
#include "attn/variants/variants.h"

#define FA2_QUAD 4                     /* threads sharing a row of the m16n8 accumulator */
#define FA2_LOG2E 0x1.71547652b82fep0  /* M_LOG2E */

#define FA2_SITES(X)                                                                                              \
    X(QK_ACC, "qk_acc", "S = Q K^T, mma.sync m16n8k16 from zero over the head dim (tc-hopper)", SITE_ACC_HOPPER,    \
      FMT_FP32, FMT_RNE, 0)                                                                                       \
    X(P_EXP, "p_exp", "p = exp2f(fl32(s scale_log2) - fl32(m scale_log2)) (CUDA's exp2f)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(L_SUM, "l_sum", "each thread's fp32 row sum of its columns, rescaled; the quad's butterfly at the end",      \
      SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                                                                       \
    X(P_CAST, "p_cast", "P cast to the input format for P.V", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0)                   \
    X(PV_ACC, "pv_acc", "O += P V, mma.sync accumulating into O (tc-hopper)", SITE_ACC_HOPPER, FMT_FP32, FMT_RNE, 0) \
    X(O_RESCALE, "o_rescale", "scale = exp2f(fl32(fl32(m_old - m) scale_log2)); O and sums times scale; the combine's expf",  \
      SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                                                                       \
    X(O_DIV, "o_div", "O fl32(O fl32(1 / L)); lse = fma(m, scale, __logf(L))", SITE_FMT_FIXED,          \
      FMT_FP32, FMT_RNE, 0)                                                                                       \
    X(OUT_CAST, "out_cast", "output cast", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)

enum { FA2_SITES(SITE_ENUM) };

const site_def_t attn_fa2_sites[] = {FA2_SITES(SITE_ROW) SITE_END};

/* The split count PyTorch's flash_api (set_params_splitkv, num_splits_heuristic) chooses: 1 when
 * the batch's (entry, head, 64-row block) programs nearly fill the SMs (two per SM), else the
 * fewest splits of the key blocks (kBlockN 256 / 128 / 64 by head dim) whose wave efficiency
 * is within 85% of the best, skipping counts that give the same blocks per split. */
long attn_fa2_splits(long programs, long sm_count, long n_blocks)
{
    long sms = 2 * sm_count, max_splits = n_blocks < sms ? n_blocks : sms;
    if ((double)programs >= 0.8 * (double)sms)
        return 1;
    max_splits = max_splits < 128 ? max_splits : 128;
    double best = 0, eff[129];
    for (long n = 1; n <= max_splits; n++) {
        int eligible = n == 1 || (n_blocks + n - 1) / n != (n_blocks + n - 2) / (n - 1);
        float waves = (float)(programs * n) / (float)sms;
        eff[n] = eligible ? waves / ceilf(waves) : -1;
        best = eff[n] > best ? eff[n] : best;
    }
    for (long n = 1; n <= max_splits; n++)
        if (eff[n] >= 0 && eff[n] >= 0.85 * best)
            return n;
    return 1;
}

typedef struct {
    const attn_group_t *g;
    attn_ctx_t *ctx;
    long bn;           /* kBlockN */
    double scale, sl2; /* fl32(softmax scale), scale_softmax_log2 */
    double *s, *pb;    /* scores / P [R][bn] */
} fa2_t;

/* Blocks [b0, b1) of bn keys, in reverse order, for every row: O [R][dv] unnormalized (fp32), the
 * running maximum m and the quad-reduced sum L per row. */
static void fa2_range(fa2_t *f, long b0, long b1, double *o, double *m, double *L)
{
    const attn_group_t *g = f->g;
    attn_ctx_t *ctx = f->ctx;
    long R = g->R, sk = g->sk, dk = g->dk, dv = g->dv, bn = f->bn;
    double *l = err_calloc((size_t)(R * FA2_QUAD), sizeof(double)), *scale = err_malloc((size_t)R, sizeof(double));
    for (long r = 0; r < R; r++)
        m[r] = -INFINITY;
    memset(o, 0, sizeof(double) * (size_t)(R * dv));
    for (long b = b1 - 1; b >= b0; b--) {
        long j0 = b * bn, nb = sk - j0 < bn ? sk - j0 : bn;
        memset(f->s, 0, sizeof(double) * (size_t)(R * bn));
        gpu_gemm(ctx, QK_ACC, 0, f->s, bn, g->q, dk, g->k + j0 * dk, dk, 1, R, nb, dk);
        int first = b == b1 - 1;
        for (long r = 0; r < R; r++) {
            double *sr = f->s + r * bn, *lr = l + r * FA2_QUAD;
            for (long c = 0; c < bn; c++)
                if (c >= nb || j0 + c > g->limit[r])
                    sr[c] = -INFINITY;
            double mb = attn_row_max(sr, bn, -INFINITY);
            double mnew = m[r] > mb ? m[r] : mb;
            if (!first) { /* a row masked so far rescales by 0: its O and sums stay 0 */
                double cur = mnew == -INFINITY ? 0 : mnew;
                double a = gpu_exp2f(ctx, O_RESCALE, gpu_r32(ctx, O_RESCALE, gpu_r32(ctx, O_RESCALE, m[r] - cur) * f->sl2));
                scale[r] = a;
                gpu_r32_scale(ctx, O_RESCALE, o + r * dv, dv, a);
            }
            m[r] = mnew;
            double ms = mnew == -INFINITY ? 0 : gpu_r32(ctx, P_EXP, mnew * f->sl2);
            gpu_r32_scale_sub(ctx, P_EXP, sr, bn, f->sl2, ms);
            gpu_exp2f_n(ctx, P_EXP, sr, bn);
            /* thread t holds columns 8j + 2t and 8j + 2t + 1 and adds them one at a time; the
             * rescale of its sum is contracted with the first add: fma(l, scale, p) */
            for (int t = 0; t < FA2_QUAD; t++)
                for (long j = 0; j < bn / 8; j++)
                    for (int e = 0; e < 2; e++)
                        lr[t] = !first && j == 0 && e == 0 ? gpu_fmaf(ctx, L_SUM, lr[t], scale[r], sr[2 * t])
                                                           : gpu_r32(ctx, L_SUM, lr[t] + sr[8 * j + 2 * t + e]);
            memcpy(f->pb + r * bn, sr, sizeof(double) * (size_t)bn);
            attn_round_n(ctx, P_CAST, f->pb + r * bn, bn);
        }
        gpu_gemm(ctx, PV_ACC, 1, o, dv, f->pb, bn, g->v + j0 * dv, dv, 0, R, dv, nb);
    }
    /* Allreduce<4>: x + shfl_xor(x, 2), then + shfl_xor(x, 1) */
    for (long r = 0; r < R; r++) {
        const double *lr = l + r * FA2_QUAD;
        L[r] = gpu_r32(ctx, L_SUM, gpu_r32(ctx, L_SUM, lr[0] + lr[2]) + gpu_r32(ctx, L_SUM, lr[1] + lr[3]));
    }
    free(l);
    free(scale);
}

/* normalize_softmax_lse: O fl32(O fl32(1 / L)) (L 0 or NaN: O as it is) and the row's lse, natural
 * log fma(m, scale, __logf(L)); bad_lse where L is 0 or NaN (+inf for the kernel, -inf for a split). */
static double fa2_normalize(fa2_t *f, double *o, double m, double L, double bad_lse)
{
    attn_ctx_t *ctx = f->ctx;
    long dv = f->g->dv;
    int bad = L == 0 || L != L;
    double inv = bad ? 1 : gpu_div1(ctx, O_DIV, L);
    for (long c = 0; c < dv; c++)
        o[c] = ctx->site[O_DIV].exact && !bad ? o[c] / L : gpu_r32(ctx, O_DIV, o[c] * inv);
    return bad ? bad_lse : gpu_fmaf(ctx, O_DIV, m, f->scale, gpu_fast_logf(ctx, O_DIV, L));
}

/* combine_attn_seqk_parallel for one row: lse [nsplit] natural log, oacc [nsplit] rows of dv.
 * The splits are padded to max_splits = 2^ceil(log2 nsplit) with -inf; thread j of a group of T
 * = min(128 / kBlockM, max_splits) adds expf(lse - max) of splits l T + j in turn, then the
 * group's butterfly; g = fl32(logf(sum) + max); O = sum_s fma(expf(lse_s - g), O_s, O) in split
 * order. Returns g (+inf when the sum is 0). */
static double fa2_combine(fa2_t *f, double *o, const double *oacc, long ldo, const double *lse, long nsplit)
{
    attn_ctx_t *ctx = f->ctx;
    long dv = f->g->dv, max_splits = 2, bm = dv % 128 == 0 ? 4 : dv % 64 == 0 ? 8 : 16;
    while (max_splits < nsplit)
        max_splits *= 2;
    long T = 128 / bm < max_splits ? 128 / bm : max_splits;
    double mx = -INFINITY;
    for (long i = 0; i < nsplit; i++)
        mx = lse[i] > mx ? lse[i] : mx;
    mx = mx == -INFINITY ? 0 : mx;
    double lane[128];
    for (long j = 0; j < T; j++) {
        lane[j] = 0;
        for (long i = j, first = 1; i < max_splits; i += T, first = 0) {
            double e = i < nsplit ? gpu_expf(ctx, O_RESCALE, gpu_r32(ctx, O_RESCALE, lse[i] - mx)) : 0;
            lane[j] = first ? e : gpu_r32(ctx, L_SUM, lane[j] + e);
        }
    }
    double sum = gpu_butterfly_sum(ctx, L_SUM, lane, (int)T, 0);
    double g = sum == 0 || sum != sum ? INFINITY
               : gpu_r32(ctx, O_RESCALE, gpu_logf(ctx, O_RESCALE, sum) + mx);
    for (long c = 0; c < dv; c++)
        o[c] = 0;
    for (long i = 0; i < nsplit; i++) {
        double w = gpu_expf(ctx, O_RESCALE, gpu_r32(ctx, O_RESCALE, lse[i] - g));
        for (long c = 0; c < dv; c++)
            o[c] = gpu_fmaf(ctx, O_RESCALE, w, oacc[i * ldo + c], o[c]);
    }
    return g;
}

long attn_fa2_tile(long dk)
{
    return dk <= 64 ? 128 : 64;
}

ATTN_VARIANT(attn_fa2)
{
    long R = g->R, sk = g->sk, dk = g->dk, dv = g->dv;
    fa2_t f = {g, ctx, 0, 0, 0, NULL, NULL};
    /* the host's scale_softmax_log2: the fp32 scale times M_LOG2E in double, stored as fp32 */
    f.scale = ctx->site[P_EXP].exact ? ctx->cfg->scale : (double)(float)ctx->cfg->scale;
    /* volatile: GCC 12 at -O2 was seen keeping this product in double here, dropping the cast */
    volatile float sl2_32 = (float)(f.scale * FA2_LOG2E);
    f.sl2 = ctx->site[P_EXP].exact ? f.scale * FA2_LOG2E : (double)sl2_32;
    /* the splits: fa2:sm-parts=N, or flash_api's heuristic over the batch's programs (entries x
     * query heads x 64-row blocks) on the split kernel's key blocks of the longest entry */
    long split_bn = dk <= 64 ? 256 : dk <= 128 ? 128 : 64, nsplit = ctx->cfg->sm_parts;
    if (nsplit <= 0) {
        long batch = ctx->batch_n > 0 ? ctx->batch_n : 1, smax = sk, hq = ctx->shape ? ctx->shape->hq : 1;
        long sq = ctx->shape ? ctx->shape->sq : R;
        for (long b = 0; b < batch && ctx->batch_n > 0; b++)
            smax = ctx->batch_seqlens[b] > smax ? ctx->batch_seqlens[b] : smax;
        nsplit = attn_fa2_splits(batch * hq * ((sq + 63) / 64), ctx->cfg->sm_count > 0 ? ctx->cfg->sm_count : 132,
                                 (smax + split_bn - 1) / split_bn);
    }
    f.bn = nsplit > 1 ? split_bn : attn_fa2_tile(dk);
    long nblocks = (sk + f.bn - 1) / f.bn;
    f.s = err_malloc((size_t)(R * f.bn), sizeof(double));
    f.pb = err_malloc((size_t)(R * f.bn), sizeof(double));
    double *m = err_malloc((size_t)R, sizeof(double)), *L = err_malloc((size_t)R, sizeof(double));
    if (nsplit <= 1) { /* flash_fwd_kernel: every block, then normalize_softmax_lse */
        fa2_range(&f, 0, nblocks, o, m, L);
        for (long r = 0; r < R; r++) {
            double lse = fa2_normalize(&f, o + r * dv, m[r], L[r], INFINITY);
            if (ctx->lse)
                ctx->lse[r] = lse;
            for (long c = 0; c < dv; c++)
                o[r * dv + c] = attn_round(ctx, OUT_CAST, o[r * dv + c]);
        }
    } else { /* flash_fwd_splitkv_kernel per split (its blocks_per_split), then the combine */
        long per = (nblocks + nsplit - 1) / nsplit;
        double *oacc = err_malloc((size_t)(nsplit * R * dv), sizeof(double));
        double *lse = err_malloc((size_t)(nsplit * R), sizeof(double));
        for (long i = 0; i < nsplit; i++) {
            long b0 = i * per, b1 = (i + 1) * per < nblocks ? (i + 1) * per : nblocks;
            double *oi = oacc + i * R * dv;
            if (b0 >= b1) { /* an empty split writes O = 0 and lse = -inf */
                memset(oi, 0, sizeof(double) * (size_t)(R * dv));
                for (long r = 0; r < R; r++)
                    lse[r * nsplit + i] = -INFINITY;
                continue;
            }
            fa2_range(&f, b0, b1, oi, m, L);
            for (long r = 0; r < R; r++)
                lse[r * nsplit + i] = fa2_normalize(&f, oi + r * dv, m[r], L[r], -INFINITY);
        }
        for (long r = 0; r < R; r++) {
            double gl = fa2_combine(&f, o + r * dv, oacc + r * dv, R * dv, lse + r * nsplit, nsplit);
            if (ctx->lse)
                ctx->lse[r] = gl;
            for (long c = 0; c < dv; c++)
                o[r * dv + c] = attn_round(ctx, OUT_CAST, o[r * dv + c]);
        }
        free(oacc);
        free(lse);
    }
    free(f.s);
    free(f.pb);
    free(m);
    free(L);
}
