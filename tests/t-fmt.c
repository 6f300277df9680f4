/* t-fmt -- every value, midpoint and neighbour of bf16/fp16/e4m3/e5m2/tf32, every mode, vs MPFR */
#include <math.h>
#include <mpfr.h>
#include <string.h>

#include "check.h"
#include "num/fmt/fmt.h"

/* Independent reference: MPFR rounding at the format's precision with its exponent range
 * (mpfr_set_emin/emax + mpfr_subnormalize), then the lab's documented overflow policy. */
static double ref_mpfr(double x, const fmt_t *F, mpfr_rnd_t rnd, int *inexact)
{
    mpfr_exp_t emin0 = mpfr_get_emin(), emax0 = mpfr_get_emax();
    /* MPFR writes x = m 2^e with m in [1/2, 1): IEEE exponent E is MPFR's e - 1. */
    mpfr_set_emin(F->emin - F->prec + 2);
    mpfr_set_emax(4096);
    mpfr_t y;
    mpfr_init2(y, F->prec);
    int t = mpfr_set_d(y, x, rnd);
    t = mpfr_check_range(y, t, rnd);
    t = mpfr_subnormalize(y, t, rnd);
    double r = mpfr_get_d(y, MPFR_RNDN);
    mpfr_clear(y);
    mpfr_set_emin(emin0);
    mpfr_set_emax(emax0);
    *inexact = t != 0;
    return r;
}

/* Is the representable value r odd (last significand bit set at its own quantum)? */
static int ref_odd(double r, const fmt_t *F)
{
    if (r == 0)
        return 0;
    int e;
    frexp(r, &e); /* r = f 2^e, f in [1/2, 1): IEEE exponent e - 1 */
    int E = e - 1 < F->emin ? F->emin : e - 1;
    double k = ldexp(fabs(r), F->prec - 1 - E);
    return fmod(k, 2.0) == 1.0;
}

static double ref_overflow(double r, double x, const fmt_t *F, fmt_round_t mode, int sat)
{
    if (!(fabs(r) > F->max_finite))
        return r;
    int neg = x < 0;
    double big = F->has_inf ? INFINITY : NAN;
    int to_max = sat || mode == FMT_RZ || mode == FMT_RODD || (mode == FMT_RU && neg) ||
                 (mode == FMT_RD && !neg);
    return (neg ? -1 : 1) * (to_max ? F->max_finite : big);
}

static double ref_round(double x, const fmt_t *F, fmt_round_t mode, int sat)
{
    if (isnan(x))
        return NAN;
    if (isinf(x))
        return sat ? copysign(F->max_finite, x) : (F->has_inf ? x : copysign(NAN, x));
    int inex;
    double r;
    switch (mode) {
    case FMT_RNE:
        r = ref_mpfr(x, F, MPFR_RNDN, &inex);
        break;
    case FMT_RZ:
        r = ref_mpfr(x, F, MPFR_RNDZ, &inex);
        break;
    case FMT_RU:
        r = ref_mpfr(x, F, MPFR_RNDU, &inex);
        break;
    case FMT_RD:
        r = ref_mpfr(x, F, MPFR_RNDD, &inex);
        break;
    case FMT_RNA: {
        double lo = ref_mpfr(x, F, MPFR_RNDZ, &inex), hi = ref_mpfr(x, F, MPFR_RNDA, &inex);
        /* the distances are exact in binary64: the three values share a 2^-160 grid
         * and differ by less than 2^-24 relative */
        double dlo = fabs(x - lo), dhi = fabs(hi - x);
        r = dhi <= dlo ? hi : lo;
        break;
    }
    case FMT_RODD: {
        double lo = ref_mpfr(x, F, MPFR_RNDZ, &inex);
        r = inex && !ref_odd(lo, F) ? ref_mpfr(x, F, MPFR_RNDA, &inex) : lo;
        break;
    }
    default:
        return NAN;
    }
    if (r == 0)
        r = copysign(0.0, x);
    return ref_overflow(r, x, F, mode, sat);
}

