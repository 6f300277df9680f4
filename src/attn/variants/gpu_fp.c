/* gpu_fp -- a CUDA kernel's FP32 operations at a rounding site, as its build compiles them (see gpu_fp.h) */
#include "attn/variants/gpu_fp.h"
#include "num/vec/vec.h"

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

#include "num/acc/acc_tc.h"
#include "num/sfu/sfu.h"

void gpu_f32_scale(attn_ctx_t *ctx, int site, double *x, long n, double a)
{
    if (ctx->site[site].exact) {
        for (long i = 0; i < n; i++)
            x[i] *= a;
        return;
    }
    if (gpu_ieee(ctx))
        vec_mul32(x, x, n, a);
    else
        vec_scale32_ftz(x, x, n, a);
}

void gpu_fma_acc_n(attn_ctx_t *ctx, int site, double *o, const double *y, long n, double a)
{
    if (ctx->site[site].exact) {
        for (long i = 0; i < n; i++)
            o[i] = a * y[i] + o[i];
        return;
    }
    if (!gpu_ieee(ctx)) {
        vec_axpy32_ftz(o, y, n, a);
        return;
    }
    for (long i = 0; i < n; i++)
        o[i] = (double)fmaf((float)a, (float)y[i], (float)o[i]);
}

double gpu_ex2(attn_ctx_t *ctx, int site, double x)
{
    return ctx->site[site].exact ? exp2(x) : gpu_ieee(ctx) ? (double)sfu_cuda_exp2f((float)x) : (double)sfu_ex2((float)x);
}

double gpu_logf_add(attn_ctx_t *ctx, int site, double x, double a)
{
    if (ctx->site[site].exact)
        return log(x) + a;
    if (gpu_ieee(ctx))
        return (double)((float)a + sfu_cuda_logf((float)x));
    return (double)gpu_ftz(fmaf(sfu_lg2((float)x), 0x1.62e43p-1f, (float)a));
}

double gpu_lg2(attn_ctx_t *ctx, int site, double x)
{
    return ctx->site[site].exact ? log2(x) : gpu_ieee(ctx) ? (double)sfu_cuda_log2f((float)x) : (double)sfu_lg2((float)x);
}

double gpu_rcp(attn_ctx_t *ctx, int site, double x)
{
    return ctx->site[site].exact ? 1.0 / x : (double)sfu_rcp((float)x);
}

double gpu_div(attn_ctx_t *ctx, int site, double a, double b)
{
    if (ctx->site[site].exact)
        return a / b;
    return gpu_ieee(ctx) ? (double)((float)a / (float)b) : (double)gpu_ftz((float)a * sfu_rcp((float)b));
}

/* x[i] = fn(x[i]) for i < n, fn a binary32 array function (an SFU model's vector form) */
static void gpu_apply32(double *x, long n, void (*fn)(float *, const float *, long))
{
    enum { CHUNK = 256 };
    float t[CHUNK];
    for (long i0 = 0; i0 < n; i0 += CHUNK) {
        long m = n - i0 < CHUNK ? n - i0 : CHUNK;
        vec_narrow32(t, x + i0, m);
        fn(t, t, m);
        vec_widen32(x + i0, t, m);
    }
}

void gpu_fma_n(attn_ctx_t *ctx, int site, double *p, long n, double a, double b)
{
    if (ctx->site[site].exact) {
        for (long i = 0; i < n; i++)
            p[i] = p[i] * a + b;
        return;
    }
    if (!gpu_ieee(ctx)) {
        vec_fma32_ftz(p, n, a, b); /* gpu_fma element by element */
        return;
    }
    for (long i = 0; i < n; i++)
        p[i] = (double)fmaf((float)p[i], (float)a, (float)b);
}

void gpu_ex2_n(attn_ctx_t *ctx, int site, double *p, long n)
{
    if (ctx->site[site].exact) {
        for (long i = 0; i < n; i++)
            p[i] = exp2(p[i]);
        return;
    }
    gpu_apply32(p, n, gpu_ieee(ctx) ? sfu_cuda_exp2f_n : sfu_ex2_n);
}

void gpu_ex2_fma_n(attn_ctx_t *ctx, int site, double *p, long n, double a, double b)
{
    gpu_fma_n(ctx, site, p, n, a, b);
    gpu_ex2_n(ctx, site, p, n);
}

void gpu_r32_scale(attn_ctx_t *ctx, int site, double *x, long n, double a)
{
    if (ctx->site[site].exact) {
        for (long i = 0; i < n; i++)
            x[i] *= a;
        return;
    }
    vec_mul32(x, x, n, a);
}

void gpu_r32_scale_sub(attn_ctx_t *ctx, int site, double *x, long n, double a, double b)
{
    if (ctx->site[site].exact) {
        for (long i = 0; i < n; i++)
            x[i] = x[i] * a - b;
        return;
    }
    vec_mul32(x, x, n, a);
#pragma omp simd
    for (long i = 0; i < n; i++)
        x[i] = (double)(float)(x[i] - b);
}

