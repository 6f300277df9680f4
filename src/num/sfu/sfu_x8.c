/* sfu_x8 -- ex2.approx.ftz.f32 (sfu_ex2), and CUDA's exp2f on it, eight inputs at a time in AVX-512 or AVX2: the same integer
 * datapath, lane for lane (the segment's quadratic in int64 lanes, the square's partial
 * products as sfu_sq forms them, the one rounding to binary32 from an exact binary64 product),
 * so bit-identical to the scalar model on every binary32 input (checked exhaustively, and
 * t-sfu compares the two on every class of input) */
#include "num/sfu/sfu.h"

#include <math.h>
#include <string.h>

#include "num/acc/acc.h"
#include "num/vec/cpu.h"

#define SFU_EX2_K 0x77e2 /* sfu.c's rounding constant of the ex2 core */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define T8 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma")))

T8 static __m256 ex2_x8(__m256 xs, const int32_t (*tab)[3])
{
    const __m512i m23 = _mm512_set1_epi64(0x7fffff), one = _mm512_set1_epi64(1);
    __m512d xd = _mm512_cvtps_pd(xs);
    __mmask8 neg = _mm512_cmp_pd_mask(xd, _mm512_setzero_pd(), _CMP_LT_OQ);
    __mmask8 big = _mm512_cmp_pd_mask(_mm512_abs_pd(xd), _mm512_set1_pd(128.0), _CMP_NLT_UQ); /* NaN too */
    /* |x| truncated to 23 fraction bits, I.F (lanes with |x| >= 128 or NaN replaced at the end) */
    __m512i mag = _mm512_cvttpd_epi64(_mm512_mul_pd(_mm512_maskz_mov_pd((__mmask8)~big, _mm512_abs_pd(xd)), _mm512_set1_pd(0x1p23)));
    __m512i i = _mm512_srli_epi64(mag, 23), f = _mm512_and_si512(mag, m23);
    __mmask8 f0 = _mm512_cmpeq_epi64_mask(f, _mm512_setzero_si512());
    /* a negative x takes the core at the one's complement of F */
    __m512i fc = _mm512_mask_xor_epi64(f, neg, f, m23);
    __m512i seg = _mm512_srli_epi64(fc, 17), xl = _mm512_and_si512(fc, _mm512_set1_epi64(0x1ffff));
    __m512i idx = _mm512_mullo_epi64(seg, _mm512_set1_epi64(3));
    const int *t = &tab[0][0];
    __m512i c0 = _mm512_cvtepi32_epi64(_mm512_i64gather_epi32(idx, t, 4));
    __m512i c1 = _mm512_cvtepi32_epi64(_mm512_i64gather_epi32(_mm512_add_epi64(idx, one), t, 4));
    __m512i c2 = _mm512_cvtepi32_epi64(_mm512_i64gather_epi32(_mm512_add_epi64(idx, _mm512_set1_epi64(2)), t, 4));
    /* sfu_sq: a partial product x >> (18 - b) for each set bit b, summed and halved */
    __m512i sq = _mm512_setzero_si512();
#define SFU_SQ_BIT(b)                                                                                              \
    sq = _mm512_mask_add_epi64(sq, _mm512_test_epi64_mask(xl, _mm512_set1_epi64(1LL << (b))), sq,                   \
                               _mm512_srli_epi64(xl, 18 - (b)));
    SFU_SQ_BIT(0) SFU_SQ_BIT(1) SFU_SQ_BIT(2) SFU_SQ_BIT(3) SFU_SQ_BIT(4) SFU_SQ_BIT(5) SFU_SQ_BIT(6)
    SFU_SQ_BIT(7) SFU_SQ_BIT(8) SFU_SQ_BIT(9) SFU_SQ_BIT(10) SFU_SQ_BIT(11) SFU_SQ_BIT(12) SFU_SQ_BIT(13)
    SFU_SQ_BIT(14) SFU_SQ_BIT(15) SFU_SQ_BIT(16)
#undef SFU_SQ_BIT
    sq = _mm512_srli_epi64(sq, 1);
    /* (c0 2^13 + c1 x + c2 sq + K) >> 15; every factor below 2^31 */
    __m512i s = _mm512_add_epi64(_mm512_slli_epi64(c0, 13), _mm512_mul_epi32(c1, xl));
    s = _mm512_add_epi64(s, _mm512_add_epi64(_mm512_mul_epi32(c2, sq), _mm512_set1_epi64(SFU_EX2_K)));
    __m512i v = _mm512_srai_epi64(s, 15);
    /* x < 0: core 2^(-24 - I), and 2^-I as 2^24 2^(-24 - I) where F = 0; else core 2^(I - 23) */
    v = _mm512_mask_mov_epi64(v, neg & f0, _mm512_set1_epi64(1LL << 24));
    __m512i e = _mm512_mask_sub_epi64(_mm512_sub_epi64(i, _mm512_set1_epi64(23)), neg,
                                      _mm512_set1_epi64(-24), i);
    __m512d p = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_add_epi64(e, _mm512_set1_epi64(1023)), 52));
    __m256 y = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_cvtepi64_pd(v), p)); /* exact product, one rounding */
    /* flush a subnormal result to zero of its sign (positive here) */
    __m256i yb = _mm256_castps_si256(y);
    __mmask8 sub = _mm256_testn_epi32_mask(yb, _mm256_set1_epi32(0x7f800000));
    y = _mm256_castsi256_ps(_mm256_maskz_mov_epi32((__mmask8)~sub, yb));
    /* |x| >= 128: +inf above, +0 below; NaN: itself */
    __mmask8 pos = _mm512_cmp_pd_mask(xd, _mm512_setzero_pd(), _CMP_GT_OQ);
    y = _mm256_mask_mov_ps(y, big, _mm256_maskz_mov_ps(pos, _mm256_set1_ps(INFINITY)));
    return _mm256_mask_mov_ps(y, _mm256_cmp_ps_mask(xs, xs, _CMP_UNORD_Q), xs);
}

