/* acc_x16 -- the binary64 and FP16-accumulator GEMM kernels in AVX-512 (see acc_x16.h) */
#include "num/acc/acc_x16.h"

#include <math.h>
#include <stdint.h>

#include "num/acc/acc_model.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define X16 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma")))
#define X16_MR16 4

X16 void acc_kern64_x16(double *c, const double *ap, long as, const double *bp, long K)
{
    __m512d acc[ACC_X16_MR64][2];
    _Pragma("GCC unroll 12") for (int r = 0; r < ACC_X16_MR64; r++) {
        acc[r][0] = _mm512_loadu_pd(c + r * ACC_X16_NR);
        acc[r][1] = _mm512_loadu_pd(c + r * ACC_X16_NR + 8);
    }
    for (long k = 0; k < K; k++) {
        __m512d b0 = _mm512_loadu_pd(bp + k * ACC_X16_NR), b1 = _mm512_loadu_pd(bp + k * ACC_X16_NR + 8);
        _Pragma("GCC unroll 12") for (int r = 0; r < ACC_X16_MR64; r++) {
            __m512d av = _mm512_set1_pd(ap[k * as + r]);
            acc[r][0] = _mm512_fmadd_pd(av, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_pd(av, b1, acc[r][1]);
        }
    }
    _Pragma("GCC unroll 12") for (int r = 0; r < ACC_X16_MR64; r++) {
        _mm512_storeu_pd(c + r * ACC_X16_NR, acc[r][0]);
        _mm512_storeu_pd(c + r * ACC_X16_NR + 8, acc[r][1]);
    }
}

/* acc.c's kern32 (binary32 chains in k order, fused or a rounded product then a rounded sum) on
 * twelve rows (packed k-major: one pointer, where twelve row pointers left GCC short of
 * registers) against a panel of sixteen columns: one vector of sixteen per row */
X16 static inline __attribute__((always_inline)) void x16_kern32(float *c, const float *ap, const float *bp, long K,
                                                                 const int fused)
{
    __m512 acc[ACC_X16_MR32];
    _Pragma("GCC unroll 12") for (int r = 0; r < ACC_X16_MR32; r++) acc[r] = _mm512_loadu_ps(c + r * 16);
    for (long k = 0; k < K; k++) {
        __m512 b = _mm512_loadu_ps(bp + k * 16);
        _Pragma("GCC unroll 12") for (int r = 0; r < ACC_X16_MR32; r++) {
            __m512 av = _mm512_set1_ps(ap[k * ACC_X16_MR32 + r]);
            acc[r] = fused ? _mm512_fmadd_ps(av, b, acc[r]) : _mm512_add_ps(acc[r], _mm512_mul_ps(av, b));
        }
    }
    _Pragma("GCC unroll 12") for (int r = 0; r < ACC_X16_MR32; r++) _mm512_storeu_ps(c + r * 16, acc[r]);
}

X16 void acc_kern32_x16(float *c, const float *ap, const float *bp, long K, int fused)
{
    if (fused)
        x16_kern32(c, ap, bp, K, 1);
    else
        x16_kern32(c, ap, bp, K, 0);
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

X16 void acc_kern16_x16(double *c, const double *ap, long as, const double *bp, long K)
{
    __m512d acc[X16_MR16][2];
    _Pragma("GCC unroll 8") for (int r = 0; r < X16_MR16; r++) {
        acc[r][0] = _mm512_loadu_pd(c + r * ACC_X16_NR);
        acc[r][1] = _mm512_loadu_pd(c + r * ACC_X16_NR + 8);
    }
    for (long k0 = 0; k0 < K; k0 += ACC_FP16_K) {
        long k1 = k0 + ACC_FP16_K < K ? k0 + ACC_FP16_K : K;
        for (long k = k0; k < k1; k++) {
            __m512d b0 = _mm512_loadu_pd(bp + k * ACC_X16_NR), b1 = _mm512_loadu_pd(bp + k * ACC_X16_NR + 8);
            _Pragma("GCC unroll 8") for (int r = 0; r < X16_MR16; r++) {
                __m512d av = _mm512_set1_pd(ap[k * as + r]);
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

/* x16_round16 for the kernels below, in fewer operations: c0 = 1.5 * 2^E from x's exponent
 * field (at least 1.5 * 2^-14), then (x + c0 2^42) - c0 2^42 as two fused operations (c0 2^42
 * is exact, so each is the same single rounding), on the signed x (x + c stays in c's binade
 * for either sign, and RNE is symmetric), the sign of x or-ed back (a negative sum that rounds
 * to zero is -0). It does not test for overflow: with `track` it keeps the largest c0 met in
 * *cmax (an infinite or NaN x gives a NaN c0, above any finite one as an integer). */
X16 static inline __attribute__((always_inline)) __m512d x16_round16_lazy(__m512d x, __m512i *cmax, const int track)
{
    const __m512i expmask = _mm512_set1_epi64(0x7ff0000000000000LL), half = _mm512_set1_epi64(1LL << 51);
    const __m512i sign = _mm512_set1_epi64(INT64_MIN);
    const __m512d cmin = _mm512_set1_pd(0x1.8p-14), s42 = _mm512_set1_pd(0x1p42);
    __m512i xi = _mm512_castpd_si512(x);
    __m512i c0 = _mm512_ternarylogic_epi64(xi, expmask, half, 0xea); /* (x & expmask) | half */
    if (track)
        *cmax = _mm512_max_epu64(*cmax, c0);
    __m512d c = _mm512_max_pd(_mm512_castsi512_pd(c0), cmin); /* a NaN c0 gives cmin */
    __m512d r = _mm512_fnmadd_pd(c, s42, _mm512_fmadd_pd(c, s42, x));
    return _mm512_castsi512_pd(_mm512_ternarylogic_epi64(_mm512_castpd_si512(r), xi, sign, 0xf8)); /* r | (x & sign) */
}

/* The FP16 accumulator on eight rows, for operands whose products are exact in binary64 (see
 * acc_x16.h): each product and its addition are one fma, RN(acc + a b) as acc_kern16_x16's
 * multiply then add. With `track`, where a sum reached 2^15 (a rounding might overflow to
 * infinity) or was not finite, the tile is recomputed by acc_kern16_x16's operations, which
 * test each sum; without, the caller has shown that no sum can reach 2^15. */
X16 static inline __attribute__((always_inline)) void x16_kern16f(double *c, const double *ap, long as,
                                                                  const double *bp, long K, const int track)
{
    __m512d acc[ACC_X16_MR16F][2];
    __m512i cmax = _mm512_setzero_si512();
    _Pragma("GCC unroll 8") for (int r = 0; r < ACC_X16_MR16F; r++) {
        acc[r][0] = _mm512_loadu_pd(c + r * ACC_X16_NR);
        acc[r][1] = _mm512_loadu_pd(c + r * ACC_X16_NR + 8);
    }
    for (long k0 = 0; k0 < K; k0 += ACC_FP16_K) {
        long k1 = k0 + ACC_FP16_K < K ? k0 + ACC_FP16_K : K;
        for (long k = k0; k < k1; k++) {
            __m512d b0 = _mm512_loadu_pd(bp + k * ACC_X16_NR), b1 = _mm512_loadu_pd(bp + k * ACC_X16_NR + 8);
            _Pragma("GCC unroll 8") for (int r = 0; r < ACC_X16_MR16F; r++) {
                __m512d av = _mm512_set1_pd(ap[k * as + r]);
                acc[r][0] = _mm512_fmadd_pd(av, b0, acc[r][0]);
                acc[r][1] = _mm512_fmadd_pd(av, b1, acc[r][1]);
            }
        }
        _Pragma("GCC unroll 8") for (int r = 0; r < ACC_X16_MR16F; r++) {
            acc[r][0] = x16_round16_lazy(acc[r][0], &cmax, track);
            acc[r][1] = x16_round16_lazy(acc[r][1], &cmax, track);
        }
    }
    if (track && _mm512_cmpge_epu64_mask(cmax, _mm512_castpd_si512(_mm512_set1_pd(0x1.8p15)))) {
        for (int r = 0; r < ACC_X16_MR16F; r += X16_MR16)
            acc_kern16_x16(c + r * ACC_X16_NR, ap + r, as, bp, K); /* from c as it came */
        return;
    }
    _Pragma("GCC unroll 8") for (int r = 0; r < ACC_X16_MR16F; r++) {
        _mm512_storeu_pd(c + r * ACC_X16_NR, acc[r][0]);
        _mm512_storeu_pd(c + r * ACC_X16_NR + 8, acc[r][1]);
    }
}

X16 void acc_kern16f_x16(double *c, const double *ap, long as, const double *bp, long K)
{
    x16_kern16f(c, ap, as, bp, K, 1);
}

X16 void acc_kern16b_x16(double *c, const double *ap, long as, const double *bp, long K)
{
    x16_kern16f(c, ap, as, bp, K, 0);
}

/* Mask of the lanes of v that are not binary32 values (NaN included); *amax = max(*amax, |v|). Nothing
 * where !check (0). */
X16 static inline __attribute__((always_inline)) __mmask8 x16_not_f32(__m512d v, __m512d *amax, const int check)
{
    if (!check)
        return 0;
    *amax = _mm512_max_pd(*amax, _mm512_abs_pd(v));
    return _mm512_cmp_pd_mask(_mm512_cvtps_pd(_mm512_cvtpd_ps(v)), v, _CMP_NEQ_UQ);
}

/* The scalar x16_not_f32. */
static inline int not_f32(double v, double *amax, const int check)
{
    if (!check)
        return 0;
    *amax = fabs(v) > *amax ? fabs(v) : *amax;
    return (double)(float)v != v;
}

/* acc_pack64_x16, with its test of the values where check */
X16 static inline __attribute__((always_inline)) int x16_pack64(double *bp, const double *B, long ldb, int b_trans,
                                                                long j0, long nr, long K, double *bmax, const int check)
{
    const long w = ACC_X16_NR;
    __mmask8 bad = 0;
    __m512d am = _mm512_setzero_pd();
    double m = 0;
    if (nr < w)
        for (long i = 0; i < K * w; i++)
            bp[i] = 0.0;
    long j = 0;
    if (!b_trans) {
        for (long k = 0; nr == w && k < K; k++)
            for (int h = 0; h < w; h += 8) {
                /* eight rows ahead into L2 (base with fp64: 0.974 of the time with both prefetches) */
                _mm_prefetch((const char *)(B + (k + 8) * ldb + j0 + h), _MM_HINT_T1);
                __m512d v = _mm512_loadu_pd(B + k * ldb + j0 + h);
                bad |= x16_not_f32(v, &am, check);
                _mm512_storeu_pd(bp + k * w + h, v);
            }
        for (long k = 0; nr < w && k < K; k++)
            for (j = 0; j < nr; j++)
                bad |= not_f32(bp[k * w + j] = B[k * ldb + j0 + j], &m, check);
        if (check)
            *bmax = _mm512_reduce_max_pd(am) > m ? _mm512_reduce_max_pd(am) : m;
        return !bad;
    }
    for (; j + 8 <= nr; j += 8) { /* eight rows of B, 8 x 8 blocks transposed in registers */
        const double *b = B + (j0 + j) * ldb;
        long k = 0;
        for (; k + 8 <= K; k += 8) {
            __m512d r[8], t[8], u[8];
            for (int i = 0; i < 8; i++) {
                _mm_prefetch((const char *)(b + i * ldb + k + 64), _MM_HINT_T1); /* 512 bytes ahead in each row */
                r[i] = _mm512_loadu_pd(b + i * ldb + k);
                bad |= x16_not_f32(r[i], &am, check);
            }
            for (int i = 0; i < 8; i += 2) { /* t[i] : k even, t[i+1] : k odd, rows i, i+1 in pairs */
                t[i] = _mm512_unpacklo_pd(r[i], r[i + 1]);
                t[i + 1] = _mm512_unpackhi_pd(r[i], r[i + 1]);
            }
            for (int h = 0; h < 8; h += 4) /* rows h..h+3: k 0,4 | 2,6 | 1,5 | 3,7 */
                for (int i = 0; i < 2; i++) {
                    u[h + 2 * i] = _mm512_shuffle_f64x2(t[h + i], t[h + i + 2], 0x88);
                    u[h + 2 * i + 1] = _mm512_shuffle_f64x2(t[h + i], t[h + i + 2], 0xdd);
                }
            static const int ks[4][2] = {{0, 4}, {2, 6}, {1, 5}, {3, 7}};
            for (int i = 0; i < 4; i++) {
                _mm512_storeu_pd(bp + (k + ks[i][0]) * w + j, _mm512_shuffle_f64x2(u[i], u[i + 4], 0x88));
                _mm512_storeu_pd(bp + (k + ks[i][1]) * w + j, _mm512_shuffle_f64x2(u[i], u[i + 4], 0xdd));
            }
        }
        for (; k < K; k++)
            for (int i = 0; i < 8; i++)
                bad |= not_f32(bp[k * w + j + i] = b[i * ldb + k], &m, check);
    }
    for (; j < nr; j++)
        for (long k = 0; k < K; k++)
            bad |= not_f32(bp[k * w + j] = B[(j0 + j) * ldb + k], &m, check);
    if (check)
        *bmax = _mm512_reduce_max_pd(am) > m ? _mm512_reduce_max_pd(am) : m;
    return check && !bad;
}

X16 int acc_pack64_x16(double *bp, const double *B, long ldb, int b_trans, long j0, long nr, long K, double *bmax)
{
    return bmax ? x16_pack64(bp, B, ldb, b_trans, j0, nr, K, bmax, 1) : x16_pack64(bp, B, ldb, b_trans, j0, nr, K, NULL, 0);
}

X16 int acc_f32_values_x16(const double *X, long ld, long rows, long cols, double *sum_max)
{
    __mmask8 bad = 0;
    double sm = 0;
    for (long i = 0; i < rows && !bad; i++) {
        const double *x = X + i * ld;
        __m512d s = _mm512_setzero_pd();
        double s1 = 0, unused = 0;
        long j = 0;
        for (; j + 8 <= cols; j += 8) {
            __m512d v = _mm512_loadu_pd(x + j);
            bad |= _mm512_cmp_pd_mask(_mm512_cvtps_pd(_mm512_cvtpd_ps(v)), v, _CMP_NEQ_UQ);
            s = _mm512_add_pd(s, _mm512_abs_pd(v));
        }
        for (; j < cols; j++) {
            bad |= not_f32(x[j], &unused, 1);
            s1 += fabs(x[j]);
        }
        s1 += _mm512_reduce_add_pd(s);
        sm = s1 > sm ? s1 : sm;
    }
    *sum_max = sm;
    return !bad;
}
#else
int acc_f32_values_x16(const double *X, long ld, long rows, long cols, double *sum_max)
{
    (void)X, (void)ld, (void)rows, (void)cols, (void)sum_max;
    return 0;
}
void acc_kern16b_x16(double *c, const double *ap, long as, const double *bp, long K)
{
    (void)c, (void)ap, (void)as, (void)bp, (void)K;
}
int acc_pack64_x16(double *bp, const double *B, long ldb, int b_trans, long j0, long nr, long K, double *bmax)
{
    (void)bp, (void)B, (void)ldb, (void)b_trans, (void)j0, (void)nr, (void)K, (void)bmax;
    return 0;
}
void acc_kern16f_x16(double *c, const double *ap, long as, const double *bp, long K)
{
    (void)c, (void)ap, (void)as, (void)bp, (void)K;
}
void acc_kern32_x16(float *c, const float *ap, const float *bp, long K, int fused)
{
    (void)c, (void)ap, (void)bp, (void)K, (void)fused;
}
void acc_kern64_x16(double *c, const double *ap, long as, const double *bp, long K)
{
    (void)c, (void)ap, (void)as, (void)bp, (void)K;
}
void acc_kern16_x16(double *c, const double *ap, long as, const double *bp, long K)
{
    (void)c, (void)ap, (void)as, (void)bp, (void)K;
}
#endif
