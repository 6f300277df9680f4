/* fa3 -- FlashAttention-3's BF16/FP16 forward kernel as it runs on an H100 (Dao-AILab/flash-attention 0251105a,
 * hopper/: mainloop_fwd_sm90_tma_gmma_ws.hpp, softmax.h, block.h, tile_size.h, heuristics.h,
 * flash_prepare_scheduler.cu, flash_fwd_combine_kernel.h; the arithmetic read off the H100 SASS of its build with
 * --use_fast_math; docs/REFERENCES.md, FlashAttention-3). Per row, key blocks of kBlockN (tile_size_fwd_sm90:
 * 176 for head dim 128, 128 causal or paged without TMA; 192 / 128 for 64; 80 for 256; 64 for the q_v pair 64 +
 * 512) in reverse order; S = Q K^T by WGMMA from zero over the head dim (the q_v path: Q_rope K_rope^T, then
 * Q_nope C_kv^T into the same accumulator); m = max(m, max s) (FMNMX); scale = ex2(fl(fl(m_old - m) scale_log2)),
 * O and each thread's sum times it; p = ex2(FFMA(s, scale_log2, -fl(m scale_log2))); each of a row's four
 * threads sums its columns 8j + 2t, 8j + 2t + 1 in turn, the rescale contracted with the first add (FFMA); P cast
 * to the input format; O += P V by WGMMA into O. At the end the quad's butterfly L = (l0 + l2) + (l1 + l3),
 * O fl(O rcp(L)), lse = FFMA(m, fl(scale_log2 fl(ln 2)), fl(lg2(L) fl(ln 2))). FP32 with subnormals flushed, ex2 /
 * lg2 / rcp the SFU's. Split KV (num_splits, or heuristics.h's choice; per entry in a varlen call, as
 * flash_prepare_scheduler.cu shares them out): each split's O and lse, then the combine kernel. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/kernel.h"
#include "attn/variants/fa3.h"
#include "attn/variants/flashmla.h"
#include "attn/variants/gpu_fp.h"
#include "attn/variants/variants.h"

#define FA3_QUAD 4
#define FA3_LOG2E 0x1.71547652b82fep0 /* M_LOG2E */
#define FA3_LN2F 0x1.62e43p-1          /* float(M_LN2) */
#define FA3_LOG2EF 0x1.715476p0        /* the combine's expf: x fl(log2 e), then ex2 */
#define FA3_MLA_DV 512                 /* the q_v pair: V (c_kv) 512 wide, Q_rope and K_rope the rest */