#define T2 __attribute__((target("avx2,fma")))

/* The products of the segment's quadratic for the even (odd = 0) or odd 32-bit lanes, in their
 * int64 lanes: (c0 2^13 + c1 x + c2 sq + K) >> 15, every term and the sum below 2^41 and positive */
T2 static inline __m256i ex2_avx2_core(__m256i c0, __m256i c1, __m256i c2, __m256i xl, __m256i sq, const int odd)
{
    if (odd) {
        c0 = _mm256_srli_epi64(c0, 32), c1 = _mm256_srli_epi64(c1, 32), c2 = _mm256_srli_epi64(c2, 32);
        xl = _mm256_srli_epi64(xl, 32), sq = _mm256_srli_epi64(sq, 32);
    }
    __m256i lo32 = _mm256_set1_epi64x(0xffffffffLL);
    __m256i s = _mm256_add_epi64(_mm256_slli_epi64(_mm256_and_si256(c0, lo32), 13), _mm256_mul_epu32(c1, xl));
    s = _mm256_add_epi64(s, _mm256_add_epi64(_mm256_mul_epu32(c2, sq), _mm256_set1_epi64x(SFU_EX2_K)));
    return _mm256_srli_epi64(s, 15);
}

/* v 2^e for four lanes (v below 2^25, e an int32 each), the binary64 product exact, rounded once
 * to binary32 */
T2 static inline __m128 ex2_avx2_scale(__m128i v, __m128i e)
{
    __m256d p = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(_mm256_cvtepi32_epi64(e), _mm256_set1_epi64x(1023)), 52));
    return _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtepi32_pd(v), p));
}

/* ex2_x8 in AVX2: the same datapath in int32 lanes (|x| 2^23 below 2^30, the segment's square
 * below 2^22), the quadratic's sum in int64 lanes, even and odd lanes apart */
T2 static __m256 ex2_avx2(__m256 xs, const int32_t (*tab)[3])
{
    const __m256i m23 = _mm256_set1_epi32(0x7fffff), zero = _mm256_setzero_si256();
    __m256 ax = _mm256_and_ps(xs, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
    __m256i neg = _mm256_castps_si256(_mm256_cmp_ps(xs, _mm256_setzero_ps(), _CMP_LT_OQ));
    __m256 big = _mm256_cmp_ps(ax, _mm256_set1_ps(128.0f), _CMP_NLT_UQ); /* NaN too */
    /* |x| truncated to 23 fraction bits, I.F (exact: a binary32 times 2^23, below 2^30) */
    __m256i mag = _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_andnot_ps(big, ax), _mm256_set1_ps(0x1p23f)));
    __m256i i = _mm256_srli_epi32(mag, 23), f = _mm256_and_si256(mag, m23);
    __m256i f0 = _mm256_cmpeq_epi32(f, zero);
    /* a negative x takes the core at the one's complement of F */
    __m256i fc = _mm256_xor_si256(f, _mm256_and_si256(neg, m23));
    __m256i seg = _mm256_srli_epi32(fc, 17), xl = _mm256_and_si256(fc, _mm256_set1_epi32(0x1ffff));
    __m256i idx = _mm256_add_epi32(seg, _mm256_add_epi32(seg, seg));
    const int *t = &tab[0][0];
    __m256i c0 = _mm256_i32gather_epi32(t, idx, 4);
    __m256i c1 = _mm256_i32gather_epi32(t + 1, idx, 4);
    __m256i c2 = _mm256_i32gather_epi32(t + 2, idx, 4);
    /* sfu_sq: a partial product x >> (18 - b) for each set bit b, summed and halved (bits 0 and 1 add
     * x >> 18 and x >> 17: zero, x having 17 bits) */
    __m256i sq = zero;
