/* sfu -- the special function unit's approximate instructions (H100, fast-math code) */
#ifndef AMLA_SFU_H
#define AMLA_SFU_H

#include <stdint.h>

/* ex2.approx.ftz.f32: 2^x as the SFU computes it (subnormal inputs and results flushed). */
float sfu_ex2(float x);

/* y[i] = sfu_ex2(x[i]) for i < n (y may be x): eight at a time in AVX-512 or AVX2 where the
 * processor has it and acc_simd allows (num/sfu_x8.c), the same bits. */
void sfu_ex2_n(float *y, const float *x, long n);

/* ex2's table: per segment of the fraction, c0, c1, c2 of its quadratic (for sfu_x8.c). */
const int32_t (*sfu_ex2_table(void))[3];

/* rcp.approx.ftz.f32: 1/x as the SFU computes it (subnormal inputs and results flushed). */
float sfu_rcp(float x);

/* lg2.approx.ftz.f32: log2(x) as the SFU computes it (subnormal inputs flushed: -inf); equal to
 * the H100's on every binary32 input: 9 inputs near 1 (tests/data/sfu/probe4.txt), where the
 * model's normalizer test would shift the fraction and the hardware does not, are kept as a
 * measured list (the hardware's own test for them is not recovered). */
float sfu_lg2(float x);

/* A binary32 result with flush-to-zero: subnormal -> zero of the same sign (every FP32
 * instruction of a --use_fast_math kernel does this). */
float sfu_ftz(float y);

/* CUDA's math library built on the SFU, as a kernel compiled without --use_fast_math runs it
 * (read off the H100 SASS of PyTorch's FlashAttention-2; docs/REFERENCES.md, FlashAttention-2):
 *   exp2f(x): ex2.approx(x), or for x < -126 ex2.approx(x/2) squared (subnormal results kept);
 *   expf(x):  2^n ex2.approx(fma(x, lo, fma(x, hi, -n))), n from a saturating fma and an fma
 *             rounding down (hi = fl32(log2 e), lo = 1.925963e-8);
 *   logf(x):  exponent split about 2/3, a degree-10 polynomial in f = m - 1 by fma (Horner),
 *             i ln 2 added by fma; 0 -> -inf, inf and NaN pass, x < 0 -> NaN;
 *   __logf(x): lg2.approx(x) fl32(ln 2), x below 2^-126 scaled by 2^24 first;
 *   log2f(x): exponent split about sqrt 2, a degree-9 polynomial in f = m - 1 by fma (Horner), times f twice,
 *             f fl32(log2 e) added by fma, then i; 0 -> -inf, inf and NaN pass, x < 0 -> NaN (read off the
 *             SASS of FlashMLA's combine kernel built without --use_fast_math). */
float sfu_cuda_exp2f(float x);
float sfu_cuda_log2f(float x);
float sfu_cuda_expf(float x);
float sfu_cuda_logf(float x);
float sfu_cuda_fast_logf(float x);

/* y[i] = sfu_cuda_exp2f(x[i]) for i < n (y may be x), on sfu_ex2_n. */
void sfu_cuda_exp2f_n(float *y, const float *x, long n);
/* y[i] = sfu_cuda_expf(x[i]) for i < n (y may be x), on sfu_ex2_n. */
void sfu_cuda_expf_n(float *y, const float *x, long n);

#endif