#define FA3_SITES(X)                                                                                              \
    X(QK_ACC, "qk_acc", "S = Q K^T, WGMMA from zero over the head dim (q_v: rope dims, then the 512) (tc-hopper)",  \
      SITE_ACC_HOPPER, FMT_FP32, FMT_RNE, 0)                                                                      \
    X(P_EXP, "p_exp", "p = ex2.approx(FFMA(s, scale_log2, -fl(m scale_log2))) (FTZ)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0) \
    X(L_SUM, "l_sum", "each thread's row sum of its columns (first add an FFMA with the rescale); the quad's butterfly", \
      SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                                                                       \
    X(P_CAST, "p_cast", "P cast to the input format for P.V", SITE_FMT_IN, FMT_FP32, FMT_RNE, 0)                   \
    X(PV_ACC, "pv_acc", "O += P V, WGMMA accumulating into O (tc-hopper)", SITE_ACC_HOPPER, FMT_FP32, FMT_RNE, 0)    \
    X(O_RESCALE, "o_rescale", "scale = ex2(fl(fl(m_old - m) scale_log2)); O and sums times it; the combine's weights", \
      SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                                                                       \
    X(O_DIV, "o_div", "O fl(O rcp(L)); lse = FFMA(m, fl(scale_log2 ln 2), fl(lg2(L) ln 2))", SITE_FMT_FIXED,         \
      FMT_FP32, FMT_RNE, 0)                                                                                       \
    X(OUT_CAST, "out_cast", "output cast", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)                                   \
    X(QK_ACC8, "qk_acc8", "FP8: S = Q K^T on the e4m3 codes, FP8 WGMMA (tc-hopper-fp8-fast)", SITE_ACC_HOPPER_FP8,    \
      FMT_FP32, FMT_RNE, 0)                                                                                       \
    X(P_CAST8, "p_cast8", "FP8: P (in [0, 256]: the max less 8) cast to e4m3, satfinite", SITE_FMT_FIXED, FMT_E4M3,   \
      FMT_RNE, 1)                                                                                                 \
    X(PV_ACC8, "pv_acc8", "FP8: O += P V on the e4m3 codes, FP8 WGMMA (tc-hopper-fp8-fast)", SITE_ACC_HOPPER_FP8,     \
      FMT_FP32, FMT_RNE, 0)

enum { FA3_SITES(SITE_ENUM) };

const site_def_t attn_fa3_sites[] = {FA3_SITES(SITE_ROW) SITE_END};

static long fa3_round_hdim(long d)
{
    return d <= 64 ? 64 : d <= 96 ? 96 : d <= 128 ? 128 : d <= 192 ? 192 : 256;
}

void attn_fa3_tile_mn(long d, long dv, int causal, int paged_non_tma, int fp8, long *bm, long *bn)
{
    d = fa3_round_hdim(d);
    dv = dv > 256 ? 512 : fa3_round_hdim(dv);
    if (fp8) { /* one-byte inputs */
        *bm = d <= 96 ? 192 : 128;
        *bn = d <= 64 ? 160 : d <= 96 ? 128 : d <= 128 ? (paged_non_tma ? 160 : 224) : d <= 192 ? 160 : 128;
        return;
    }
    if (d <= 64) {
        if (dv == 512)
            *bm = 64, *bn = 64;
        else if (dv == 256)
            *bm = 128, *bn = 96;
        else
            *bm = 192, *bn = causal || paged_non_tma ? 128 : 192;
    } else if (d <= 96) {
        *bm = 192, *bn = paged_non_tma ? 128 : 144;
    } else if (d <= 128) {
        *bm = 128, *bn = causal || paged_non_tma ? 128 : 176;
    } else if (d <= 192) {
        *bm = 128, *bn = paged_non_tma ? 96 : dv <= 128 ? 128 : 112;
    } else {
        *bm = 128, *bn = 80;
    }
}

long attn_fa3_tile(long dk)
{
    long bm, bn;
    attn_fa3_tile_mn(dk, dk, 0, 0, 0, &bm, &bn);
    return bn;
}

long attn_fa3_splits_heuristic(long total_mblocks, long num_sms, long num_n_blocks, long num_m_blocks,
                               long size_one_kv_head, int causal, long max_splits)
{
    if ((float)total_mblocks >= 0.8f * (float)num_sms) {
        const long size_l2 = 50L * 1024 * 1024;
        if (size_one_kv_head > size_l2 && num_m_blocks >= num_sms * 2 && !causal) {
            long n = (size_one_kv_head + size_l2 - 1) / size_l2;
            return n < max_splits ? n : max_splits;
        }
        return 1;
    }
    if (num_n_blocks <= 4)
        return 1;
    max_splits = max_splits < num_sms ? max_splits : num_sms;
    max_splits = max_splits < num_n_blocks ? max_splits : num_n_blocks;
    float best = 0, eff[1024];
    for (long n = 1; n <= max_splits && n <= 1024; n++) {
        float waves = (float)(total_mblocks * n) / (float)num_sms;
        eff[n - 1] = waves / ceilf(waves);
        best = eff[n - 1] > best ? eff[n - 1] : best;
    }
    for (long n = 1; n <= max_splits && n <= 1024; n++)
        if (eff[n - 1] >= 0.85 * best)
            return n;
    return 1;
}

typedef struct {
    const attn_group_t *g;
    attn_ctx_t *ctx;
    long bn;
    long drope;     /* the q_v path: Q_rope / K_rope dims (the last drope of dk); 0: one QK product */
    double sl2;     /* softmax_scale_log2: fl32(fl32(scale) M_LOG2E) (FP8: times fl(q_descale k_descale)) */
    double *s, *pb; /* scores / P [R][bn] */
    int fp8;        /* e4m3 inputs: the codes (q, k, v below), P in e4m3, v_descale at the end */
    int offset8;    /* FA3's FP8 path: the max less 8 (p in [0, 256]) */
    const double *q, *k, *v;
    double vs;      /* v_descale */
} fa3_t;

/* Blocks [b0, b1) of bn keys, in reverse order, for every row: O [R][dv] unnormalized, the running maximum m and
 * the quad-reduced sum L per row. */
static void fa3_range(fa3_t *f, long b0, long b1, double *o, double *m, double *L)
{
    const attn_group_t *g = f->g;
    attn_ctx_t *ctx = f->ctx;
    long R = g->R, sk = g->sk, dk = g->dk, dv = g->dv, bn = f->bn, dn = dk - f->drope;
    double *l = err_calloc((size_t)(R * FA3_QUAD), sizeof(double)), *scale = err_malloc((size_t)R, sizeof(double));
    for (long r = 0; r < R; r++)
        m[r] = -INFINITY;
    memset(o, 0, sizeof(double) * (size_t)(R * dv));
    for (long b = b1 - 1; b >= b0; b--) {
        long j0 = b * bn, nb = sk - j0 < bn ? sk - j0 : bn;
        int first = b == b1 - 1;
        memset(f->s, 0, sizeof(double) * (size_t)(R * bn));
        if (f->drope) { /* q_v: Q_rope K_rope^T from zero, then Q_nope C_kv^T into the same accumulator */
            gpu_gemm(ctx, QK_ACC, 0, f->s, bn, f->q + dn, dk, f->k + j0 * dk + dn, dk, 1, R, nb, f->drope);
            gpu_gemm(ctx, QK_ACC, 1, f->s, bn, f->q, dk, f->k + j0 * dk, dk, 1, R, nb, dn);
        } else {
            gpu_gemm(ctx, f->fp8 ? QK_ACC8 : QK_ACC, 0, f->s, bn, f->q, dk, f->k + j0 * dk, dk, 1, R, nb, dk);
        }
        for (long r = 0; r < R; r++) {
            double *sr = f->s + r * bn, *lr = l + r * FA3_QUAD;
            for (long c = 0; c < bn; c++)
                if (c >= nb || j0 + c > g->limit[r])
                    sr[c] = -INFINITY;
            double mb = attn_row_max(sr, bn, -INFINITY);
            double mnew = m[r] > mb ? m[r] : mb;
            if (!first) { /* Check_inf: a row masked so far rescales by ex2(-inf) = 0 */
                double cur = mnew == -INFINITY ? 0 : mnew;
                scale[r] = gpu_ex2(ctx, O_RESCALE, gpu_f32(ctx, O_RESCALE, gpu_f32(ctx, O_RESCALE, m[r] - cur) * f->sl2));
                gpu_f32_scale(ctx, O_RESCALE, o + r * dv, dv, scale[r]);
            }
            m[r] = mnew;
            /* FP8: max_scaled = FFMA(m, scale_log2, -8), so that p lies in [0, 256] */
            double ms = mnew == -INFINITY ? 0 : f->offset8 ? gpu_fma(ctx, P_EXP, mnew, f->sl2, -8) : gpu_f32(ctx, P_EXP, mnew * f->sl2);
            gpu_ex2_fma_n(ctx, P_EXP, sr, bn, f->sl2, -ms);
            for (int t = 0; t < FA3_QUAD; t++)
                for (long j = 0; j < bn / 8; j++)
                    for (int e = 0; e < 2; e++) {
                        double p = sr[8 * j + 2 * t + e];
                        lr[t] = j == 0 && e == 0 ? (first ? p : gpu_fma(ctx, L_SUM, lr[t], scale[r], p))
                                                 : gpu_f32(ctx, L_SUM, lr[t] + p);
                    }
            memcpy(f->pb + r * bn, sr, sizeof(double) * (size_t)bn);
            attn_round_n(ctx, f->fp8 ? P_CAST8 : P_CAST, f->pb + r * bn, bn);
        }
        gpu_gemm(ctx, f->fp8 ? PV_ACC8 : PV_ACC, 1, o, dv, f->pb, bn, f->v + j0 * dv, dv, 0, R, dv, nb);
    }
    for (long r = 0; r < R; r++) { /* Allreduce<4>: offsets 2, then 1 */
        const double *lr = l + r * FA3_QUAD;
        L[r] = gpu_f32(ctx, L_SUM, gpu_f32(ctx, L_SUM, lr[0] + lr[2]) + gpu_f32(ctx, L_SUM, lr[1] + lr[3]));
    }
    free(l);
    free(scale);
}

/* The codes of an FP8 case (the loader multiplied them by their scales: dividing is exact) as f's q, k, v, in
 * codes[3] (freed by the caller); f->vs the V scale. */
static void fa3_codes(fa3_t *f, double *codes[3])
{
    const attn_group_t *g = f->g;
    const double *src[3] = {g->q, g->k, g->v};
    long n[3] = {g->R * g->dk, g->sk * g->dk, g->sk * g->dv};
    for (int x = 0; x < 3; x++) {
        double sc = g->scale[x] > 0 ? g->scale[x] : 1;
        if (sc == 1) { /* no scale: the values are the codes */
            codes[x] = NULL;
            continue;
        }
        codes[x] = err_malloc((size_t)n[x], sizeof(double));
        for (long i = 0; i < n[x]; i++)
            codes[x][i] = src[x][i] / sc;
    }
    f->q = codes[0] ? codes[0] : g->q, f->k = codes[1] ? codes[1] : g->k, f->v = codes[2] ? codes[2] : g->v;
    f->vs = g->scale[2] > 0 ? g->scale[2] : 1;
}

/* Softmax::finalize and rescale_o: O fl(O rcp(L)) (0 where L is 0 or NaN) and the natural-log lse (-inf there). */
static double fa3_finalize(fa3_t *f, double *o, double m, double L)
{
    attn_ctx_t *ctx = f->ctx;
    long dv = f->g->dv;
    int bad = L == 0 || L != L;
    /* FP8: scores_scale = rcp(L) v_descale; the lse's sum is L / 256 (p carried 2^8) */
    double inv = bad ? 0 : gpu_rcp(ctx, O_DIV, L);
    if (f->fp8)
        inv = gpu_f32(ctx, O_DIV, inv * f->vs);
    for (long c = 0; c < dv; c++)
        o[c] = ctx->site[O_DIV].exact && !bad ? o[c] / L * (f->fp8 ? f->vs : 1) : gpu_f32(ctx, O_DIV, o[c] * inv);
    if (f->fp8)
        L = gpu_f32(ctx, O_DIV, L * 0x1p-8);
    if (bad || L == 0)
        return -INFINITY;
    if (ctx->site[O_DIV].exact)
        return m * f->sl2 / FA3_LOG2E + log(L);
    double c = gpu_f32(ctx, O_DIV, f->sl2 * FA3_LN2F), lg = gpu_f32(ctx, O_DIV, gpu_lg2(ctx, O_DIV, L) * FA3_LN2F);
    return gpu_fma(ctx, O_DIV, m, c, lg);
}

/* flash_fwd_combine_kernel for one row: lse [nsplit] (natural log), O_i at oacc + i ldo. T lanes (256 threads over
 * kBlockM rows: 32 where dv is a multiple of 128, 16 for 64) each add ex2(fl(fl(lse_i - max) fl(log2 e))) of splits
 * lane, lane + T, ... from 0, then the butterfly; lse = FFMA(lg2(sum), fl(ln 2), max); O = sum_i FFMA(fl(e_i
 * rcp(sum)), O_i, O) in split order, a zero weight skipped. Returns the lse. */
static double fa3_combine(fa3_t *f, double *o, const double *oacc, long ldo, const double *lse, long nsplit)
{
    attn_ctx_t *ctx = f->ctx;
    long dv = f->g->dv, kblockk = dv <= 64 ? 64 : dv <= 128 ? 128 : dv <= 256 ? 256 : 512;
    int T = kblockk % 128 == 0 ? 32 : 16;
    double mx = -INFINITY, lane[32], *e = err_malloc((size_t)nsplit, sizeof(double));
    for (long i = 0; i < nsplit; i++)
        mx = lse[i] > mx ? lse[i] : mx;
    double cur = mx == -INFINITY ? 0 : mx;
    for (int j = 0; j < T; j++)
        lane[j] = 0;
    for (long i = 0; i < nsplit; i++) {
        e[i] = ctx->site[O_RESCALE].exact ? exp(lse[i] - cur)
                                          : gpu_ex2(ctx, O_RESCALE, gpu_f32(ctx, O_RESCALE, gpu_f32(ctx, O_RESCALE, lse[i] - cur) * FA3_LOG2EF));
        lane[i % T] = gpu_f32(ctx, L_SUM, lane[i % T] + e[i]);
    }
    double sum = gpu_butterfly_sum(ctx, L_SUM, lane, T, 1);
    double g = ctx->site[O_RESCALE].exact ? log(sum) + mx : gpu_fma(ctx, O_RESCALE, gpu_lg2(ctx, O_RESCALE, sum), FA3_LN2F, mx);
    double inv = sum == 0 || sum != sum ? 0 : gpu_rcp(ctx, O_RESCALE, sum);
    for (long c = 0; c < dv; c++)
        o[c] = 0;
    for (long i = 0; i < nsplit; i++) {
        double w = ctx->site[O_RESCALE].exact ? e[i] / sum : gpu_f32(ctx, O_RESCALE, e[i] * inv);
        if (w > 0)
            gpu_fma_acc_n(ctx, O_RESCALE, o, oacc + i * ldo, dv, w);
    }
    free(e);
    return g;
}

/* The split count: fa3:sm-parts=N, or get_num_splits (heuristics.h) over the batch, then, in a varlen call,
 * prepare_varlen_num_blocks's share for this entry. *varlen_split: whether the entry runs the split epilogue. */
static long fa3_nsplit(attn_ctx_t *ctx, long bm, long bn, long d, long dv, long sk, int *split_path)
{
    const attn_cfg_t *cfg = ctx->cfg;
    long batch = ctx->batch_n > 0 ? ctx->batch_n : 1, hq = ctx->shape ? ctx->shape->hq : 1;
    long hkv = ctx->shape ? ctx->shape->hkv : 1, sq = ctx->shape ? ctx->shape->sq : 1;
    long smax = sk, sms = cfg->sm_count > 0 ? cfg->sm_count : 132;
    for (long b = 0; b < ctx->batch_n; b++) /* the cache's length (k_cache.size(1)): taken as the longest entry */
        smax = ctx->batch_seqlens[b] > smax ? ctx->batch_seqlens[b] : smax;
    int varlen = cfg->fa3_varlen, causal = ctx->shape && ctx->shape->causal;
    if (cfg->page_size > 0) /* the cache's length: whole pages */
        smax = (smax + cfg->page_size - 1) / cfg->page_size * cfg->page_size;
    long nstatic = cfg->sm_parts;
    if (nstatic <= 0) {
        long n_blocks = (smax + bn - 1) / bn, m_blocks = (sq * (hq / hkv) + bm - 1) / bm;
        nstatic = attn_fa3_splits_heuristic((varlen ? 1 : batch) * hkv * m_blocks, sms, n_blocks, m_blocks,
                                            smax * (d + dv) * (cfg->in_format == FMT_E4M3 ? 1 : 2), causal, ATTN_FA3_MAX_SPLITS);
    }
    *split_path = nstatic > 1;
    if (!varlen || nstatic <= 1)
        return nstatic;
    /* prepare_varlen_num_blocks: blocks_per_sm = ceil(total blocks 1.1 heads / SMs), heads the KV heads (PackGQA,
     * always on for a split) */
    long total = 0, mine = 0;
    long mb = (sq * (hq / hkv) + bm - 1) / bm;
    for (long b = 0; b < batch; b++) {
        long sl = ctx->batch_n > 0 ? ctx->batch_seqlens[b] : sk, nb = (sl + bn - 1) / bn;
        total += mb * nb;
        if (b == (ctx->batch_n > 0 ? ctx->batch_i : 0))
            mine = nb;
    }
    long per_sm = (long)ceilf((float)total * 1.1f * (float)hkv / (float)sms);
    per_sm = per_sm > 0 ? per_sm : 1;
    long n = (mine + per_sm - 1) / per_sm;
    n = n < nstatic ? n : nstatic;
    n = n > 1 ? n : 1;
    *split_path = n > 1;
    return n;
}

/* A finished row: its lse where asked, O cast to the output format. */
static void fa3_store_row(attn_ctx_t *ctx, double *o, long dv, long r, double lse)
{
    if (ctx->lse)
        ctx->lse[r] = lse;
    for (long c = 0; c < dv; c++)
        o[c] = attn_round(ctx, OUT_CAST, o[c]);
}

/* The buffers both entry points hold: fa3_t's scores and P, the row state, the FP8 codes. */
static void fa3_free(fa3_t *f, double *m, double *L, double *codes[3])
{
    free(f->s);
    free(f->pb);
    free(m);
    free(L);
    for (int x = 0; x < 3; x++)
        free(codes[x]);
}

ATTN_VARIANT(attn_fa3)
{
    long R = g->R, sk = g->sk, dk = g->dk, dv = g->dv;
    const attn_cfg_t *cfg = ctx->cfg;
    fa3_t f = {g, ctx, 0, 0, 0, NULL, NULL, 0, 0, g->q, g->k, g->v, 1};
    /* the q_v pair (DeepSeek's decode through FA3): dk 576 over a 512-wide V read from the cache */
    f.drope = dv == FA3_MLA_DV && dk > dv && attn_v_is_k_prefix(g) ? dk - dv : 0;
    long d = f.drope ? f.drope : dk;
    volatile float sl2_32 = (float)((double)(float)cfg->scale * FA3_LOG2E);
    f.sl2 = ctx->site[P_EXP].exact ? cfg->scale * FA3_LOG2E : (double)sl2_32;
    /* FP8 (e4m3 codes): the product on the codes; softmax_scale_log2 *= q_descale k_descale; v_descale in finalize */
    double *codes[3] = {NULL, NULL, NULL};
    f.fp8 = f.offset8 = cfg->in_format == FMT_E4M3;
    if (f.fp8) {
        fa3_codes(&f, codes);
        double qs = g->scale[0] > 0 ? g->scale[0] : 1, ks = g->scale[1] > 0 ? g->scale[1] : 1;
        f.sl2 = ctx->site[P_EXP].exact ? f.sl2 * qs * ks : gpu_f32(ctx, P_EXP, f.sl2 * gpu_f32(ctx, P_EXP, qs * ks));
    }
    int causal = ctx->shape && ctx->shape->causal;
    long sq = ctx->shape ? ctx->shape->sq : R, G = ctx->shape ? ctx->shape->hq / ctx->shape->hkv : 1, bm;
    /* a paged cache is read without TMA unless its pages hold whole blocks and the packed rows pass a tile */
    long bn0;
    attn_fa3_tile_mn(d, dv, causal, 0, f.fp8, &bm, &bn0);
    int non_tma = cfg->page_size > 0 && (cfg->page_size % bn0 != 0 || sq * G <= bm);
    attn_fa3_tile_mn(d, dv, causal, non_tma, f.fp8, &bm, &f.bn);
    int split_path;
    long nsplit = fa3_nsplit(ctx, bm, f.bn, d, dv, sk, &split_path);
    long nblocks = (sk + f.bn - 1) / f.bn;
    f.s = err_malloc((size_t)(R * f.bn), sizeof(double));
    f.pb = err_malloc((size_t)(R * f.bn), sizeof(double));
    double *m = err_malloc((size_t)R, sizeof(double)), *L = err_malloc((size_t)R, sizeof(double));
    if (!split_path) {
        fa3_range(&f, 0, nblocks, o, m, L);
        for (long r = 0; r < R; r++)
            fa3_store_row(ctx, o + r * dv, dv, r, fa3_finalize(&f, o + r * dv, m[r], L[r]));
    } else {
        /* block.h: a split takes ceil(n_blocks / splits) blocks of its m-block's range; a causal m-block stops at its
         * last row's keys (rows packed token-major with their group's heads: h + G t under PackGQA), so rows of
         * different m-blocks split differently: each distinct range runs on its own rows */
        long *nbmax = err_malloc((size_t)R, sizeof(long));
        for (long r = 0; r < R; r++) {
            long t = r % sq, h = r / sq, mblk = (h + G * t) / bm, last = ((mblk + 1) * bm - 1) / G + 1;
            long lim = causal ? last + sk - sq : sk;
            lim = lim < sk ? lim : sk;
            nbmax[r] = causal ? (lim + f.bn - 1) / f.bn : nblocks;
        }
        double *oacc = err_malloc((size_t)(nsplit * R * dv), sizeof(double));
        double *lse = err_malloc((size_t)(nsplit * R), sizeof(double));
        for (long i = 0; i < nsplit * R; i++)
            lse[i] = -INFINITY;
        int one = 1; /* every row the same range (not causal, or one m-block): the splits write oacc in place */
        for (long r = 1; r < R; r++)
            one = one && nbmax[r] == nbmax[0];
        if (!one || nbmax[0] == 0) /* (in place, a split that runs writes its whole slice; an empty one is zeroed below) */
            memset(oacc, 0, sizeof(double) * (size_t)(nsplit * R * dv));
        double *tmp = one ? NULL : err_malloc((size_t)(R * dv), sizeof(double));
        for (long nbm = 0; nbm <= nblocks; nbm++) {
            long per = nbm > 0 ? (nbm + nsplit - 1) / nsplit : 0;
            int any = 0;
            for (long r = 0; r < R && !any; r++)
                any = nbmax[r] == nbm;
            if (!any || per == 0)
                continue;
            for (long i = 0; i < nsplit; i++) {
                long b0 = i * per, b1 = b0 + per < nbm ? b0 + per : nbm;
                if (b0 >= b1) {
                    if (one)
                        memset(oacc + i * R * dv, 0, sizeof(double) * (size_t)(R * dv));
                    continue;
                }
                double *oi = one ? oacc + i * R * dv : tmp;
                fa3_range(&f, b0, b1, oi, m, L);
                for (long r = 0; r < R; r++) {
                    if (nbmax[r] != nbm)
                        continue;
                    lse[r * nsplit + i] = fa3_finalize(&f, oi + r * dv, m[r], L[r]);
                    if (!one)
                        memcpy(oacc + (i * R + r) * dv, oi + r * dv, sizeof(double) * (size_t)dv);
                }
            }
        }
        free(tmp);
        for (long r = 0; r < R; r++)
            fa3_store_row(ctx, o + r * dv, dv, r, fa3_combine(&f, o + r * dv, oacc + r * dv, R * dv, lse + r * nsplit, nsplit));
        free(nbmax);
        free(oacc);
        free(lse);
    }
    fa3_free(&f, m, L, codes);
}

/* flashmla-dense-fp8: vLLM's FlashMLA fork (vllm-project/FlashMLA 46d64a8, csrc/extension/sm90/dense_fp8: the
 * FlashMLA kernel before 9c5dfab's rewrite, on e4m3 codes; docs/REFERENCES.md). 64-key blocks in reverse, S = Q K^T on
 * the codes over the 576 dims by FP8 WGMMA, the FlashAttention-2 softmax of fast math as fa3's (the max unscaled by an
 * offset: p in [0, 1]), P in e4m3, O += P V on the cache's codes (V = its first 512 dims); scale_softmax_log2 =
 * fl(fl(scale_log2 descale_q) descale_k); normalize_softmax_lse: O fl(O fl(descale_k rcp(L))), lse = FFMA(m,
 * fl(fl(scale descale_q) descale_k), fl(lg2(L) fl(ln 2))). Split KV by FlashMLA's scheduler (no payload floor) and
 * the natural-log combine (flashmla_combine_ln). Shares fa3's sites (the same rounding places). */
ATTN_VARIANT(attn_flashmla_dense_fp8)
{
    long R = g->R, sk = g->sk, dv = g->dv;
    const attn_cfg_t *cfg = ctx->cfg;
    fa3_t f = {g, ctx, ATTN_KERNEL_TILE, 0, 0, NULL, NULL, 1, 0, g->q, g->k, g->v, 1};
    double *codes[3] = {NULL, NULL, NULL};
    fa3_codes(&f, codes);
    double qs = g->scale[0] > 0 ? g->scale[0] : 1, ks = g->scale[1] > 0 ? g->scale[1] : 1;
    f.vs = ks; /* V is the cache's first 512 dims: K's scale */
    int ex = ctx->site[P_EXP].exact;
    volatile float sc32 = (float)cfg->scale, sl2_32 = (float)((double)sc32 * FA3_LOG2E);
    f.sl2 = ex ? cfg->scale * FA3_LOG2E * qs * ks : gpu_f32(ctx, P_EXP, gpu_f32(ctx, P_EXP, (double)sl2_32 * qs) * ks);
    double scale = ex ? cfg->scale * qs * ks : gpu_f32(ctx, P_EXP, gpu_f32(ctx, P_EXP, (double)sc32 * qs) * ks);
    f.s = err_malloc((size_t)(R * f.bn), sizeof(double));
    f.pb = err_malloc((size_t)(R * f.bn), sizeof(double));
    double *m = err_malloc((size_t)R, sizeof(double)), *L = err_malloc((size_t)R, sizeof(double));
    long parts = flashmla_parts(ctx, R), alone = sk, nb = ctx->batch_n > 0 ? ctx->batch_n : 1;
    long bi = ctx->batch_n > 0 ? ctx->batch_i : 0, first, total;
    const long *seqlens = ctx->batch_n > 0 ? ctx->batch_seqlens : &alone;
    long *begin = err_malloc((size_t)(parts + 1), sizeof(long));
    long nsplit = flashmla_splits(begin, &first, &total, seqlens, nb, bi, parts, 0);
    double *oacc = err_malloc((size_t)((nsplit > 1 ? nsplit : 1) * R * dv), sizeof(double));
    double *lse = err_malloc((size_t)((nsplit > 1 ? nsplit : 1) * R), sizeof(double));
    for (long i = 0; i < (nsplit > 1 ? nsplit : 1); i++) {
        double *oi = nsplit > 1 ? oacc + i * R * dv : o;
        fa3_range(&f, nsplit > 1 ? begin[i] : 0, nsplit > 1 ? begin[i + 1] : (sk + f.bn - 1) / f.bn, oi, m, L);
        for (long r = 0; r < R; r++) { /* normalize_softmax_lse (L 0: O as it is, lse +inf, -inf for a split) */
            int bad = L[r] == 0 || L[r] != L[r];
            double inv = bad ? 1 : ex ? f.vs / L[r] : gpu_f32(ctx, O_DIV, f.vs * gpu_rcp(ctx, O_DIV, L[r]));
            for (long c = 0; c < dv; c++)
                oi[r * dv + c] = gpu_f32(ctx, O_DIV, oi[r * dv + c] * inv);
            lse[r * (nsplit > 1 ? nsplit : 1) + i] =
                bad ? (nsplit > 1 ? -INFINITY : INFINITY)
                : ex ? m[r] * scale + log(L[r])
                     : gpu_fma(ctx, O_DIV, m[r], scale, gpu_f32(ctx, O_DIV, gpu_lg2(ctx, O_DIV, L[r]) * FA3_LN2F));
        }
    }
    for (long r = 0; r < R; r++)
        fa3_store_row(ctx, o + r * dv, dv, r,
                      nsplit > 1 ? flashmla_combine_ln(ctx, L_SUM, O_RESCALE, o + r * dv, oacc + r * dv, R * dv,
                                                       lse + r * nsplit, nsplit, dv, (parts + 31) / 32 * 32)
                                 : lse[r]);
    free(begin);
    free(oacc);
    free(lse);
    fa3_free(&f, m, L, codes);
}
