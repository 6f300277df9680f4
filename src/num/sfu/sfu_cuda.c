/* sfu_cuda -- CUDA's math library built on the SFU, as a kernel compiled without --use_fast_math
 * runs it (exp2f, expf, logf, __logf; read off the H100 SASS of PyTorch's FlashAttention-2:
 * num/sfu.h) */
#include "num/sfu/sfu.h"
#include "num/vec/cpu.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

float sfu_cuda_exp2f(float x)
{
    if (x < -126.0f) {
        float h = sfu_ex2(x * 0.5f);
        return h * h;
    }
    return sfu_ex2(x);
}

static uint32_t sfu_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float sfu_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* expf's reduction: x = (n + f) / log2(e) with f for the SFU and 2^n as a binary32 scale */
static inline __attribute__((always_inline)) float sfu_cuda_expf_reduce(float x, float *scale)
{
    /* t = sat(fma(x, log2e / 252, 0.5)); j = fma.rm(t, 252, 12582913): 1.5 2^23 + 1 + k */
    float t = fmaf(x, sfu_float(0x3bbb989du), 0.5f);
    t = t > 0.0f ? (t < 1.0f ? t : 1.0f) : 0.0f; /* .SAT (NaN -> 0) */
    double jd = floor((double)t * 252.0 + 12582913.0); /* exact in double, then rounded down */
    float j = (float)jd;
    float n = j - 12583039.0f; /* k - 126 - 1 */
    float f = fmaf(x, sfu_float(0x3fb8aa3bu), -n);
    *scale = sfu_float(sfu_bits(j) << 23); /* 2^n from j's low bits */
    return fmaf(x, sfu_float(0x32a57060u), f);
}

float sfu_cuda_expf(float x)
{
    float scale, f = sfu_cuda_expf_reduce(x, &scale);
    return scale * sfu_ex2(f);
}

/* The reductions of m values: with FMA compiled in where the processor has it, so that the
 * fused operations are instructions, not calls of libm's fmaf from legacy SSE code (the same
 * single roundings either way): on an Emerald Rapids guest such a call from SSE code took about
 * 200 ns instead of 5 while the vector registers' upper halves were marked in use, and the
 * expf loop of sdpa-math ran ten times slower. */
static inline __attribute__((always_inline)) void sfu_cuda_expf_reduce_body(float *f, float *scale, const float *x,
                                                                            long m)
{
    for (long i = 0; i < m; i++)
        f[i] = sfu_cuda_expf_reduce(x[i], &scale[i]);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma"))) static void sfu_cuda_expf_reduce_fma(float *f, float *scale, const float *x,
                                                                          long m)
{
    sfu_cuda_expf_reduce_body(f, scale, x, m);
}
#endif

void sfu_cuda_expf_n(float *y, const float *x, long n)
{
    enum { CHUNK = 256 };
    float f[CHUNK], scale[CHUNK];
    for (long i0 = 0; i0 < n; i0 += CHUNK) {
        long m = n - i0 < CHUNK ? n - i0 : CHUNK;
#if defined(__x86_64__) && defined(__GNUC__)
        if (cpu_has_avx2_fma())
            sfu_cuda_expf_reduce_fma(f, scale, x + i0, m);
        else
#endif
            sfu_cuda_expf_reduce_body(f, scale, x + i0, m);
        sfu_ex2_n(f, f, m);
        for (long i = 0; i < m; i++)
            y[i0 + i] = scale[i] * f[i];
    }
}

/* libdevice's logf and log2f, their common start: x below 2^-126 (or NaN) scaled by 2^23, its exponent taken out
 * about the split point (u - split) so that the mantissa m lands in [split, 2 split); f = m - 1 and i the exponent
 * (plus -23 where scaled); the bits of the scaled x in *ux */
static float sfu_cuda_log_split(float *x, uint32_t split, float *i, uint32_t *ux)
{
    float adj = 0.0f;
    if (!(*x >= 0x1p-126f)) { /* FSETP.GEU: NaN takes this path too */
        *x *= 8388608.0f;
        adj = -23.0f;
    }
    uint32_t u = sfu_bits(*x);
    int32_t e = (int32_t)((u - split) & 0xff800000u);
    *i = fmaf((float)e, 0x1p-23f, adj);
    *ux = u;
    return sfu_float(u - (uint32_t)e) - 1.0f;
}

float sfu_cuda_logf(float x)
{
    float i;
    uint32_t u;
    float f = sfu_cuda_log_split(&x, 0x3f2aaaabu, &i, &u);
    float r = fmaf(f, -sfu_float(0x3e055027u), 0.14084610342979431152f);
    r = fmaf(f, r, -0.12148627638816833496f);
    r = fmaf(f, r, 0.13980610668659210205f);
    r = fmaf(f, r, -0.16684235632419586182f);
    r = fmaf(f, r, 0.20012299716472625732f);
    r = fmaf(f, r, -0.24999669194221496582f);
    r = fmaf(f, r, 0.33333182334899902344f);
    r = fmaf(f, r, -0.5f);
    r = f * r;
    r = fmaf(f, r, f);
    r = fmaf(i, 0.69314718246459960938f, r);
    if (u >= 0x7f800000u) /* inf, NaN, or negative: fma(x, inf, inf) */
        r = fmaf(x, INFINITY, INFINITY);
    return x != 0.0f ? r : -INFINITY;
}

float sfu_cuda_log2f(float x)
{
    float i;
    uint32_t u;
    float f = sfu_cuda_log_split(&x, 0x3f3504f3u, &i, &u);
    float r = fmaf(f, sfu_float(0x3dc6b27fu), -0.16845393180847167969f);
    r = fmaf(f, r, 0.1716887056827545166f);
    r = fmaf(f, r, -0.17900948226451873779f);
    r = fmaf(f, r, 0.20512372255325317383f);
    r = fmaf(f, r, -0.24046532809734344482f);
    r = fmaf(f, r, 0.28857114911079406738f);
    r = fmaf(f, r, -0.36067417263984680176f);
    r = fmaf(f, r, 0.48089820146560668945f);
    r = fmaf(f, r, -0.72134751081466674805f);
    r = f * r;
    r = f * r;
    r = i + fmaf(f, 1.4426950216293334961f, r);
    if (u >= 0x7f800000u) /* inf, NaN, or negative: fma(x, inf, inf) */
        r = fmaf(x, INFINITY, INFINITY);
    return x != 0.0f ? r : -INFINITY;
}

float sfu_cuda_fast_logf(float x)
{
    int small = !(fabsf(x) >= 0x1p-126f);
    float l = sfu_lg2(small ? x * 16777216.0f : x);
    if (small)
        l += -24.0f;
    return l * 0.69314718246459960938f;
}