double gpu_fmaf(attn_ctx_t *ctx, int site, double a, double b, double c)
{
    return ctx->site[site].exact ? a * b + c : (double)fmaf((float)a, (float)b, (float)c);
}

double gpu_div1(attn_ctx_t *ctx, int site, double x)
{
    return ctx->site[site].exact ? 1.0 / x : (double)(1.0f / (float)x);
}

double gpu_exp2f(attn_ctx_t *ctx, int site, double x)
{
    return ctx->site[site].exact ? exp2(x) : (double)sfu_cuda_exp2f((float)x);
}

/* x[i] = exact(x[i]) where the site is exact, else gpu_apply32's fn32 */
static void gpu_site_n(attn_ctx_t *ctx, int site, double *x, long n, double (*exact)(double),
                       void (*fn32)(float *, const float *, long))
{
    if (ctx->site[site].exact) {
        for (long i = 0; i < n; i++)
            x[i] = exact(x[i]);
        return;
    }
    gpu_apply32(x, n, fn32);
}

void gpu_exp2f_n(attn_ctx_t *ctx, int site, double *x, long n)
{
    gpu_site_n(ctx, site, x, n, exp2, sfu_cuda_exp2f_n);
}

void gpu_expf_n(attn_ctx_t *ctx, int site, double *x, long n)
{
    gpu_site_n(ctx, site, x, n, exp, sfu_cuda_expf_n);
}

double gpu_expf(attn_ctx_t *ctx, int site, double x)
{
    return ctx->site[site].exact ? exp(x) : (double)sfu_cuda_expf((float)x);
}

double gpu_logf(attn_ctx_t *ctx, int site, double x)
{
    return ctx->site[site].exact ? log(x) : (double)sfu_cuda_logf((float)x);
}

double gpu_fast_logf(attn_ctx_t *ctx, int site, double x)
{
    return ctx->site[site].exact ? log(x) : (double)sfu_cuda_fast_logf((float)x);
}

double gpu_butterfly_sum(attn_ctx_t *ctx, int site, double *lane, int n, int ftz)
{
    double next[128];
    for (int off = n / 2; off >= 1; off /= 2) {
        for (int t = 0; t < n; t++)
            next[t] = ftz && !gpu_ieee(ctx) ? gpu_f32(ctx, site, lane[t] + lane[t ^ off])
                                            : gpu_r32(ctx, site, lane[t] + lane[t ^ off]);
        for (int t = 0; t < n; t++)
            lane[t] = next[t];
    }
    return lane[0];
}

/* the operands' format at an accumulation site: its definition's (tf32: vLLM's TF32 P.V), or the input format
 * (FMT_FP32 in the definition), as attn_gemm reads it */
static fmt_id_t gpu_gemm_format(const attn_ctx_t *ctx, const site_t *s)
{
    return s->def->fmt == FMT_FP32 ? ctx->cfg->in_format : s->def->fmt;
}

void gpu_gemm(attn_ctx_t *ctx, int site, int acc, double *C, long ldc, const double *A, long lda, const double *B,
              long ldb, int b_trans, long M, long N, long K)
{
    const site_t *s = &ctx->site[site];
    fmt_id_t f = gpu_gemm_format(ctx, s);
    if (!acc) {
        acc_gemm_f(C, ldc, A, lda, B, ldb, b_trans, M, N, K, s->exact ? ACC_FP64 : s->acc, f, f);
    } else if (s->exact) {
        double *t = err_malloc((size_t)(M * N), sizeof(double));
        acc_gemm_f(t, N, A, lda, B, ldb, b_trans, M, N, K, ACC_FP64, f, f);
        for (long i = 0; i < M; i++)
            for (long j = 0; j < N; j++)
                C[i * ldc + j] += t[i * N + j];
        free(t);
    } else {
        acc_tc_gemm_acc(C, ldc, A, lda, B, ldb, b_trans, M, N, K, s->acc, fmt_table[f].emin, fmt_table[f].emin);
    }
}

void gpu_gemm_scaled(attn_ctx_t *ctx, int site, int scale_site, double *C, long ldc, const double *rs, const double *A,
                     long lda, const double *B, long ldb, int b_trans, long M, long N, long K)
{
    if (ctx->site[site].exact || ctx->site[scale_site].exact || gpu_ieee(ctx)) { /* the fused form flushes */
        for (long i = 0; i < M; i++)
            gpu_f32_scale(ctx, scale_site, C + i * ldc, N, rs[i]);
        gpu_gemm(ctx, site, 1, C, ldc, A, lda, B, ldb, b_trans, M, N, K);
        return;
    }
    fmt_id_t f = gpu_gemm_format(ctx, &ctx->site[site]);
    acc_tc_gemm_acc_scaled(C, ldc, rs, A, lda, B, ldb, b_trans, M, N, K, ctx->site[site].acc, fmt_table[f].emin,
                           fmt_table[f].emin);
}
