/* acc_x16 -- the binary64 and FP16-accumulator GEMM kernels in AVX-512 (see acc_x16.h) */
#include "num/acc_x16.h"

#include <math.h>

#include "num/acc.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define X16 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma")))
#define X16_MR64 6
#define X16_MR16 4

X16 void acc_kern64_x16(double *c, const double *const *a, const double *bp, long K)
{
    __m512d acc[X16_MR64][2];
    _Pragma("GCC unroll 8") for (int r = 0; r < X16_MR64; r++) acc[r][0] = acc[r][1] = _mm512_setzero_pd();
    for (long k = 0; k < K; k++) {
        __m512d b0 = _mm512_loadu_pd(bp + k * ACC_X16_NR), b1 = _mm512_loadu_pd(bp + k * ACC_X16_NR + 8);
        _Pragma("GCC unroll 8") for (int r = 0; r < X16_MR64; r++) {
            __m512d av = _mm512_set1_pd(a[r][k]);
            acc[r][0] = _mm512_fmadd_pd(av, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_pd(av, b1, acc[r][1]);
        }
    }
    _Pragma("GCC unroll 8") for (int r = 0; r < X16_MR64; r++) {
        _mm512_storeu_pd(c + r * ACC_X16_NR, acc[r][0]);
        _mm512_storeu_pd(c + r * ACC_X16_NR + 8, acc[r][1]);
    }
}

/* acc.c's kern32 (binary32 chains in k order, fused or a rounded product then a rounded sum) on
 * twelve rows against a panel of sixteen columns: one vector of sixteen per row */
X16 static inline __attribute__((always_inline)) void x16_kern32(float *c, const float *const *a, const float *bp,
                                                                 long K, const int fused)
{
    __m512 acc[ACC_X16_MR32];
    _Pragma("GCC unroll 12") for (int r = 0; r < ACC_X16_MR32; r++) acc[r] = _mm512_loadu_ps(c + r * 16);
    for (long k = 0; k < K; k++) {
        __m512 b = _mm512_loadu_ps(bp + k * 16);
        _Pragma("GCC unroll 12") for (int r = 0; r < ACC_X16_MR32; r++) {
            __m512 av = _mm512_set1_ps(a[r][k]);
            acc[r] = fused ? _mm512_fmadd_ps(av, b, acc[r]) : _mm512_add_ps(acc[r], _mm512_mul_ps(av, b));
        }
    }
    _Pragma("GCC unroll 12") for (int r = 0; r < ACC_X16_MR32; r++) _mm512_storeu_ps(c + r * 16, acc[r]);
}

X16 void acc_kern32_x16(float *c, const float *const *a, const float *bp, long K, int fused)
{
    if (fused)
        x16_kern32(c, a, bp, K, 1);
    else
        x16_kern32(c, a, bp, K, 0);
}

/* acc.c's acc_round16_pd in eight lanes: r = (|x| + c) - c with c = 1.5 * 2^(E + 42) (at least
 * that of E = -14) rounds |x| to binary16's quantum in RNE; |x| >= 65520 is infinity; NaN stays
 * NaN (max keeps its second operand, as vmaxpd does in either width); the sign is put back. */
X16 static inline __attribute__((always_inline)) __m512d x16_round16(__m512d x)
{
    const __m512i absmask = _mm512_set1_epi64(0x7fffffffffffffffLL), expmask = _mm512_set1_epi64(0x7ff0000000000000LL);
    const __m512i to_c = _mm512_set1_epi64((42LL << 52) | (1LL << 51));
    const __m512d cmin = _mm512_castsi512_pd(_mm512_set1_epi64(((1023LL - 14 + 42) << 52) | (1LL << 51)));
    const __m512d big = _mm512_set1_pd(65520.0), inf = _mm512_set1_pd(INFINITY);
    __m512i xi = _mm512_castpd_si512(x);
    __m512d ax = _mm512_castsi512_pd(_mm512_and_si512(xi, absmask));
    __m512i sign = _mm512_andnot_si512(absmask, xi);
    __m512d c = _mm512_castsi512_pd(_mm512_add_epi64(_mm512_and_si512(_mm512_castpd_si512(ax), expmask), to_c));
    c = _mm512_max_pd(c, cmin);
    __m512d r = _mm512_sub_pd(_mm512_add_pd(ax, c), c);
    r = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(ax, big, _CMP_GE_OQ), r, inf);
    return _mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(r), sign));
}

X16 void acc_kern16_x16(double *c, const double *const *a, const double *bp, long K)
{
    __m512d acc[X16_MR16][2];
    _Pragma("GCC unroll 8") for (int r = 0; r < X16_MR16; r++) acc[r][0] = acc[r][1] = _mm512_setzero_pd();
    for (long k0 = 0; k0 < K; k0 += ACC_FP16_K) {
        long k1 = k0 + ACC_FP16_K < K ? k0 + ACC_FP16_K : K;
        for (long k = k0; k < k1; k++) {
            __m512d b0 = _mm512_loadu_pd(bp + k * ACC_X16_NR), b1 = _mm512_loadu_pd(bp + k * ACC_X16_NR + 8);
            _Pragma("GCC unroll 8") for (int r = 0; r < X16_MR16; r++) {
                __m512d av = _mm512_set1_pd(a[r][k]);
                acc[r][0] = _mm512_add_pd(acc[r][0], _mm512_mul_pd(av, b0));
                acc[r][1] = _mm512_add_pd(acc[r][1], _mm512_mul_pd(av, b1));
            }
        }
        _Pragma("GCC unroll 8") for (int r = 0; r < X16_MR16; r++) {
            acc[r][0] = x16_round16(acc[r][0]);
            acc[r][1] = x16_round16(acc[r][1]);
        }
    }
    _Pragma("GCC unroll 8") for (int r = 0; r < X16_MR16; r++) {
        _mm512_storeu_pd(c + r * ACC_X16_NR, acc[r][0]);
        _mm512_storeu_pd(c + r * ACC_X16_NR + 8, acc[r][1]);
    }
}
#else
void acc_kern32_x16(float *c, const float *const *a, const float *bp, long K, int fused)
{
    (void)c, (void)a, (void)bp, (void)K, (void)fused;
}
void acc_kern64_x16(double *c, const double *const *a, const double *bp, long K)
{
    (void)c, (void)a, (void)bp, (void)K;
}
void acc_kern16_x16(double *c, const double *const *a, const double *bp, long K)
{
    (void)c, (void)a, (void)bp, (void)K;
}
#endif
