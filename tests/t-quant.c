/* t-quant -- scales and FP8 quantization by granularity: hand-computed cases, round-trip bounds */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "attn/quant.h"

static quant_cfg_t qcfg(quant_gran_t g, long br, long bc)
{
    quant_cfg_t c = {g, br, bc, FMT_E4M3, 0, 0, 0, 0};
    return c;
}

static void test_hand(void)
{
    /* per token: row amax 2 -> scale fp32(2/448); x/scale = 224, -448, 56: exact in e4m3 */
    double x[6] = {1, -2, 0.5, 0.25, 0, -0.125}, q[6];
    quant_cfg_t c = qcfg(QUANT_TOKEN, 0, 0);
    quant_scales_t s;
    quant_scales(&s, x, 2, 3, 3, &c);
    CHECK(s.ngr == 2 && s.ngc == 1, "per-token groups %ld x %ld", s.ngr, s.ngc);
    CHECK(s.scale[0] == (double)(2.0f / 448.0f) && s.scale[1] == (double)(0.25f / 448.0f), "per-token scales %a %a",
          s.scale[0], s.scale[1]);
    quant_apply(q, 3, x, 3, &s, &c);
    CHECK(q[0] == 224 && q[1] == -448 && q[4] == 0, "per-token values %a %a %a", q[0], q[1], q[4]);
    quant_scales_free(&s);
    /* per tensor, static 1.0: 0.3 -> 0.3125 (e4m3 step 2^-5 in [0.25, 0.5)), 1000 -> NaN (overflow) */
    double y[2] = {0.3, 1000};
    c = qcfg(QUANT_TENSOR, 0, 0);
    c.static_scale = 1.0;
    quant_scales(&s, y, 1, 2, 2, &c);
    long over = quant_apply(q, 2, y, 2, &s, &c);
    CHECK(q[0] == 0.3125 && isnan(q[1]) && over == 1, "static 1.0: %a %a over %ld", q[0], q[1], over);
    c.saturate = 1;
    quant_apply(q, 2, y, 2, &s, &c);
    CHECK(q[1] == 448, "satfinite clamps to 448: %a", q[1]);
    quant_scales_free(&s);
    /* per channel on [[1, 8], [-4, 2]]: scales 4/448 and 8/448 */
    double z[4] = {1, 8, -4, 2};
    c = qcfg(QUANT_CHANNEL, 0, 0);
    quant_scales(&s, z, 2, 2, 2, &c);
    CHECK(s.ngr == 1 && s.ngc == 2 && s.scale[0] == (double)(4.0f / 448) && s.scale[1] == (double)(8.0f / 448),
          "per-channel scales %a %a", s.scale[0], s.scale[1]);
    quant_scales_free(&s);
    /* per block 1 x 128 with power-of-two scales (FlashMLA): amax 3 -> 2^ceil(log2(3/448)) = 2^-7;
     * an all-zero block takes the floor 1e-4 -> 2^-13 */
    double *w = calloc(256, sizeof(double));
    w[5] = -3;
    c = qcfg(QUANT_BLOCK, 1, 128);
    c.pow2 = 1;
    c.pow2_floor = 1e-4;
    quant_scales(&s, w, 1, 256, 256, &c);
    CHECK(s.ngc == 2 && s.scale[0] == 0x1p-7 && s.scale[1] == 0x1p-13, "pow2 scales %a %a", s.scale[0], s.scale[1]);
    quant_scales_free(&s);
    free(w);
}

/* Round trip: |q scale - x| <= 2^-4 |x| (e4m3 keeps 4 significant bits) plus half the
 * subnormal quantum, 2^-10 scale; e5m2 likewise with 2^-3 and 2^-17. */
