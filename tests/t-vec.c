/* t-vec -- the AVX2 and AVX-512 array loops of num/vec against the plain C expressions they stand for, bit
 * for bit, on values that make each step hard: binary32 midpoints and their neighbours, the
 * binary32 overflow threshold, subnormals of both formats, signed zeros, infinities, NaN, and
 * every length up to 37 (the vector body and each tail) */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "num/fmt/fmt.h"
#include "num/vec/vec.h"

static int same(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

static double ftz(float y)
{
    uint32_t u;
    memcpy(&u, &y, sizeof u);
    u = (u & 0x7f800000u) ? u : u & 0x80000000u;
    memcpy(&y, &u, sizeof y);
    return y;
}

static double f32(double y)
{
    return (double)(float)y;
}

/* vec_exp_rn32 against libm's exp and exp2 rounded to binary32 (the expression it stands for; libm is the
 * reference), at every SIMD level: n values over and past binary32's normal results (-130 .. 130), their binary32
 * roundings, small ones, the specials, and x = log(M) (log2(M)) for M the midpoint between two binary32 values,
 * whose exp lies within a few binary64 units of M: where a vector lane and libm could round apart, the case the
 * lane's test sends to libm (without the test, 1.7% of these differ). Returns the count that differ. */
static long exp_cases(long n)
{
    double *x = malloc(sizeof(double) * (size_t)n), *y = malloc(sizeof(double) * (size_t)n);
    const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-300, -1e-300, 0x1p-1074, 88.0, 88.5,
                              -87.0, -87.5, 127.0, 128.0, -126.0, -149.5, -150.0, 709.0, -745.0, 1.0};
    const long ns = sizeof special / sizeof special[0];
    fmt_rng_t rng;
    fmt_rng_seed(&rng, 23);
    long bad = 0;
    for (int two = 0; two < 2; two++)
        for (int kind = 0; kind < 4; kind++) {
            for (long i = 0; i < n; i++) {
                double u = ldexp((double)(fmt_rng_next(&rng) >> 11), -53);
                double v = kind == 0 ? (u - 0.5) * 260 : kind == 1 ? (double)(float)((u - 0.5) * 260) : -u * 0x1p-20;
                if (kind == 3) { /* a binary32 midpoint's logarithm */
                    float f = (float)(two ? exp2(-u * 100) : exp(-u * 60));
                    double mid = (double)f + (double)(nextafterf(f, INFINITY) - f) / 2;
                    v = two ? log2(mid) : log(mid);
                }
                x[i] = y[i] = i % 97 == 0 ? special[(i / 97) % ns] : v;
            }
            vec_exp_rn32(y, n, two);
            for (long i = 0; i < n; i++)
                bad += !same(y[i], f32(two ? exp2(x[i]) : exp(x[i])));
        }
    free(x);
    free(y);
    return bad;
}

