/* dd_exp -- exponential of a double-double argument to about 2^-100 relative */
#include "num/cpu.h"
#include "num/dd.h"

#include <mpfr.h>
#include <pthread.h>

static const double LN2_HI = 0x1.62e42fefa39efp-1;

/* 1/n! for n = 0..10, as double-doubles (exact rationals rounded twice). */
static const dd_t DD_INV_FACT[11] = {
    {1.0, 0.0},
    {1.0, 0.0},
    {0x1.0000000000000p-1, 0.0},
    {0x1.5555555555555p-3, 0x1.5555555555555p-57},
    {0x1.5555555555555p-5, 0x1.5555555555555p-59},
    {0x1.1111111111111p-7, 0x1.1111111111111p-63},
    {0x1.6c16c16c16c17p-10, -0x1.f49f49f49f49fp-65},
    {0x1.a01a01a01a01ap-13, 0x1.a01a01a01a01ap-73},
    {0x1.a01a01a01a01ap-16, 0x1.a01a01a01a01ap-76},
    {0x1.71de3a556c734p-19, -0x1.c154f8ddc6c00p-73},
    {0x1.27e4fb7789f5cp-22, 0x1.cbbc05b4fa99ap-76},
};

/* exp(x) = 2^m 2^(j/1024) exp(r): k = m 1024 + j = nearest integer to x 1024/ln2 and
 * r = x - k ln2/1024, |r| <= ln2/2048 < 2^-11.4. T[j] = 2^(j/1024) as double-doubles, correctly
 * rounded through MPFR once per process. expm1(r) = r + r^2/2 + r^3/6 + r^4/24 + r^5 q(r):
 * the terms through r^4 in double-double, q = 1/120 + r/720 + ... + r^4/9! in binary64 from
 * r.hi (its relative error 2^-52 is worth 2^-109 of the result; the omitted r^10/10! 2^-135). */
#define DD_EXP_TBITS 10
#define DD_EXP_TSIZE (1 << DD_EXP_TBITS)
static dd_t dd_exp_table[DD_EXP_TSIZE];
static pthread_once_t dd_exp_once = PTHREAD_ONCE_INIT;

static void dd_exp_init(void)
{
    mpfr_t t;
    mpfr_init2(t, 160);
    for (int j = 0; j < DD_EXP_TSIZE; j++) {
        mpfr_set_si(t, j, MPFR_RNDN);
        mpfr_div_2si(t, t, DD_EXP_TBITS, MPFR_RNDN);
        mpfr_exp2(t, t, MPFR_RNDN);
        dd_exp_table[j].hi = mpfr_get_d(t, MPFR_RNDN);
        mpfr_sub_d(t, t, dd_exp_table[j].hi, MPFR_RNDN);
        dd_exp_table[j].lo = mpfr_get_d(t, MPFR_RNDN);
    }
    mpfr_clear(t);
}

/* ln2/1024 = hi + mid + lo to 2^-160 relative (k reaches 2^20: a double-double ln 2 would lose
 * 20 bits; k*hi and k*mid are formed exactly with TwoProd). */
static const double LN2K_HI = 0x1.62e42fefa39efp-11, LN2K_MID = 0x1.abc9e3b39803fp-66,
                    LN2K_LO = 0x1.7b57a079a1934p-121;

dd_t dd_exp(dd_t x)
{
    if (x.hi < -745.2)
        return (dd_t){0.0, 0.0};
    if (x.hi > 709.7)
        return (dd_t){INFINITY, 0.0};
    pthread_once(&dd_exp_once, dd_exp_init);
    const double C = 0x1.8p52; /* adding and subtracting C rounds |t| < 2^51 to an integer */
    double k = (x.hi * (DD_EXP_TSIZE / LN2_HI) + C) - C;
    double p1 = k * LN2K_HI, p2 = k * LN2K_MID;
    dd_t r = dd_add(x, (dd_t){-p1, -fma(k, LN2K_HI, -p1)});
    r = dd_add(r, (dd_t){-p2, -fma(k, LN2K_MID, -p2)});
    r = dd_add(r, (dd_t){-k * LN2K_LO, 0.0});
    double h = r.hi;
    double q = DD_INV_FACT[5].hi +
               h * (DD_INV_FACT[6].hi + h * (DD_INV_FACT[7].hi + h * (DD_INV_FACT[8].hi + h * DD_INV_FACT[9].hi)));
    dd_t e = dd_add(DD_INV_FACT[4], dd_mul(r, (dd_t){q, 0.0}));
    for (int n = 3; n >= 1; n--)
        e = dd_add(DD_INV_FACT[n], dd_mul(r, e));
    e = dd_mul(r, e);
    long ki = (long)k;
    long j = ki & (DD_EXP_TSIZE - 1), m = (ki - j) / DD_EXP_TSIZE;
    dd_t t = dd_exp_table[j];
    dd_t y = dd_add(t, dd_mul(t, e));
    if (m < -1022) /* 2^m itself is subnormal */
        return (dd_t){ldexp(y.hi, (int)m), ldexp(y.lo, (int)m)};
    double pm = dd_pow2((int)m);
    return (dd_t){y.hi * pm, y.lo * pm};
}

