/* dd_exp -- exponential of a double-double argument to about 2^-100 relative */
#include "dd.h"

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
