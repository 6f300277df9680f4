/* ozaki_one_int -- what the one-slice products' two files share (not for use outside src/ref/ozaki_one*.c) */
#ifndef AMLA_OZAKI_ONE_INT_H
#define AMLA_OZAKI_ONE_INT_H

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "num/vec/dd.h"
#include "num/vec/vec.h"

/* ---- One slice and its remainders ----
 * Every row (or column) of an operand is cut once, on its own grid: x = x1 + x2 with
 * x1 = q 2^(hi - beta), q = x 2^(beta - hi) rounded to an integer (|q| <= 2^beta; |x| < 2^hi for
 * the whole row) and x2 = x - x1 exactly. With beta_a + beta_b + ceil(log2 K) <= 53 the one GEMM
 * of the slices is exact (ozaki.c says why), and
 *     A B^T = A1 B1^T + A2 B1^T + A B2^T.
 * x2 is zero unless x has bits below 2^(hi - beta): for inputs rounded to BF16 or FP16 only the
 * few values far below their row's maximum. The two last products are summed term by term from
 * a list of the nonzero x2, each product exact (TwoProd) and added with TwoSum into the
 * double-double result. Inputs whose remainders are not sparse (more than 1/OZ1_SPARSE of the
 * GEMM's work) take the multi-slice path instead. Against the multi-slice path this does one
 * GEMM of Q K^T instead of two for BF16 MLA inputs, and for P V one GEMM of a (2R x n) stack
 * [P's leading bits; P's remainder] instead of three of (R x n). */
#define OZ1_SPARSE 64     /* remainder terms allowed: their work at most 1/64 of the GEMM's */
#define OZ1_SAMPLED 512   /* keys whose K and V estimate the remainders when choosing widths */
#define OZ1_EMPTY INT_MIN /* hi of a group that is all zeros */
#define OZ1_PV_SPARSE 1024 /* V's remainders aimed at: 1/1024 of its values */
#define OZ1_PV_CHUNK 512  /* keys per P V GEMM: fewer bits of growth, more of P kept exact */
#define OZ1_U8_CHUNK 256  /* keys per Q K^T chunk through AMX: K's slice (1.2 MB at Dk 576) and its byte planes stay in
                           * a core's L2 (2 MB on Emerald Rapids): Q K^T took 0.023 s against 0.028 s with
                           * OZAKI_CHUNK's 1024 keys (the best of five alternating runs each, one MLA decode sample) */

/* Counts a product done here and its remainder terms (ozaki_one_stats). */
void oz1_counted(long terms);
/* Adds the seconds of P V's FP64 GEMMs (ozaki_pv_fp64_seconds). */
void oz1_timed_fp64(double s);

typedef struct {
    long r, c;
    double v; /* x2 at row r, column c */
} oz1_term_t;

typedef struct {
    oz1_term_t *t;
    long n, cap;
} oz1_terms_t;

/* hi with |x| < 2^hi for every |x| <= mx (OZ1_EMPTY when mx = 0); 0 when mx is Inf or hi is
 * beyond +-900 (no exact power-of-two scaling). */
static inline int oz1_hi_of(int *hi, double mx)
{
    if (!(mx <= 0x1p900))
        return 0;
    *hi = mx == 0.0 ? OZ1_EMPTY : ilogb(mx) + 1;
    return mx == 0.0 || *hi >= -900;
}

/* The same for the n values x (NaN is skipped here and caught by the cut). */
static inline int oz1_hi(int *hi, const double *x, long n)
{
    return oz1_hi_of(hi, vec_absmax(x, n, 0.0));
}

/* Exponent of x's lowest set bit (x finite, nonzero). */
static inline int oz1_lo(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    int be = (int)(b >> 52 & 0x7ff);
    uint64_t m = b & 0xfffffffffffffULL;
    return be == 0 ? -1074 + __builtin_ctzll(m) : be - 1075 + __builtin_ctzll(m | 1ULL << 52);
}

/* hist[d] += the values of x (n values) that need d bits below 2^hi (d capped at 63). */
static inline void oz1_hist(long *hist, const double *x, long n, int hi)
{
    for (long j = 0; j < n; j++)
        if (x[j] != 0.0) {
            int d = hi - oz1_lo(x[j]);
            hist[d < 63 ? d : 63]++;
        }
}

/* Values of a histogram that need more than b bits. */
static inline long oz1_above(const long *hist, int b)
{
    long n = 0;
    for (int d = b + 1; d < 64; d++)
        n += hist[d];
    return n;
}

/* Every step-th key is counted: all of them up to OZ1_SAMPLED keys. */
static inline long oz1_step(long sk)
{
    return sk > OZ1_SAMPLED ? sk / OZ1_SAMPLED : 1;
}

static inline int oz1_push(oz1_terms_t *ts, long r, long c, double v)
{
    if (ts->n == ts->cap)
        return 0;
    ts->t[ts->n++] = (oz1_term_t){r, c, v};
    return 1;
}

/* One slice of the n values x with beta bits into o, and their nonzero remainders into ts as
 * (r, c0 + j); 0 when ts is full or a value is NaN. Value j is on the grid f[j fs] = 2^(beta - hi)
 * with g[j fs] = 2^(hi - beta): fs = 0 for a row on one grid, 1 for a row of columns on their own
 * grids (both 0 on an all-zero group, whose values are 0). |t| < 2^beta <= 2^50, so (t + C) - C
 * is t rounded to an integer, t - q is exact, and so is its scaling back (a multiple of x's
 * quantum, no larger than |x|). */
static inline __attribute__((always_inline)) int oz1_cut_body(double *o, oz1_terms_t *ts, const double *x, long n,
                                                              const double *f, const double *g, long fs, long r,
                                                              long c0)
{
    const double C = 0x1.8p52;
    double any = 0;
#pragma omp simd reduction(+ : any)
    for (long j = 0; j < n; j++) {
        double t = x[j] * f[j * fs], q = (t + C) - C;
        o[j] = q;
        any += fabs(t - q);
    }
    if (any != any) /* NaN among the values (t = NaN, also where f = 0) */
        return 0;
    if (any == 0)
        return 1;
    for (long j = 0; j < n; j++) {
        double x2 = x[j] - o[j] * g[j * fs];
        if (x2 != 0 && !oz1_push(ts, r, c0 + j, x2))
            return 0;
    }
    return 1;
}

/* A row on its own grid hi (OZ1_EMPTY: zeros, or NaN, which the maximum skips). */
static inline __attribute__((always_inline)) int oz1_cut(double *o, oz1_terms_t *ts, const double *x, long n, int hi,
                                                         int beta, long r)
{
    double f = hi == OZ1_EMPTY ? 0.0 : ldexp(1.0, beta - hi), g = hi == OZ1_EMPTY ? 0.0 : ldexp(1.0, hi - beta);
    return oz1_cut_body(o, ts, x, n, &f, &g, 0, r, 0);
}

/* A row of n columns, each on its own grid (f[c], g[c]). */
static inline __attribute__((always_inline)) int oz1_cut_cols(double *o, oz1_terms_t *ts, const double *x, long n,
                                                              const double *f, const double *g, long r)
{
    return oz1_cut_body(o, ts, x, n, f, g, 1, r, 0);
}

/* (h, l) += a b, the product exact (TwoProd) and added with TwoSum. */
static inline __attribute__((always_inline)) void oz1_add(double *h, double *l, double a, double b)
{
    double p = a * b, e = fma(a, b, -p);
    dd_t t = dd_two_sum(*h, p);
    *h = t.hi;
    *l += t.lo + e;
}

#endif