dd_t dd_sum_array(const double *hi, const double *lo, long n)
{
    dd_t a[4] = {{0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}};
    long j = 0;
    for (; j + 4 <= n; j += 4)
        for (int k = 0; k < 4; k++)
            a[k] = dd_add(a[k], (dd_t){hi[j + k], lo[j + k]});
    for (; j < n; j++)
        a[j % 4] = dd_add(a[j % 4], (dd_t){hi[j], lo[j]});
    return dd_add(dd_add(a[0], a[1]), dd_add(a[2], a[3]));
}

/* ---- dd_exp_array: the same operations, four lanes at a time with AVX2 ---- */
static dd_t dd_exp_shifted(dd_t x, double m, dd_t scale)
{
    return dd_exp(dd_mul(dd_add(x, (dd_t){-m, 0.0}), scale));
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DD_TGT __attribute__((target("avx2,fma")))

typedef struct {
    __m256d hi, lo;
} dd4_t;

DD_TGT static inline dd4_t dd4_two_sum(__m256d a, __m256d b)
{
    __m256d s = _mm256_add_pd(a, b), bb = _mm256_sub_pd(s, a);
    return (dd4_t){s, _mm256_add_pd(_mm256_sub_pd(a, _mm256_sub_pd(s, bb)), _mm256_sub_pd(b, bb))};
}

DD_TGT static inline dd4_t dd4_fast_two_sum(__m256d a, __m256d b)
{
    __m256d s = _mm256_add_pd(a, b);
    return (dd4_t){s, _mm256_sub_pd(b, _mm256_sub_pd(s, a))};
}

DD_TGT static inline dd4_t dd4_add(dd4_t x, dd4_t y)
{
    dd4_t s = dd4_two_sum(x.hi, y.hi), t = dd4_two_sum(x.lo, y.lo);
    s.lo = _mm256_add_pd(s.lo, t.hi);
    s = dd4_fast_two_sum(s.hi, s.lo);
    s.lo = _mm256_add_pd(s.lo, t.lo);
    return dd4_fast_two_sum(s.hi, s.lo);
}

DD_TGT static inline dd4_t dd4_mul(dd4_t x, dd4_t y)
{
    __m256d p = _mm256_mul_pd(x.hi, y.hi);
    __m256d e = _mm256_fmsub_pd(x.hi, y.hi, p);
    e = _mm256_add_pd(e, _mm256_add_pd(_mm256_mul_pd(x.hi, y.lo), _mm256_mul_pd(x.lo, y.hi)));
    return dd4_fast_two_sum(p, e);
}

DD_TGT static inline dd4_t dd4_set(dd_t a) { return (dd4_t){_mm256_set1_pd(a.hi), _mm256_set1_pd(a.lo)}; }

/* dd_exp_shifted on four lanes; lanes outside the common range (result 0, inf, subnormal
 * scale) are redone by the scalar code, so every lane equals dd_exp_shifted bit for bit. */
DD_TGT static void dd_exp4(double *hi, double *lo, double m, dd_t scale)
{
    const __m256d C = _mm256_set1_pd(0x1.8p52), zero = _mm256_setzero_pd();
    const dd4_t in = {_mm256_loadu_pd(hi), _mm256_loadu_pd(lo)};
    dd4_t x = in;
    x = dd4_mul(dd4_add(x, (dd4_t){_mm256_set1_pd(-m), zero}), dd4_set(scale));
    __m256d k = _mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(x.hi, _mm256_set1_pd(DD_EXP_TSIZE / LN2_HI)), C), C);
    __m256d p1 = _mm256_mul_pd(k, _mm256_set1_pd(LN2K_HI)), p2 = _mm256_mul_pd(k, _mm256_set1_pd(LN2K_MID));
    __m256d nz = _mm256_set1_pd(-0.0);
    dd4_t r = dd4_add(x, (dd4_t){_mm256_xor_pd(p1, nz), _mm256_xor_pd(_mm256_fmsub_pd(k, _mm256_set1_pd(LN2K_HI), p1), nz)});
    r = dd4_add(r, (dd4_t){_mm256_xor_pd(p2, nz), _mm256_xor_pd(_mm256_fmsub_pd(k, _mm256_set1_pd(LN2K_MID), p2), nz)});
    r = dd4_add(r, (dd4_t){_mm256_xor_pd(_mm256_mul_pd(k, _mm256_set1_pd(LN2K_LO)), nz), zero});
    __m256d h = r.hi;
    __m256d q = _mm256_add_pd(
        _mm256_set1_pd(DD_INV_FACT[5].hi),
        _mm256_mul_pd(h, _mm256_add_pd(_mm256_set1_pd(DD_INV_FACT[6].hi),
                                       _mm256_mul_pd(h, _mm256_add_pd(_mm256_set1_pd(DD_INV_FACT[7].hi),
                                                                      _mm256_mul_pd(h, _mm256_add_pd(_mm256_set1_pd(DD_INV_FACT[8].hi),
                                                                                                     _mm256_mul_pd(h, _mm256_set1_pd(DD_INV_FACT[9].hi)))))))));
    dd4_t e = dd4_add(dd4_set(DD_INV_FACT[4]), dd4_mul(r, (dd4_t){q, zero}));
    for (int n = 3; n >= 1; n--)
        e = dd4_add(dd4_set(DD_INV_FACT[n]), dd4_mul(r, e));
    e = dd4_mul(r, e);
    __m128i ki = _mm256_cvtpd_epi32(k);
    __m128i j = _mm_and_si128(ki, _mm_set1_epi32(DD_EXP_TSIZE - 1));
    __m128i mm = _mm_srai_epi32(_mm_sub_epi32(ki, j), DD_EXP_TBITS);
    __m128i j2 = _mm_slli_epi32(j, 1);
    dd4_t t = {_mm256_i32gather_pd(&dd_exp_table[0].hi, j2, 8), _mm256_i32gather_pd(&dd_exp_table[0].lo, j2, 8)};
    dd4_t y = dd4_add(t, dd4_mul(t, e));
    __m256i pw = _mm256_slli_epi64(_mm256_add_epi64(_mm256_cvtepi32_epi64(mm), _mm256_set1_epi64x(1023)), 52);
    __m256d p = _mm256_castsi256_pd(pw);
    __m256d oh = _mm256_mul_pd(y.hi, p), ol = _mm256_mul_pd(y.lo, p);
    /* lanes the scalar code must redo: x.hi < -745.2, x.hi > 709.7, NaN, or 2^m subnormal */
    __m256d out = _mm256_or_pd(_mm256_cmp_pd(x.hi, _mm256_set1_pd(-745.2), _CMP_NGE_UQ),
                               _mm256_cmp_pd(x.hi, _mm256_set1_pd(709.7), _CMP_GT_OQ));
    int redo = _mm256_movemask_pd(out) | _mm_movemask_ps(_mm_castsi128_ps(_mm_cmplt_epi32(mm, _mm_set1_epi32(-1022))));
    if (redo) {
        double xh[4], ih[4], il[4];
        int mi[4];
        _mm256_storeu_pd(xh, x.hi);
        _mm256_storeu_pd(ih, in.hi);
        _mm256_storeu_pd(il, in.lo);
        _mm_storeu_si128((__m128i *)mi, mm);
        _mm256_storeu_pd(hi, oh);
        _mm256_storeu_pd(lo, ol);
        for (int l = 0; l < 4; l++)
            if (xh[l] < -745.2 || xh[l] > 709.7 || mi[l] < -1022 || xh[l] != xh[l]) {
                dd_t s = dd_exp_shifted((dd_t){ih[l], il[l]}, m, scale);
                hi[l] = s.hi;
                lo[l] = s.lo;
            }
        return;
    }
    _mm256_storeu_pd(hi, oh);
    _mm256_storeu_pd(lo, ol);
}

#endif

void dd_exp_array(double *hi, double *lo, long n, double m, dd_t scale)
{
    long j = 0;
    pthread_once(&dd_exp_once, dd_exp_init);
#if defined(__x86_64__) && defined(__GNUC__)
    if (cpu_has_avx2_fma())
        for (; j + 4 <= n; j += 4)
            dd_exp4(hi + j, lo + j, m, scale);
#endif
    for (; j < n; j++) {
        dd_t p = dd_exp_shifted((dd_t){hi[j], lo[j]}, m, scale);
        hi[j] = p.hi;
        lo[j] = p.lo;
    }
}
