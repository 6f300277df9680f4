/* dd_exp -- exponential of a double-double argument to about 2^-100 relative */
#include "dd.h"

/* ln 2 = hi + mid + lo to 2^-160 relative (the argument reduction multiplies it by up to
 * 1075, so a double-double ln 2 would lose 10 bits). */
static const double LN2_HI = 0x1.62e42fefa39efp-1, LN2_MID = 0x1.abc9e3b39803fp-56,
                    LN2_LO = 0x1.7b57a079a1934p-111;

/* 1/n! for n = 2..10, as double-doubles (exact rationals rounded twice). */
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

/* Squarings after the argument reduction r -> r / 2^DD_EXP_SQUARINGS. */
#define DD_EXP_SQUARINGS 10
#define DD_EXP_TERMS 10

/* exp(x) = 2^k exp(r), r = x - k ln2, |r| <= ln2/2; exp(r) = (1 + e)^(2^10) with
 * e = expm1(r / 2^10) from its Taylor series (|r/2^10| < 2^-11, so the 10-term series is
 * exact to 2^-120 relative); each squaring keeps the expm1 form, e' = 2e + e^2, so the
 * leading 1 never swallows low-order bits. k ln2 is formed from exact products k*hi and
 * k*mid (TwoProd) and k*lo, so r is known to about 2^-106 absolute for every k. */
dd_t dd_exp(dd_t x)
{
    if (x.hi < -745.2)
        return (dd_t){0.0, 0.0};
    if (x.hi > 709.7)
        return (dd_t){INFINITY, 0.0};
    double k = nearbyint(x.hi / LN2_HI);
    double p1 = k * LN2_HI, p2 = k * LN2_MID;
    dd_t r = dd_add(x, (dd_t){-p1, -fma(k, LN2_HI, -p1)});
    r = dd_add(r, (dd_t){-p2, -fma(k, LN2_MID, -p2)});
    r = dd_add(r, (dd_t){-k * LN2_LO, 0.0});
    r.hi = ldexp(r.hi, -DD_EXP_SQUARINGS);
    r.lo = ldexp(r.lo, -DD_EXP_SQUARINGS);
    /* Horner: e = r (1 + r (1/2! + r (1/3! + ... ))) */
    dd_t e = DD_INV_FACT[DD_EXP_TERMS];
    for (int n = DD_EXP_TERMS - 1; n >= 1; n--)
        e = dd_add(DD_INV_FACT[n], dd_mul(r, e));
    e = dd_mul(r, e);
    for (int i = 0; i < DD_EXP_SQUARINGS; i++)
        e = dd_add(dd_add(e, e), dd_mul(e, e));
    dd_t y = dd_add((dd_t){1.0, 0.0}, e);
    int ki = (int)k;
    return (dd_t){ldexp(y.hi, ki), ldexp(y.lo, ki)};
}
