/* vec_f32 -- array steps that end in a binary32 rounding: exp and exp2 (vec_exp_rn32: AVX-512, else AVX2), a
 * product and a scaled FMA (vec_mul32, vec_fma32_scaled: AVX-512); the plain expressions where those are not */
#include "num/vec/vec.h"

#include <math.h>
#include <stdint.h>

#include "num/vec/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define VEC_X16 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma")))

/* 2^(j/32), j = 0 .. 31, each the binary64 nearest (from 60 decimal digits) */
static const double exp_tab32[32] = {
    0x1.0000000000000p+0, 0x1.059b0d3158574p+0, 0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0,
    0x1.172b83c7d517bp+0, 0x1.1d4873168b9aap+0, 0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0,
    0x1.306fe0a31b715p+0, 0x1.371a7373aa9cbp+0, 0x1.3dea64c123422p+0, 0x1.44e086061892dp+0,
    0x1.4bfdad5362a27p+0, 0x1.5342b569d4f82p+0, 0x1.5ab07dd485429p+0, 0x1.6247eb03a5585p+0,
    0x1.6a09e667f3bcdp+0, 0x1.71f75e8ec5f74p+0, 0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
    0x1.8ace5422aa0dbp+0, 0x1.93737b0cdc5e5p+0, 0x1.9c49182a3f090p+0, 0x1.a5503b23e255dp+0,
    0x1.ae89f995ad3adp+0, 0x1.b7f76f2fb5e47p+0, 0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0,
    0x1.d5818dcfba487p+0, 0x1.dfc97337b9b5fp+0, 0x1.ea4afa2a490dap+0, 0x1.f50765b6e4540p+0,
};

/* vec_exp_rn32's AVX-512 form: y = 2^e 2^(j/32) (1 + q(r)) with k = 32 e + j the nearest integer to x 32 / ln 2
 * (x 32 for exp2), r = x - k ln2 / 32 (two FMAs, ln 2 / 32 split in two; (x - k / 32) ln 2 for exp2), |r| <= ln 2 / 64,
 * q Taylor's to r^6 (its remainder below 2^-57); y is within 1.5 units in its last place (binary64) of e^x. libm's
 * exp and exp2 are within 0.51 (glibc), so both round to the same binary32 unless a binary32 midpoint lies within
 * about 2 units of y: a lane within 64 of one, or outside [-87, 88] ([-126, 127] for exp2: binary32's normal
 * results), or NaN, is redone by libm. */
VEC_X16 static void exp_rn32_x16(double *x, long n, int two)
{
    const __m512d t0 = _mm512_loadu_pd(exp_tab32), t1 = _mm512_loadu_pd(exp_tab32 + 8);
    const __m512d t2 = _mm512_loadu_pd(exp_tab32 + 16), t3 = _mm512_loadu_pd(exp_tab32 + 24);
    const __m512d tok = _mm512_set1_pd(two ? 32.0 : 0x1.71547652b82fep+5);
    const __m512d l2hi = _mm512_set1_pd(0x1.62e42fefa39efp-6), l2lo = _mm512_set1_pd(0x1.abc9e3b39803fp-61);
    const __m512d ln2 = _mm512_set1_pd(0x1.62e42fefa39efp-1), inv32 = _mm512_set1_pd(0x1p-5);
    const __m512d lo = _mm512_set1_pd(two ? -126.0 : -87.0), hi = _mm512_set1_pd(two ? 127.0 : 88.0);
    const __m512d c2 = _mm512_set1_pd(1.0 / 2), c3 = _mm512_set1_pd(1.0 / 6), c4 = _mm512_set1_pd(1.0 / 24);
    const __m512d c5 = _mm512_set1_pd(1.0 / 120), c6 = _mm512_set1_pd(1.0 / 720);
    const __m512i low29 = _mm512_set1_epi64((1LL << 29) - 1), mid = _mm512_set1_epi64(1LL << 28);
    const __m512i near = _mm512_set1_epi64(64);
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d v = _mm512_loadu_pd(x + i);
        __m512d kd = _mm512_roundscale_pd(_mm512_mul_pd(v, tok), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m512d r = two ? _mm512_mul_pd(_mm512_fnmadd_pd(kd, inv32, v), ln2)
                        : _mm512_fnmadd_pd(kd, l2lo, _mm512_fnmadd_pd(kd, l2hi, v));
        __m512i k = _mm512_cvtpd_epi64(kd), j = _mm512_and_si512(k, _mm512_set1_epi64(31));
        __m512d t = _mm512_mask_blend_pd(_mm512_test_epi64_mask(j, _mm512_set1_epi64(16)),
                                         _mm512_permutex2var_pd(t0, j, t1), _mm512_permutex2var_pd(t2, j, t3));
        __m512d p = _mm512_fmadd_pd(c6, r, c5);
        p = _mm512_fmadd_pd(p, r, c4);
        p = _mm512_fmadd_pd(p, r, c3);
        p = _mm512_fmadd_pd(p, r, c2);
        __m512d q = _mm512_fmadd_pd(p, _mm512_mul_pd(r, r), r);
        __m512d y = _mm512_scalef_pd(_mm512_fmadd_pd(t, q, t), _mm512_cvtepi64_pd(_mm512_srai_epi64(k, 5)));
        __m512i d = _mm512_sub_epi64(_mm512_and_si512(_mm512_castpd_si512(y), low29), mid);
        __mmask8 ok = _mm512_cmp_pd_mask(v, lo, _CMP_GE_OQ) & _mm512_cmp_pd_mask(v, hi, _CMP_LE_OQ) &
                      _mm512_cmpgt_epi64_mask(_mm512_abs_epi64(d), near);
        double xs[8];
        if (ok != 0xff)
            _mm512_storeu_pd(xs, v);
        _mm512_storeu_pd(x + i, _mm512_cvtps_pd(_mm512_cvtpd_ps(y)));
        for (unsigned bad = (uint8_t)~ok; bad; bad &= bad - 1) {
            int l = __builtin_ctz(bad);
            x[i + l] = (double)(float)(two ? exp2(xs[l]) : exp(xs[l]));
        }
    }
    for (; i < n; i++)
        x[i] = (double)(float)(two ? exp2(x[i]) : exp(x[i]));
}