static void test_round_trip(void)
{
    fmt_rng_t rng;
    fmt_rng_seed(&rng, 99); /* seed 99 (include this in bug reports) */
    long rows = 64, cols = 96;
    double *x = malloc(sizeof(double) * (size_t)(rows * cols)), *q = malloc(sizeof(double) * (size_t)(rows * cols));
    for (long i = 0; i < rows * cols; i++) {
        double u = ldexp((double)(fmt_rng_next(&rng) >> 11), -53) - 0.5;
        x[i] = ldexp(u, (int)(fmt_rng_next(&rng) % 12) - 6); /* six binades either side */
    }
    const quant_gran_t grans[] = {QUANT_TENSOR, QUANT_TOKEN, QUANT_CHANNEL, QUANT_BLOCK};
    const fmt_id_t fmts[] = {FMT_E4M3, FMT_E5M2};
    for (int fi = 0; fi < 2; fi++)
        for (int gi = 0; gi < 4; gi++) {
            quant_cfg_t c = qcfg(grans[gi], 16, 32);
            c.fmt = fmts[fi];
            quant_scales_t s;
            quant_scales(&s, x, rows, cols, cols, &c);
            CHECK(quant_apply(q, cols, x, cols, &s, &c) == 0, "dynamic scales never overflow");
            double rel = fi == 0 ? 0x1p-4 : 0x1p-3, sub = fi == 0 ? 0x1p-10 : 0x1p-17;
            for (long r = 0; r < rows; r++)
                for (long k = 0; k < cols; k++) {
                    double sc = quant_scale_at(&s, r, k), err = fabs(q[r * cols + k] * sc - x[r * cols + k]);
                    /* the fp32 division adds at most 2^-24 relative */
                    CHECK(err <= (rel + 0x1p-23) * fabs(x[r * cols + k]) + sub * sc, "%s gran %d: x %a -> %a (scale %a)",
                          fmt_table[c.fmt].name, gi, x[r * cols + k], q[r * cols + k] * sc, sc);
                }
            quant_scales_free(&s);
        }
    free(x);
    free(q);
}

/* quant_round_quotients (chunked, vectorized casts, a power-of-two scale by its reciprocal)
 * against its definition element by element: fmt_round of x / s (through binary32 where fp32),
 * by a plain division. Scales: powers of two from 2^-130 (huge quotients: overflow, saturation)
 * to 2^40 (quotients below binary32's and the formats' subnormals), negative and non-power
 * ones; x of bf16 values over 2^-140 .. 2^40 with zeros, infinities and a NaN; lengths that
 * leave a partial chunk. */
static void test_quotients(void)
{
    enum { N = 700 };
    double x[N], out[N];
    fmt_rng_t rng;
    fmt_rng_seed(&rng, 17);
    for (long i = 0; i < N; i++) {
        double u = ldexp((double)(fmt_rng_next(&rng) >> 11), -53) - 0.5;
        x[i] = fmt_round(ldexp(u, (int)(fmt_rng_next(&rng) % 180) - 140), FMT_BF16, FMT_RNE, 0, NULL);
    }
    x[3] = 0.0, x[4] = -0.0, x[5] = INFINITY, x[6] = -INFINITY, x[7] = NAN;
    const double scales[] = {0x1p-130, 0x1p-20, 0x1p-7, 1.0, 0x1p3, 0x1p40, -0x1p-5, 3.0, 0x1.8p-9, 1e-30};
    const fmt_id_t fmts[] = {FMT_E4M3, FMT_E5M2, FMT_BF16};
    long bad = 0, n = 0;
    for (size_t si = 0; si < sizeof scales / sizeof scales[0]; si++)
        for (int fi = 0; fi < 3; fi++)
            for (int fp32 = 0; fp32 < 2; fp32++)
                for (int sat = 0; sat < 2; sat++) {
                    double sc = scales[si];
                    quant_round_quotients(out, x, N - 1, sc, fp32, fmts[fi], FMT_RNE, sat, 0, NULL);
                    for (long i = 0; i < N - 1; i++, n++) {
                        double y = x[i] / sc;
                        double want = fmt_round(fp32 ? fmt_fp32(y) : y, fmts[fi], FMT_RNE, sat, NULL);
                        int same = (isnan(want) && isnan(out[i])) || memcmp(&want, &out[i], sizeof want) == 0;
                        if (!same && bad++ < 5)
                            CHECK(0, "%s s %a fp32 %d sat %d: x %a gives %a, fmt_round(x / s) %a",
                                  fmt_table[fmts[fi]].name, sc, fp32, sat, x[i], out[i], want);
                    }
                }
    CHECK(bad == 0, "quant_round_quotients: %ld of %ld values differ from fmt_round(x / s)", bad, n);
}

