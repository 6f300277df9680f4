/* sdpa-math -- PyTorch's SDPA math backend on CUDA (at::_scaled_dot_product_attention_math with
 * allow_fp16_bf16_reduction_math_sdp off, the default; TF32 off, the default; docs/REFERENCES.md,
 * "PyTorch SDPA math"). The fp16/bf16 Q, K, V are upcast to fp32 (exact); the scale goes in as
 * its square root on both sides, sf = fl32(sqrt(scale)) with the square root taken in double:
 * Q' = fl32(Q sf), K' = fl32(K sf) (negative scale: Q times -sf); S = Q' K'^T by cuBLAS's FFMA
 * SGEMM (sm80_xmma_gemm_f32f32: one fp32 fma chain over the head dim from zero); the causal mask
 * added as 0 / -inf; softmax by PyTorch's CUDA kernel in fp32 (softmax_warp_forward for rows up
 * to 2048 keys, cunn_SoftMaxForwardReg for longer rows up to 9216: max, expf(fl32(s - max)) by
 * CUDA's expf, per-thread sums in order, the warp's / block's reduction tree, p = e / sum by
 * IEEE division); a row with every key masked gives P = 0 (_safe_softmax); O = P V by the same
 * SGEMM over the keys, or as cuBLAS splits it (--split-k: cuBLAS chooses by shape, and was seen splitting
 * single-head rows of 300 keys and more 5 and 8 ways, round-robin over 8-wide K tiles in its xmma SIMT
 * kernels, contiguous in its CUTLASS SIMT one; check searches the count); O cast to the input format. Rows
 * beyond 9216 keys run cunn_SoftMaxForwardSmem / cunn_SoftMaxForward, whose vectorized per-thread order is
 * not modelled (the Reg kernel's order is used). No log-sum-exp: the backend returns none. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/variants/gpu_fp.h"
#include "num/acc/acc_split.h"
#include "attn/variants/variants.h"

#define SDPA_MATH_SITES(X)                                                                                          \
    X(QK_SCALE, "qk_scale", "Q and K each times fl32(sqrt(scale)) in fp32 before the product", SITE_FMT_FIXED,      \
      FMT_FP32, FMT_RNE, 0)                                                                                         \
    X(QK_ACC, "qk_acc", "S = Q' K'^T, cuBLAS's FFMA SGEMM: an fp32 fma chain over the head dim (fp32-fma)",           \
      SITE_ACC_FFMA, FMT_FP32, FMT_RNE, 0)                                                                          \
    X(P_EXP, "p_exp", "e = expf(fl32(s - max)) (CUDA's expf)", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                \
    X(L_SUM, "l_sum", "each thread's sum of its keys in order, then the warp's (and the block's) tree", SITE_FMT_FIXED, \
      FMT_FP32, FMT_RNE, 0)                                                                                         \
    X(P_DIV, "p_div", "p = e / sum, IEEE fp32 division", SITE_FMT_FIXED, FMT_FP32, FMT_RNE, 0)                      \
    X(PV_ACC, "pv_acc", "O = P V, cuBLAS's FFMA SGEMM over the keys (fp32-fma)", SITE_ACC_FFMA, FMT_FP32, FMT_RNE, 0) \
    X(OUT_CAST, "out_cast", "O cast from fp32 to the input format", SITE_FMT_OUT, FMT_FP32, FMT_RNE, 0)

enum { SDPA_MATH_SITES(SITE_ENUM) };

const site_def_t attn_sdpa_math_sites[] = {SDPA_MATH_SITES(SITE_ROW) SITE_END};

#define SDPA_WARP 32
#define SDPA_SCORES (1L << 21) /* scores per pass (bounds the score buffer: 16 MB) */

/* The softmax kernel's per-thread partial sums of e[0..n) into part[0..T): thread t adds
 * e[t], e[t + T], e[t + 2T], ... in order from zero. */
static void sdpa_thread_sums(attn_ctx_t *ctx, const double *e, long n, long T, double *part)
{
    for (long t = 0; t < T; t++) {
        double s = 0;
        for (long j = t; j < n; j += T)
            s = gpu_r32(ctx, L_SUM, s + e[j]);
        part[t] = s;
    }
}

/* The row sum of e[0..n) as PyTorch's CUDA softmax forms it (SoftMax.cu host_softmax):
 * up to 2048 keys softmax_warp_forward, a warp of min(2^ceil(log2 n), 32) lanes, lane l holding
 * keys l, l + W, ... (WARP_ITERATIONS of them), then warp_reduce's butterfly; beyond,
 * cunn_SoftMaxForwardReg with SoftMaxForward_getBlockSize's 1024 threads, thread t holding keys
 * t + 1024 r, each warp's shfl_down tree and the tree of the 32 warps' results. */