/* exp_rn32_x16 in AVX2, four lanes: the same y by the same operations (the table read by a gather, k's integer
 * and 2^e made by adding 1.5 2^52 (k and e are below 2^31 in magnitude: exact), 2^e's bits by a shift) and
 * the same test */
__attribute__((target("avx2,fma"))) static void exp_rn32_avx2(double *x, long n, int two)
{
    const __m256d tok = _mm256_set1_pd(two ? 32.0 : 0x1.71547652b82fep+5);
    const __m256d l2hi = _mm256_set1_pd(0x1.62e42fefa39efp-6), l2lo = _mm256_set1_pd(0x1.abc9e3b39803fp-61);
    const __m256d ln2 = _mm256_set1_pd(0x1.62e42fefa39efp-1), inv32 = _mm256_set1_pd(0x1p-5);
    const __m256d lo = _mm256_set1_pd(two ? -126.0 : -87.0), hi = _mm256_set1_pd(two ? 127.0 : 88.0);
    const __m256d c2 = _mm256_set1_pd(1.0 / 2), c3 = _mm256_set1_pd(1.0 / 6), c4 = _mm256_set1_pd(1.0 / 24);
    const __m256d c5 = _mm256_set1_pd(1.0 / 120), c6 = _mm256_set1_pd(1.0 / 720), magic = _mm256_set1_pd(0x1.8p52);
    const __m256i low29 = _mm256_set1_epi64x((1LL << 29) - 1), mid = _mm256_set1_epi64x(1LL << 28);
    const __m256i near = _mm256_set1_epi64x(64), nnear = _mm256_set1_epi64x(-64), bias = _mm256_set1_epi64x(1023);
    long i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d v = _mm256_loadu_pd(x + i);
        __m256d kd = _mm256_round_pd(_mm256_mul_pd(v, tok), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m256d r = two ? _mm256_mul_pd(_mm256_fnmadd_pd(kd, inv32, v), ln2)
                        : _mm256_fnmadd_pd(kd, l2lo, _mm256_fnmadd_pd(kd, l2hi, v));
        __m256i k = _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(kd, magic)), _mm256_castpd_si256(magic));
        __m256d t = _mm256_i64gather_pd(exp_tab32, _mm256_and_si256(k, _mm256_set1_epi64x(31)), 8);
        __m256d ed = _mm256_floor_pd(_mm256_mul_pd(kd, inv32)); /* e = floor(k / 32), exact */
        __m256i e = _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(ed, magic)), _mm256_castpd_si256(magic));
        __m256d p2 = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(e, bias), 52));
        __m256d p = _mm256_fmadd_pd(c6, r, c5);
        p = _mm256_fmadd_pd(p, r, c4);
        p = _mm256_fmadd_pd(p, r, c3);
        p = _mm256_fmadd_pd(p, r, c2);
        __m256d q = _mm256_fmadd_pd(p, _mm256_mul_pd(r, r), r);
        __m256d y = _mm256_mul_pd(_mm256_fmadd_pd(t, q, t), p2);
        __m256i d = _mm256_sub_epi64(_mm256_and_si256(_mm256_castpd_si256(y), low29), mid);
        __m256d ok = _mm256_and_pd(_mm256_and_pd(_mm256_cmp_pd(v, lo, _CMP_GE_OQ), _mm256_cmp_pd(v, hi, _CMP_LE_OQ)),
                                   _mm256_castsi256_pd(_mm256_or_si256(_mm256_cmpgt_epi64(d, near),
                                                                       _mm256_cmpgt_epi64(nnear, d))));
        int good = _mm256_movemask_pd(ok);
        double xs[4];
        if (good != 0xf)
            _mm256_storeu_pd(xs, v);
        _mm256_storeu_pd(x + i, _mm256_cvtps_pd(_mm256_cvtpd_ps(y)));
        for (unsigned bad = (unsigned)~good & 0xf; bad; bad &= bad - 1) {
            int l = __builtin_ctz(bad);
            x[i + l] = (double)(float)(two ? exp2(xs[l]) : exp(xs[l]));
        }
    }
    for (; i < n; i++)
        x[i] = (double)(float)(two ? exp2(x[i]) : exp(x[i]));
}

