/* dd -- double-double arithmetic (error-free transformations with FMA) for Golden */
#ifndef AMLA_DD_H
#define AMLA_DD_H

#include <math.h>

/* A value hi + lo with |lo| <= ulp(hi)/2. Each operation below has relative error at most
 * a few units of 2^-106 (Joldes, Muller, Popescu, "Tight and rigorous error bounds for basic
 * building blocks of double-word arithmetic", ACM TOMS 2017: add 3u^2, mul 5u^2 (we use the
 * variant with the lo*lo term dropped: 6u^2), div 15u^2, u = 2^-53). */
typedef struct {
    double hi, lo;
} dd_t;

static inline dd_t dd_two_sum(double a, double b)
{
    double s = a + b, bb = s - a;
    dd_t r = {s, (a - (s - bb)) + (b - bb)};
    return r;
}

static inline dd_t dd_fast_two_sum(double a, double b)
{
    double s = a + b;
    dd_t r = {s, b - (s - a)};
    return r;
}

static inline dd_t dd_add(dd_t x, dd_t y)
{
    dd_t s = dd_two_sum(x.hi, y.hi), t = dd_two_sum(x.lo, y.lo);
    s.lo += t.hi;
    s = dd_fast_two_sum(s.hi, s.lo);
    s.lo += t.lo;
    return dd_fast_two_sum(s.hi, s.lo);
}

static inline dd_t dd_mul(dd_t x, dd_t y)
{
    double p = x.hi * y.hi;
    double e = fma(x.hi, y.hi, -p);
    e += x.hi * y.lo + x.lo * y.hi;
    return dd_fast_two_sum(p, e);
}

static inline dd_t dd_div(dd_t x, dd_t y)
{
    double q1 = x.hi / y.hi;
    dd_t q1y = dd_mul((dd_t){q1, 0.0}, y);
    dd_t r = dd_add(x, (dd_t){-q1y.hi, -q1y.lo});
    double q2 = r.hi / y.hi;
    dd_t q2y = dd_mul((dd_t){q2, 0.0}, y);
    r = dd_add(r, (dd_t){-q2y.hi, -q2y.lo});
    double q3 = r.hi / y.hi;
    dd_t q = dd_fast_two_sum(q1, q2);
    return dd_add(q, (dd_t){q3, 0.0});
}

/* 2^e for -1022 <= e <= 1023, built from its bits (multiplying by it is exact unless the
 * product leaves the normal range, and then rounds as ldexp does). */
static inline double dd_pow2(int e)
{
    union {
        unsigned long long u;
        double d;
    } b = {(unsigned long long)(e + 1023) << 52};
    return b.d;
}

/* exp(x) for a double-double x; relative error below 2^-100 (tested against MPFR). */
dd_t dd_exp(dd_t x);

/* In place: (hi, lo)[j] <- dd_exp(((hi, lo)[j] - m) * scale) for j < n, every element bit for
 * bit what dd_exp(dd_mul(dd_add(x, -m), scale)) gives: thirty-two at a time (four vectors of eight,
 * through the chain together) with AVX-512, sixteen (four vectors of four) with AVX2, where the processor has them and dd_simd allows (2, the default: either; 1: AVX2 only;
 * 0: one at a time; for tests). */
void dd_exp_array(double *hi, double *lo, long n, double m, dd_t scale);
extern int dd_simd;

/* sum_j (hi, lo)[j] for j < n in double-double: four running sums (element j into sum j mod 4)
 * combined pairwise at the end, so the additions overlap. */
dd_t dd_sum_array(const double *hi, const double *lo, long n);

/* s[r] = dd_sum_array(hi + r ld, lo + r ld, n[r]) for r < rows, bit for bit: with AVX-512 (and dd_simd 2) eight rows'
 * four running sums at a time in four vectors, their chains of dependent additions overlapping. */
void dd_sum_rows(dd_t *s, const double *hi, const double *lo, long ld, const long *n, long rows);

#endif