static double sdpa_row_sum(attn_ctx_t *ctx, const double *e, long n)
{
    double lane[1024], w[SDPA_WARP];
    if (n <= 2048) {
        long W = 1;
        while (W < n && W < SDPA_WARP)
            W *= 2;
        sdpa_thread_sums(ctx, e, n, W, lane);
        return gpu_butterfly_sum(ctx, L_SUM, lane, (int)W, 0);
    }
    long T = 1024;
    sdpa_thread_sums(ctx, e, n, T, lane);
    for (long wi = 0; wi < T / SDPA_WARP; wi++) /* lane 0 of a shfl_down tree: the butterfly's */
        w[wi] = gpu_butterfly_sum(ctx, L_SUM, lane + wi * SDPA_WARP, SDPA_WARP, 0);
    for (long wi = T / SDPA_WARP; wi < SDPA_WARP; wi++)
        w[wi] = 0; /* the identity the block reduce reads past its warps */
    return gpu_butterfly_sum(ctx, L_SUM, w, SDPA_WARP, 0);
}

/* O [nr][dv] = P [nr][sk] V [sk][dv] by cuBLAS's SGEMM, split over K as --split-k says */
static void sdpa_pv(attn_ctx_t *ctx, double *o, const double *p, const double *v, long nr, long sk, long dv)
{
    const attn_cfg_t *c = ctx->cfg;
    if (c->split_k <= 1 || ctx->site[PV_ACC].exact)
        gpu_gemm(ctx, PV_ACC, 0, o, dv, p, sk, v, dv, 0, nr, dv, sk);
    else if (c->split_interleaved)
        acc_gemm_split_interleaved(o, dv, p, sk, v, dv, 0, nr, dv, sk, ACC_FP32_FMA, FMT_FP32, FMT_FP32, c->split_k);
    else
        acc_gemm_split(o, dv, p, sk, v, dv, 0, nr, dv, sk, ACC_FP32_FMA, FMT_FP32, FMT_FP32, c->split_k);
}

ATTN_VARIANT(attn_sdpa_math)
{
    long R = g->R, sk = g->sk, dk = g->dk, dv = g->dv;
    double sc = ctx->cfg->scale;
    /* calculate_scale(...).sqrt() in double; the tensor-scalar product holds it in fp32 */
    double sf = ctx->site[QK_SCALE].exact ? sqrt(fabs(sc)) : (double)(float)sqrt(fabs(sc));
    double *qs = err_malloc((size_t)(R * dk), sizeof(double)), *ks = err_malloc((size_t)(sk * dk), sizeof(double));
    for (long i = 0; i < R * dk; i++)
        qs[i] = gpu_r32(ctx, QK_SCALE, g->q[i] * (sc < 0 ? -sf : sf));
    for (long i = 0; i < sk * dk; i++)
        ks[i] = gpu_r32(ctx, QK_SCALE, g->k[i] * sf);
    /* query rows per pass: as many as SDPA_SCORES holds (each pass converts K and V for the
     * products again; the rows are independent, so the pass size changes no bit) */
    long rb = sk > 0 && SDPA_SCORES / sk < R ? SDPA_SCORES / sk : R;
    rb = rb > 0 ? rb : 1;
    double *s = err_malloc((size_t)(rb * sk), sizeof(double));
    for (long r0 = 0; r0 < R; r0 += rb) {
        long nr = R - r0 < rb ? R - r0 : rb;
        gpu_gemm(ctx, QK_ACC, 0, s, sk, qs + r0 * dk, dk, ks, dk, 1, nr, sk, dk);
        for (long r = 0; r < nr; r++) {
            double *row = s + r * sk, m = -INFINITY;
            long valid = g->limit[r0 + r] + 1;
            for (long j = 0; j < sk; j++) {
                row[j] = j < valid ? row[j] : -INFINITY;
                m = row[j] > m ? row[j] : m;
            }
            if (m == -INFINITY) { /* every key masked: _safe_softmax's zero row */
                memset(row, 0, sizeof(double) * (size_t)sk);
                continue;
            }
            long nv = valid < sk ? valid : sk;
            for (long j = 0; j < nv; j++)
                row[j] = gpu_r32(ctx, P_EXP, row[j] - m);
            gpu_expf_n(ctx, P_EXP, row, nv);
            for (long j = nv; j < sk; j++)
                row[j] = 0;
            double sum = sdpa_row_sum(ctx, row, sk);
            for (long j = 0; j < sk; j++)
                row[j] = gpu_r32(ctx, P_DIV, row[j] / sum);
        }
        sdpa_pv(ctx, o + r0 * dv, s, g->v, nr, sk, dv);
    }
    for (long i = 0; i < R * dv; i++)
        o[i] = attn_round(ctx, OUT_CAST, o[i]);
    free(qs);
    free(ks);
    free(s);
}