static int same(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

static long checked;

static void check_value(float xf, fmt_id_t f)
{
    const fmt_t *F = &fmt_table[f];
    double x = xf;
    for (int sat = 0; sat < 2; sat++)
        for (int mode = 0; mode < FMT_ROUND_COUNT; mode++) {
            if (mode == FMT_RSTOCH)
                continue;
            uint32_t code = fmt_encode(x, f, (fmt_round_t)mode, sat, NULL);
            double got = fmt_decode(code, f);
            double want = ref_round(x, F, (fmt_round_t)mode, sat);
            checked++;
            CHECK(same(got, want), "%s %s%s: x = %a: got %a (code 0x%x), MPFR %a", F->name,
                  fmt_round_names[mode], sat ? " sat" : "", x, got, (unsigned)code, want);
            /* the value path agrees with the encoding path */
            double v = fmt_round(x, f, (fmt_round_t)mode, sat, NULL);
            CHECK(same(v, got), "%s fmt_round(%a) = %a, decode(encode) = %a", F->name, x, v, got);
        }
}

/* Every finite value of f, the midpoints between neighbours, and each midpoint's binary32
 * neighbours; both signs; plus the region past the largest finite value. */
static void exhaustive(fmt_id_t f, int step)
{
    const fmt_t *F = &fmt_table[f];
    int pad = f == FMT_TF32 ? 13 : 0;
    uint32_t ncodes = (uint32_t)1 << (F->bits - 1 - pad);
    for (uint32_t c = 0; c < ncodes; c += (uint32_t)step) {
        double v = fmt_decode(c << pad, f);
        if (!isfinite(v) || v > F->max_finite)
            break;
        float pts[4] = {(float)v, 0, 0, 0};
        int np = 1;
        if (c > 0) {
            double prev = fmt_decode((c - 1) << pad, f);
            float mid = (float)((prev + v) / 2); /* exact: one more bit than the format */
            CHECK((double)mid == (prev + v) / 2, "%s midpoint of %a and %a not binary32", F->name, prev, v);
            pts[np++] = mid;
            pts[np++] = nextafterf(mid, 0.0f);
            pts[np++] = nextafterf(mid, INFINITY);
        }
        for (int i = 0; i < np; i++) {
            check_value(pts[i], f);
            check_value(-pts[i], f);
        }
    }
    /* beyond max: max + half ulp (the overflow midpoint), its neighbours, max + ulp, huge */
    double ulp = F->max_finite - fmt_decode((F->max_code - 1) << pad, f);
    float beyond[] = {(float)(F->max_finite + ulp / 2), nextafterf((float)(F->max_finite + ulp / 2), 0),
                      nextafterf((float)(F->max_finite + ulp / 2), INFINITY), (float)(F->max_finite + ulp),
                      1e30f, INFINITY, NAN, 0x1p-149f, 0x1p-140f, 0x1p-126f};
    for (size_t i = 0; i < sizeof beyond / sizeof beyond[0]; i++) {
        check_value(beyond[i], f);
        check_value(-beyond[i], f);
    }
}

/* Stochastic rounding: P(round up) equals the discarded fraction. */
static void stochastic(void)
{
    fmt_rng_t rng;
    fmt_rng_seed(&rng, 12345); /* seed 12345 (include this in bug reports) */
    const double fr[] = {0.5, 0.25, 0.75, 1.0 / 128, 127.0 / 128};
    const long n = check_quick() ? 20000 : 200000;
    for (size_t i = 0; i < sizeof fr / sizeof fr[0]; i++) {
        double x = 1.0 + fr[i] * 0x1p-7; /* between bf16 neighbours 1 and 1 + 2^-7 */
        long up = 0;
        for (long k = 0; k < n; k++) {
            double r = fmt_round(x, FMT_BF16, FMT_RSTOCH, 0, &rng);
            CHECK(r == 1.0 || r == 1.0 + 0x1p-7, "stochastic %a -> %a", x, r);
            up += r > 1.0;
        }
        double p = (double)up / (double)n, sd = sqrt(fr[i] * (1 - fr[i]) / (double)n);
        CHECK(fabs(p - fr[i]) < 5 * sd + 1e-12, "stochastic frequency %g, expected %g (5 sd = %g)", p, fr[i], 5 * sd);
    }
    /* exact values never move */
    for (int k = 0; k < 1000; k++)
        CHECK(fmt_round(1.5, FMT_E4M3, FMT_RSTOCH, 0, &rng) == 1.5, "stochastic moved an exact value");
}

/* Published conversions (ml_dtypes / PyTorch, docs/REFERENCES.md, Number formats) and hand-computed ones. */
static void published(void)
{
    CHECK(fmt_encode(464, FMT_E4M3, FMT_RNE, 0, NULL) == 0x7E, "464 -> e4m3");
    CHECK(fmt_encode(465, FMT_E4M3, FMT_RNE, 0, NULL) == 0x7F, "465 -> e4m3 NaN");
    CHECK(fmt_encode(-465, FMT_E4M3, FMT_RNE, 0, NULL) == 0xFF, "-465 -> e4m3 NaN 0xFF");
    CHECK(fmt_encode(1e6, FMT_E4M3, FMT_RNE, 1, NULL) == 0x7E, "1e6 -> e4m3 satfinite");
    CHECK(fmt_encode(61439, FMT_E5M2, FMT_RNE, 0, NULL) == 0x7B, "61439 -> e5m2");
    CHECK(fmt_encode(61440, FMT_E5M2, FMT_RNE, 0, NULL) == 0x7C, "61440 -> e5m2 inf");
    CHECK(fmt_encode(1.0, FMT_BF16, FMT_RNE, 0, NULL) == 0x3F80, "1 -> bf16");
    CHECK(fmt_encode(65504, FMT_FP16, FMT_RNE, 0, NULL) == 0x7BFF, "65504 -> fp16");
    CHECK(fmt_encode(65520, FMT_FP16, FMT_RNE, 0, NULL) == 0x7C00, "65520 -> fp16 inf");
    CHECK(fmt_encode(0x1p-9, FMT_E4M3, FMT_RNE, 0, NULL) == 0x01, "2^-9 smallest e4m3 subnormal");
    CHECK(fmt_encode(0x1p-10, FMT_E4M3, FMT_RNE, 0, NULL) == 0x00, "2^-10 ties to even zero");
    CHECK(fmt_encode(0x1.8p-10, FMT_E4M3, FMT_RNE, 0, NULL) == 0x01, "1.5 2^-10 rounds up");
    CHECK(fmt_encode(0x1p-16, FMT_E5M2, FMT_RNE, 0, NULL) == 0x01, "2^-16 smallest e5m2 subnormal");
    CHECK(fmt_encode(1.0 + 0x1p-11, FMT_TF32, FMT_RNE, 0, NULL) == 0x3F800000, "tf32 tie to even");
    CHECK(fmt_encode(1.0 + 0x1p-10, FMT_TF32, FMT_RNE, 0, NULL) == 0x3F802000, "tf32 1+2^-10");
    CHECK(fmt_encode(NAN, FMT_BF16, FMT_RNE, 0, NULL) == 0x7FC0, "NaN -> bf16 quiet NaN");
}

/* Rounding binary64 (not binary32) inputs: one rounding, not two. */
static void double_inputs(void)
{
    fmt_rng_t rng;
    fmt_rng_seed(&rng, 777); /* seed 777 (include this in bug reports) */
    for (int i = 0; i < (check_quick() ? 2000 : 50000); i++) {
        double x = ldexp((double)(fmt_rng_next(&rng) >> 11), -53) * ldexp(1.0, (int)(fmt_rng_next(&rng) % 40) - 20);
        if (fmt_rng_next(&rng) & 1)
            x = -x;
        for (int f = FMT_BF16; f <= FMT_FP32; f++)
            for (int mode = 0; mode < FMT_RSTOCH; mode++) {
                int inex;
                double want;
                if (mode == FMT_RNE)
                    want = ref_mpfr(x, &fmt_table[f], MPFR_RNDN, &inex);
                else if (mode == FMT_RZ)
                    want = ref_mpfr(x, &fmt_table[f], MPFR_RNDZ, &inex);
                else if (mode == FMT_RU)
                    want = ref_mpfr(x, &fmt_table[f], MPFR_RNDU, &inex);
                else if (mode == FMT_RD)
                    want = ref_mpfr(x, &fmt_table[f], MPFR_RNDD, &inex);
                else
                    continue;
                want = ref_overflow(want, x, &fmt_table[f], (fmt_round_t)mode, 0);
                double got = fmt_round(x, (fmt_id_t)f, (fmt_round_t)mode, 0, NULL);
                CHECK(same(got, want), "%s %s binary64 %a: got %a, MPFR %a", fmt_table[f].name,
                      fmt_round_names[mode], x, got, want);
            }
    }
}

/* fmt_cast_f32 (the vectorized array path) against fmt_encode: every binary32 whose bits 13..31
 * take all 2^19 values, with bits 0..12 in {0, 1, 0xfff, 0x1000, 0x1001, 0x1fff} (the rounding
 * ties and their neighbours of every target, subnormals, infinities and NaN included). */
static void array_cast(int stride)
{
    static const uint32_t lows[] = {0, 1, 0xfff, 0x1000, 0x1001, 0x1fff};
    long n = (1L << 19) / stride * 6, k = 0;
    float *x = malloc(sizeof(float) * (size_t)n);
    uint32_t *codes = malloc(sizeof(uint32_t) * (size_t)n);
    for (uint32_t hi = 0; hi < (1u << 19) && k < n; hi += (uint32_t)stride)
        for (int l = 0; l < 6; l++) {
            uint32_t u = hi << 13 | lows[l];
            memcpy(&x[k++], &u, sizeof u);
        }
    const fmt_id_t fs[] = {FMT_BF16, FMT_FP16, FMT_E4M3, FMT_E5M2, FMT_TF32};
    long bad = 0;
    for (size_t fi = 0; fi < sizeof fs / sizeof fs[0]; fi++)
        for (int sat = 0; sat < 2; sat++) {
            fmt_cast_f32(codes, x, k, fs[fi], sat);
            int w = fmt_cast_width(fs[fi]);
            for (long i = 0; i < k; i++) {
                uint32_t c = w == 1 ? ((uint8_t *)codes)[i] : w == 2 ? ((uint16_t *)codes)[i] : codes[i];
                uint32_t want = fmt_encode((double)x[i], fs[fi], FMT_RNE, sat, NULL);
                if (c != want && bad++ < 5)
                    CHECK(0, "fmt_cast_f32 %s sat %d: %a gave 0x%x, fmt_encode 0x%x", fmt_table[fs[fi]].name, sat,
                          (double)x[i], c, want);
            }
        }
    CHECK(bad == 0, "fmt_cast_f32: %ld codes differ from fmt_encode", bad);
    printf("t-fmt: fmt_cast_f32 equals fmt_encode on %ld binary32 values x 5 formats x 2\n", k);
    free(x);
    free(codes);
}

/* fmt_round_array_rne (vectorized) against MPFR (finite values; non-finite ones against
 * decode(encode)) element by element: binary64 values over 2^-160..2^140 of both signs
 * (normal, subnormal and overflowing results of every format), exact ties of each format
 * (between normals and between subnormals), signed zeros, infinities and NaN; sat 0 and 1. */
static void array_round(void)
{
    long n = 1 << 16;
    double *x = malloc(sizeof(double) * (size_t)n), *y = malloc(sizeof(double) * (size_t)n);
    fmt_rng_t rng;
    fmt_rng_seed(&rng, 91);
    long bad = 0;
    for (int f = 0; f < FMT_COUNT; f++) /* fp64: every value must come back unchanged */
        for (int sat = 0; sat < 2; sat++) {
            for (long i = 0; i < n; i++) {
                uint64_t r = fmt_rng_next(&rng);
                double m = 1.0 + ldexp((double)(r >> 12), -52);
                if (i % 5 == 0) /* a tie of this format: half an ulp at its precision */
                    m = 1.0 + ldexp((double)(r % 256), -8) + ldexp(1.0, -fmt_table[f].prec);
                x[i] = ldexp(m, (int)(r % 300) - 160) * (r >> 63 ? -1 : 1);
                if (i % 7 == 3) /* an exact tie between subnormals (or zero) of this format */
                    x[i] = ldexp((double)(r % ((uint64_t)1 << (fmt_table[f].prec - 1))) + 0.5,
                                 fmt_table[f].emin - fmt_table[f].prec + 1) * (r >> 63 ? -1 : 1);
                if (i % 97 == 0)
                    x[i] = i % 3 == 0 ? (i % 2 ? -0.0 : 0.0) : i % 3 == 1 ? -INFINITY : NAN;
                y[i] = x[i];
            }
            fmt_round_array_rne(y, n, (fmt_id_t)f, sat);
            for (long i = 0; i < n; i++) {
                int inex;
                double want = f == FMT_FP64 ? x[i]
                              : isfinite(x[i])
                                  ? ref_overflow(ref_mpfr(x[i], &fmt_table[f], MPFR_RNDN, &inex), x[i], &fmt_table[f],
                                                 FMT_RNE, sat)
                                  : fmt_round_general(x[i], (fmt_id_t)f, FMT_RNE, sat, NULL);
                if (!same(want, y[i]) && bad++ < 5)
                    CHECK(0, "fmt_round_array_rne %s sat %d: %a gave %a, MPFR %a", fmt_table[f].name, sat, x[i],
                          y[i], want);
            }
        }
    CHECK(bad == 0, "fmt_round_array_rne: %ld values differ from MPFR", bad);
    free(x);
    free(y);
}

int main(void)
{
    int step = check_quick() ? 7 : 1;
    exhaustive(FMT_E4M3, 1);
    exhaustive(FMT_E5M2, 1);
    exhaustive(FMT_BF16, step);
    exhaustive(FMT_FP16, step);
    exhaustive(FMT_TF32, check_quick() ? 61 : 3);
    published();
    stochastic();
    double_inputs();
    for (fmt_simd = 2; fmt_simd >= 0; fmt_simd--) { /* AVX-512, AVX2, then the baseline builds */
        array_cast(check_quick() ? 13 : 1);
        array_round();
    }
    fmt_simd = 2;
    printf("t-fmt: %ld conversions compared with MPFR\n", checked);
    return check_done("t-fmt");
}