/* The same definition where the quotients fall on or next to the formats' midpoints (where a binary32
 * quotient and a binary64 one could round apart): x = RN32(m s) for m each format's midpoints (and its
 * representable values) over its whole range, and one unit of binary32 either side of that x, against
 * scales of 24 significant bits as a per-token scale has them (amax / 448 in binary32); plus x that are
 * not binary32 values (0.1 and its kin), whose lanes take the scalar expression. Every format the binary32
 * path takes (e4m3, e5m2, fp16), through binary32 and not, saturating and not. */
static void test_quotients_near_ties(void)
{
    const long N = check_quick() ? 257 : 4099;
    double *x = malloc(sizeof(double) * (size_t)N), *out = malloc(sizeof(double) * (size_t)N);
    const fmt_id_t fmts[] = {FMT_E4M3, FMT_E5M2, FMT_FP16};
    fmt_rng_t rng;
    fmt_rng_seed(&rng, 29);
    long bad = 0, n = 0;
    for (int fi = 0; fi < 3; fi++) {
        const fmt_t *F = &fmt_table[fmts[fi]];
        for (int t = 0; t < 6; t++) {
            /* a scale of 24 bits: amax / 448 in binary32, amax uniform in [1, 8) */
            double amax = 1.0 + 7.0 * ldexp((double)(fmt_rng_next(&rng) >> 11), -53);
            double sc = (double)(float)(amax / 448.0);
            for (long i = 0; i < N; i++) {
                /* a value of the format (m bits) or a midpoint (m + 1 bits), at a random binade of its range */
                int e = F->emin - 2 + (int)(fmt_rng_next(&rng) % (unsigned)(F->emax - F->emin + 4));
                long frac = (long)(fmt_rng_next(&rng) % (1u << F->prec));
                double m = ldexp((double)((1L << F->prec) + frac), e - F->prec);
                double xv = (double)(float)(m * sc);
                long side = (long)(fmt_rng_next(&rng) % 3) - 1; /* one binary32 unit down, none, up */
                xv = side ? (double)nextafterf((float)xv, side > 0 ? INFINITY : -INFINITY) : xv;
                x[i] = fmt_rng_next(&rng) & 1 ? -xv : xv;
            }
            x[5] = 0.1, x[6] = -0.3 * sc, x[N - 2] = 1.0 / 3.0; /* not binary32 values */
            for (int fp32 = 0; fp32 < 2; fp32++)
                for (int sat = 0; sat < 2; sat++) {
                    quant_round_quotients(out, x, N, sc, fp32, fmts[fi], FMT_RNE, sat, 0, NULL);
                    for (long i = 0; i < N; i++, n++) {
                        double y = x[i] / sc;
                        double want = fmt_round(fp32 ? fmt_fp32(y) : y, fmts[fi], FMT_RNE, sat, NULL);
                        int same = (isnan(want) && isnan(out[i])) || memcmp(&want, &out[i], sizeof want) == 0;
                        if (!same && bad++ < 5)
                            CHECK(0, "%s s %a fp32 %d sat %d: x %a gives %a, fmt_round(x / s) %a", F->name, sc, fp32,
                                  sat, x[i], out[i], want);
                    }
                }
        }
    }
    CHECK(bad == 0, "quant_round_quotients near midpoints: %ld of %ld values differ from fmt_round(x / s)", bad, n);
    free(x);
    free(out);
}

int main(void)
{
    test_hand();
    for (fmt_simd = 2; fmt_simd >= 0; fmt_simd--) { /* AVX-512, AVX2 and the plain loops */
        test_quotients();
        test_quotients_near_ties();
    }
    fmt_simd = 2;
    test_round_trip();
    return check_done("t-quant");
}