/* vec_mul32 and vec_fma32_scaled, eight at a time: the binary64 product rounded to binary32 as the cast does it
 * (VCVTPD2PS, MXCSR's nearest), the FMA in binary32 lanes as fmaf */
VEC_X16 static void mul32_x16(double *o, const double *x, long n, double a)
{
    const __m512d av = _mm512_set1_pd(a);
    long i = 0;
    for (; i + 8 <= n; i += 8)
        _mm512_storeu_pd(o + i, _mm512_cvtps_pd(_mm512_cvtpd_ps(_mm512_mul_pd(_mm512_loadu_pd(x + i), av))));
    for (; i < n; i++)
        o[i] = (double)(float)(x[i] * a);
}

VEC_X16 static void fma32_scaled_x16(double *o, const double *t, long n, double alpha, double beta)
{
    const __m512d bv = _mm512_set1_pd(beta);
    const __m256 av = _mm256_set1_ps((float)alpha);
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 c = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_loadu_pd(o + i), bv));
        _mm512_storeu_pd(o + i, _mm512_cvtps_pd(_mm256_fmadd_ps(av, _mm512_cvtpd_ps(_mm512_loadu_pd(t + i)), c)));
    }
    for (; i < n; i++)
        o[i] = (double)fmaf((float)alpha, (float)t[i], (float)(double)(float)(beta * o[i]));
}

#define VEC_HAVE_X16 (vec_simd >= 2 && cpu_has_avx512())
#define VEC_HAVE_AVX2 (vec_simd >= 1 && cpu_has_avx2_fma())
#endif

void vec_exp_rn32(double *x, long n, int two)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (VEC_HAVE_X16) {
        exp_rn32_x16(x, n, two);
        return;
    }
    if (VEC_HAVE_AVX2) {
        exp_rn32_avx2(x, n, two);
        return;
    }
#endif
    for (long i = 0; i < n; i++)
        x[i] = (double)(float)(two ? exp2(x[i]) : exp(x[i]));
}

void vec_mul32(double *o, const double *x, long n, double a)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (VEC_HAVE_X16) {
        mul32_x16(o, x, n, a);
        return;
    }
#endif
    for (long i = 0; i < n; i++)
        o[i] = (double)(float)(x[i] * a);
}

void vec_fma32_scaled(double *o, const double *t, long n, double alpha, double beta)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (VEC_HAVE_X16) {
        fma32_scaled_x16(o, t, n, alpha, beta);
        return;
    }
#endif
    for (long i = 0; i < n; i++)
        o[i] = (double)fmaf((float)alpha, (float)t[i], (float)(double)(float)(beta * o[i]));
}