int main(void)
{
    enum { N = 4096 };
    fmt_rng_t rng;
    fmt_rng_seed(&rng, 17);
    double *x = malloc(sizeof(double) * N), *t = malloc(sizeof(double) * N), *o = malloc(sizeof(double) * N);
    double *w = malloc(sizeof(double) * N);
    const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 0x1p-149, 0x1p-150, 0x1.8p-150, 0x1p-1074,
                              0x1p-1022, 0x1.fffffep127, 0x1.ffffffp127, 0x1.fffffefffffffp127, 1.0 + 0x1p-24,
                              1.0 + 0x1p-24 + 0x1p-52, 1.0 - 0x1p-25, 3.0, -5.5, 1e300, -1e-300};
    const long ns = sizeof special / sizeof special[0];
    for (long i = 0; i < N; i++) {
        double u = ldexp((double)(fmt_rng_next(&rng) >> 11), -53) - 0.5;
        x[i] = i % 7 == 0 ? special[(i / 7) % ns] : ldexp(u, (int)(fmt_rng_next(&rng) % 80) - 40);
        u = ldexp((double)(fmt_rng_next(&rng) >> 11), -53) - 0.5;
        t[i] = i % 5 == 0 ? special[(i / 5 + 3) % ns] : ldexp(u, (int)(fmt_rng_next(&rng) % 80) - 40);
    }
    long bad = 0, runs = 0;
    for (vec_simd = 2; vec_simd >= 0; vec_simd--) { /* AVX-512, AVX2 (where present), the plain loops */
        const double scales[] = {3.0, 0.1, 0x1p-20, 0x1p100, -7.0, 1e-310, 0.0, INFINITY, NAN};
        for (size_t si = 0; si < sizeof scales / sizeof scales[0]; si++) {
            double s = scales[si], ts = si % 2 ? 0.0 : scales[(si + 1) % 9];
            for (long n = 0; n <= N; n = n < 37 ? n + 1 : n * 2 + 3) {
                long m = n < N ? n : N;
                runs++;
                vec_mul(o, x, m, s);
                for (long i = 0; i < m; i++)
                    bad += !same(o[i], x[i] * s);
                vec_div(o, x, m, s);
                for (long i = 0; i < m; i++)
                    bad += !same(o[i], x[i] / s);
                memcpy(o, x, sizeof(double) * (size_t)m);
                vec_mul(o, o, m, s); /* in place */
                for (long i = 0; i < m; i++)
                    bad += !same(o[i], x[i] * s);
                memcpy(o, x, sizeof(double) * (size_t)m);
                memcpy(w, x, sizeof(double) * (size_t)m);
                vec_rescale_add32(o, t, m, s, ts);
                for (long i = 0; i < m; i++)
                    bad += !same(o[i], f32(f32(w[i] * s) + (ts != 0 ? f32(t[i] * ts) : t[i])));
                double want = s;
                for (long i = 0; i < m; i++)
                    want = fabs(x[i]) > want ? fabs(x[i]) : want;
                bad += !same(vec_absmax(x, m, s), want);
            }
        }
        /* vec_rescale_add32_each: each element its own scale (t's values, of every binade) */
        for (long n = 0; n <= 37; n++) {
            memcpy(o, x, sizeof(double) * (size_t)n);
            vec_rescale_add32_each(o, x + 40, n, t);
            for (long i = 0; i < n; i++)
                bad += !same(o[i], f32(f32(x[i] * t[i]) + x[40 + i]));
        }
        /* vec_prod against the product; vec_fwht against the butterflies stage by stage, on values
         * whose sums round (a spread of 2^80), for every power of two up to 256 */
        for (long n = 0; n <= 37; n++) {
            vec_prod(o, x, t, n);
            for (long i = 0; i < n; i++)
                bad += !same(o[i], x[i] * t[i]);
        }
        for (long h = 1; h <= 256; h *= 2)
            for (int rep = 0; rep < 8; rep++) {
                for (long i = 0; i < h; i++) {
                    double u = ldexp((double)(fmt_rng_next(&rng) >> 11), -53) - 0.5;
                    o[i] = w[i] = ldexp(u, (int)(fmt_rng_next(&rng) % 80) - 40);
                }
                if (rep == 7) /* and the special values */
                    for (long i = 0; i < h; i++)
                        o[i] = w[i] = special[(i * 3 + h) % ns];
                vec_fwht(o, h);
                for (long len = 1; len < h; len *= 2)
                    for (long i = 0; i < h; i += 2 * len)
                        for (long j = i; j < i + len; j++) {
                            double u = w[j], v = w[j + len];
                            w[j] = u + v;
                            w[j + len] = u - v;
                        }
                for (long i = 0; i < h; i++)
                    bad += !same(o[i], w[i]);
                /* vec_hadamard on the same values (signs of every pattern, a norm that rounds): the product by
                 * each sign, the butterflies as above, the product by the norm, written out */
                double sg[256], hn = 1.0 / sqrt((double)h), *u0 = o + 256, *u1 = w + 256;
                for (long i = 0; i < h; i++) {
                    sg[i] = (fmt_rng_next(&rng) >> 63) ? -1.0 : 1.0;
                    u1[i] = o[i] * sg[i];
                }
                vec_hadamard(u0, o, sg, h, hn);
                for (long len = 1; len < h; len *= 2)
                    for (long i = 0; i < h; i += 2 * len)
                        for (long j = i; j < i + len; j++) {
                            double u = u1[j], v = u1[j + len];
                            u1[j] = u + v;
                            u1[j + len] = u - v;
                        }
                for (long i = 0; i < h; i++)
                    bad += !same(u0[i], u1[i] * hn);
            }
        /* vec_mul32 and vec_fma32_scaled on every class of x and t (their binary32 casts are the steps), every
         * length up to 37, scales that round, overflow binary32 and land in its subnormals */
        const double sm[] = {1.0, 0x1.8p-1, 0x1p-120, 0x1p100, -3.1, 1e-30};
        for (size_t ai = 0; ai < sizeof sm / sizeof sm[0]; ai++)
            for (long n = 0; n <= 37; n++) {
                double a = sm[ai], b = sm[(ai + 1) % 6];
                vec_mul32(o, x, n, a);
                for (long i = 0; i < n; i++)
                    bad += !same(o[i], (double)(float)(x[i] * a));
                for (long i = 0; i < n; i++)
                    o[i] = w[i] = t[i];
                vec_fma32_scaled(o, x, n, a, b);
                for (long i = 0; i < n; i++)
                    bad += !same(o[i], (double)fmaf((float)a, (float)x[i], (float)(b * w[i])));
            }
        /* the flushing binary32 steps: scales and addends that put results in and around binary32's
         * subnormal range, at its overflow, and on NaN and infinities */
        const double sa[] = {1.0, 0x1p-120, 0x1p-140, 0x1p100, -3.0, 1e-30};
        for (size_t ai = 0; ai < sizeof sa / sizeof sa[0]; ai++)
            for (long n = 0; n <= 37; n++) {
                double a = sa[ai], b = sa[(ai + 2) % 6] * 0x1p-10;
                vec_scale32_ftz(o, x, n, a);
                for (long i = 0; i < n; i++)
                    bad += !same(o[i], ftz((float)(x[i] * a)));
                float of[37];
                vec_scale32_ftz_f(of, x, n, a);
                for (long i = 0; i < n; i++)
                    bad += !same(of[i], ftz((float)(x[i] * a)));
                for (long i = 0; i < n; i++)
                    w[i] = o[i] = (float)x[i];
                vec_fma32_ftz(o, n, a, b);
                for (long i = 0; i < n; i++)
                    bad += !same(o[i], ftz(fmaf((float)w[i], (float)a, (float)b)));
                for (long i = 0; i < n; i++) { /* o (binary32 values of t's spread) += a x */
                    w[i] = o[i] = (float)(t[i] * b);
                    w[n + i] = (float)x[i];
                }
                vec_axpy32_ftz(o, w + n, n, a); /* w[n ..]: binary32 values */
                for (long i = 0; i < n; i++)
                    bad += !same(o[i], ftz(fmaf((float)w[n + i], (float)a, (float)w[i])));
            }
        /* vec_narrow32 and vec_widen32 against the casts, on every class of x (binary32's halfway cases, overflow,
         * subnormals, NaN) and every length up to 37 (the vector loops' tails) */
        for (long n = 0; n <= 37; n++)
            for (long at = 0; at + n <= N; at += 997) {
                float f[37], g[37];
                vec_narrow32(f, x + at, n);
                for (long i = 0; i < n; i++) {
                    g[i] = (float)x[at + i];
                    bad += memcmp(&f[i], &g[i], sizeof(float)) != 0 && !(isnan(f[i]) && isnan(g[i]));
                }
                vec_widen32(o, g, n);
                for (long i = 0; i < n; i++)
                    bad += !same(o[i], (double)g[i]);
            }
    }
    for (vec_simd = 0; vec_simd <= 2; vec_simd++) {
        long e = exp_cases(vec_simd >= 1 && !check_quick() ? 200003 : 1001); /* (AMLA_QUICK: the vector paths still run) */
        CHECK(e == 0, "vec_exp_rn32 at SIMD level %d: %ld values differ from libm's rounded to binary32", vec_simd, e);
    }
    vec_simd = 2;
    /* a NaN after the largest value in the same lane must not hide it */
    double y[16] = {5, 0, 0, 0, 0, 0, 0, 0, NAN, 1, 1, 1, 1, 1, 1, 1};
    CHECK(vec_absmax(y, 16, 0) == 5, "absmax with a NaN after 5: %a", vec_absmax(y, 16, 0));
    CHECK(bad == 0, "%ld results differ from the plain loops", bad);
    printf("t-vec: vec_mul, vec_div, vec_rescale_add32, vec_rescale_add32_each, vec_absmax, vec_prod, vec_fwht, vec_hadamard, vec_exp_rn32, vec_mul32, vec_fma32_scaled, vec_scale32_ftz(_f), vec_fma32_ftz, vec_axpy32_ftz, vec_narrow32 and vec_widen32 equal the plain loops (%ld runs)\n", runs);
    free(x), free(t), free(o), free(w);
    return check_done("t-vec");
}