#define SFU_SQ_BIT(b)                                                                                              \
    sq = _mm256_add_epi32(sq, _mm256_and_si256(_mm256_srai_epi32(_mm256_slli_epi32(xl, 31 - (b)), 31),             \
                                               _mm256_srli_epi32(xl, 18 - (b))));
    SFU_SQ_BIT(2) SFU_SQ_BIT(3) SFU_SQ_BIT(4) SFU_SQ_BIT(5) SFU_SQ_BIT(6)
    SFU_SQ_BIT(7) SFU_SQ_BIT(8) SFU_SQ_BIT(9) SFU_SQ_BIT(10) SFU_SQ_BIT(11) SFU_SQ_BIT(12) SFU_SQ_BIT(13)
    SFU_SQ_BIT(14) SFU_SQ_BIT(15) SFU_SQ_BIT(16)
#undef SFU_SQ_BIT
    sq = _mm256_srli_epi32(sq, 1);
    __m256i ve = ex2_avx2_core(c0, c1, c2, xl, sq, 0), vo = ex2_avx2_core(c0, c1, c2, xl, sq, 1);
    __m256i v = _mm256_blend_epi32(ve, _mm256_slli_epi64(vo, 32), 0xaa); /* below 2^25: the low words */
    /* x < 0: core 2^(-24 - I), and 2^-I as 2^24 2^(-24 - I) where F = 0; else core 2^(I - 23) */
    v = _mm256_blendv_epi8(v, _mm256_set1_epi32(1 << 24), _mm256_and_si256(neg, f0));
    __m256i e = _mm256_blendv_epi8(_mm256_sub_epi32(i, _mm256_set1_epi32(23)),
                                   _mm256_sub_epi32(_mm256_set1_epi32(-24), i), neg);
    __m256 y = _mm256_set_m128(ex2_avx2_scale(_mm256_extracti128_si256(v, 1), _mm256_extracti128_si256(e, 1)),
                               ex2_avx2_scale(_mm256_castsi256_si128(v), _mm256_castsi256_si128(e)));
    /* flush a subnormal result to zero of its sign (positive here) */
    __m256i sub = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(y), _mm256_set1_epi32(0x7f800000)), zero);
    y = _mm256_andnot_ps(_mm256_castsi256_ps(sub), y);
    /* |x| >= 128: +inf above, +0 below; NaN: itself */
    __m256 pos = _mm256_cmp_ps(xs, _mm256_setzero_ps(), _CMP_GT_OQ);
    y = _mm256_blendv_ps(y, _mm256_and_ps(pos, _mm256_set1_ps(INFINITY)), big);
    return _mm256_blendv_ps(y, xs, _mm256_cmp_ps(xs, xs, _CMP_UNORD_Q));
}

T2 static long ex2_avx2_n(float *y, const float *x, long n)
{
    const int32_t(*tab)[3] = sfu_ex2_table();
    long i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, ex2_avx2(_mm256_loadu_ps(x + i), tab));
    return i;
}

T8 static long ex2_x8_n(float *y, const float *x, long n)
{
    const int32_t(*tab)[3] = sfu_ex2_table();
    long i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, ex2_x8(_mm256_loadu_ps(x + i), tab));
    return i;
}
#endif

void sfu_ex2_n(float *y, const float *x, long n)
{
    long i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (acc_simd >= 2 && cpu_has_avx512())
        i = ex2_x8_n(y, x, n);
    else if (acc_simd && cpu_has_avx2_fma())
        i = ex2_avx2_n(y, x, n);
#endif
    for (; i < n; i++)
        y[i] = sfu_ex2(x[i]);
}

void sfu_cuda_exp2f_n(float *y, const float *x, long n)
{
    enum { CHUNK = 256 };
    float h[CHUNK];
    for (long i0 = 0; i0 < n; i0 += CHUNK) {
        long m = n - i0 < CHUNK ? n - i0 : CHUNK;
        for (long i = 0; i < m; i++)
            h[i] = x[i0 + i] < -126.0f ? x[i0 + i] * 0.5f : x[i0 + i];
        sfu_ex2_n(h, h, m);
        for (long i = 0; i < m; i++)
            y[i0 + i] = x[i0 + i] < -126.0f ? h[i] * h[i] : h[i];
    }
}
