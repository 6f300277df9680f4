/* gpu_fp -- the FP32 arithmetic of a CUDA kernel at a rounding site, as its build compiles it (attn_cfg_t.build):
 * with --use_fast_math, binary32 with subnormals flushed (FTZ), exp2 / log2 / 1/x as the SFU's ex2.approx,
 * lg2.approx and rcp.approx (num/sfu.c); without it, binary32 with subnormals kept, exp2f with its fix-up below
 * 2^-126 (sfu_cuda_exp2f), libdevice's logf and the IEEE division; FFMA either way, and tensor-core products
 * (mma.sync or WGMMA) accumulating into their registers; each the exact binary64 operation when the site is exact */
#ifndef AMLA_GPU_FP_H
#define AMLA_GPU_FP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attn/attn.h"

/* A binary32 result flushed to zero (sfu_ftz, inline so that loops around it vectorize). */
static inline float gpu_ftz(float y)
{
    uint32_t b;
    memcpy(&b, &y, 4);
    b = (b & 0x7f800000u) ? b : b & 0x80000000u;
    memcpy(&y, &b, 4);
    return y;
}

/* Whether the kernel was built without --use_fast_math (ATTN_BUILD_IEEE) */
static inline int gpu_ieee(const attn_ctx_t *ctx)
{
    return ctx->ieee;
}

static inline double gpu_f32(attn_ctx_t *ctx, int site, double x)
{
    return ctx->site[site].exact ? x : gpu_ieee(ctx) ? (double)(float)x : (double)gpu_ftz((float)x);
}

static inline double gpu_fma(attn_ctx_t *ctx, int site, double a, double b, double c)
{
    if (ctx->site[site].exact)
        return a * b + c;
    float r = fmaf((float)a, (float)b, (float)c);
    return gpu_ieee(ctx) ? (double)r : (double)gpu_ftz(r);
}

/* x[0:n] = gpu_f32(x[i] a): a binary32 product (x and a binary32 values), flushed */
void gpu_f32_scale(attn_ctx_t *ctx, int site, double *x, long n, double a);
/* o[i] = gpu_fma(a, y[i], o[i]) for i < n (vectorized where the processor allows) */
void gpu_fma_acc_n(attn_ctx_t *ctx, int site, double *o, const double *y, long n, double a);
/* exp2f(x): ex2.approx.ftz, or without fast math sfu_cuda_exp2f */
double gpu_ex2(attn_ctx_t *ctx, int site, double x);
/* rcp.approx(x): MUFU.RCP, what __fdividef(1, x) and a fast-math build's 1.0f / x give (either build) */
double gpu_rcp(attn_ctx_t *ctx, int site, double x);
/* a / b as the build compiles it: fl32(a rcp.approx(b)) (div.approx.ftz) with fast math, IEEE division without */
double gpu_div(attn_ctx_t *ctx, int site, double a, double b);
/* log2f(x): lg2.approx.ftz with fast math (also the SFU half of its logf), libdevice's (sfu_cuda_log2f) without */
double gpu_lg2(attn_ctx_t *ctx, int site, double x);
/* logf(x) + a as the build compiles it: FFMA(lg2.approx(x), fl32(ln 2), a) with fast math (logf's product fused
 * into the addition), fl32(a + logf(x)) (libdevice's logf) without */
double gpu_logf_add(attn_ctx_t *ctx, int site, double x, double a);
/* p[i] = gpu_ex2(gpu_fma(p[i], a, b)) for i < n: the FFMA and ex2.approx of a softmax row, the
 * ex2s eight at a time where the processor allows (sfu_ex2_n); and its two steps apart, p[i] =
 * gpu_fma(p[i], a, b) and p[i] = gpu_ex2(p[i]) (a block's rows through one call) */
void gpu_ex2_fma_n(attn_ctx_t *ctx, int site, double *p, long n, double a, double b);
void gpu_fma_n(attn_ctx_t *ctx, int site, double *p, long n, double a, double b);
void gpu_ex2_n(attn_ctx_t *ctx, int site, double *p, long n);

/* The same operations in a kernel built without --use_fast_math (PyTorch's FlashAttention-2):
 * IEEE binary32 with subnormals kept, FFMA, the IEEE reciprocal 1/x, and CUDA's exp2f, expf,
 * logf and __logf (num/sfu.h); each exact in binary64 when the site is exact. */
static inline double gpu_r32(attn_ctx_t *ctx, int site, double x)
{
    return ctx->site[site].exact ? x : (double)(float)x;
}

double gpu_fmaf(attn_ctx_t *ctx, int site, double a, double b, double c);
/* x[i] = gpu_r32(x[i] a) for i < n, vectorized (vec_mul32) */
void gpu_r32_scale(attn_ctx_t *ctx, int site, double *x, long n, double a);
/* x[i] = gpu_r32(gpu_r32(x[i] a) - b) for i < n (a softmax row's scaled scores less its maximum), vectorized */
void gpu_r32_scale_sub(attn_ctx_t *ctx, int site, double *x, long n, double a, double b);
double gpu_div1(attn_ctx_t *ctx, int site, double x);
double gpu_exp2f(attn_ctx_t *ctx, int site, double x);
/* x[i] = gpu_exp2f(x[i]) for i < n, on sfu_cuda_exp2f_n */
void gpu_exp2f_n(attn_ctx_t *ctx, int site, double *x, long n);
double gpu_expf(attn_ctx_t *ctx, int site, double x);
/* x[i] = gpu_expf(x[i]) for i < n, on sfu_cuda_expf_n */
void gpu_expf_n(attn_ctx_t *ctx, int site, double *x, long n);
double gpu_logf(attn_ctx_t *ctx, int site, double x);
double gpu_fast_logf(attn_ctx_t *ctx, int site, double x);

/* A warp's butterfly sum (Allreduce over n lanes: offsets n/2, ..., 1, each lane adding its
 * partner's value) of lane[0..n-1] in place, in FP32 with (ftz) or without flush-to-zero;
 * returns lane 0's (every lane's) result. */
double gpu_butterfly_sum(attn_ctx_t *ctx, int site, double *lane, int n, int ftz);

/* C (+)= A B^T (b_trans) or A B at an accumulation site, in the site's model: C = A B (acc 0)
 * or D = A B + C with the accumulator as the tensor core's C (acc 1). */
void gpu_gemm(attn_ctx_t *ctx, int site, int acc, double *C, long ldc, const double *A, long lda, const double *B,
              long ldb, int b_trans, long M, long N, long K);

/* gpu_gemm accumulating (acc 1) into a C whose rows are first rescaled at scale_site: row i by
 * gpu_f32_scale(rs[i]) (an online softmax's O before its next P V). With both sites rounding, the tensor-core
 * model scales C as it loads it (acc_tc_gemm_acc_scaled: the same bits, one pass over C fewer). */
void gpu_gemm_scaled(attn_ctx_t *ctx, int site, int scale_site, double *C, long ldc, const double *rs, const double *A,
                     long lda, const double *B, long ldb, int b_trans, long M, long N, long K);

#endif
