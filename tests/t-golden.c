/* t-golden -- Golden against an all-MPFR computation at 256 bits, and its stated bound */
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "num/vec/dd.h"
#include "num/fmt/fmt.h"
#include "data/gen.h"
#include "num/acc/gemm_u8.h"
#include "ref/golden.h"
#include "ref/ozaki.h"
#include "ref/ozaki_one.h"
#include "golden_mpfr.h"

/* dd_exp against MPFR at 256 bits: relative error below 2^-100. */
static void test_dd_exp(void)
{
    fmt_rng_t rng;
    fmt_rng_seed(&rng, 4242); /* seed 4242 (include this in bug reports) */
    mpfr_t x, y, t;
    mpfr_inits2(256, x, y, t, (mpfr_ptr)0);
    double worst = 0;
    int n = check_quick() ? 2000 : 100000;
    for (int i = 0; i < n; i++) {
        double u = ldexp((double)(fmt_rng_next(&rng) >> 11), -53);
        double hi = i % 2 ? -40.0 * u : -745.0 + 1400.0 * u;
        double lo = ldexp((double)(fmt_rng_next(&rng) >> 11), -53) * ldexp(fabs(hi) + 1e-300, -54);
        dd_t a = dd_fast_two_sum(hi, lo);
        dd_t r = dd_exp(a);
        mpfr_set_d(x, a.hi, MPFR_RNDN);
        mpfr_add_d(x, x, a.lo, MPFR_RNDN);
        mpfr_exp(y, x, MPFR_RNDN);
        mpfr_set_d(t, r.hi, MPFR_RNDN);
        mpfr_add_d(t, t, r.lo, MPFR_RNDN);
        mpfr_sub(t, t, y, MPFR_RNDN);
        mpfr_div(t, t, y, MPFR_RNDN);
        double rel = fabs(mpfr_get_d(t, MPFR_RNDN));
        if (r.hi < 0x1p-960) /* lo underflows: check absolute error instead */
            rel = 0;
        worst = rel > worst ? rel : worst;
        CHECK(rel < 0x1p-100, "dd_exp(%a + %a): relative error %g", a.hi, a.lo, rel);
    }
    printf("t-golden: dd_exp worst relative error %.3g (2^%.1f) over %d arguments\n", worst,
           worst > 0 ? log2(worst) : -INFINITY, n);
    mpfr_clears(x, y, t, (mpfr_ptr)0);
}

/* dd_exp_array (sixteen lanes as four AVX2 vectors, eight with AVX-512) gives every element bit for bit what
 * the scalar composition gives, across the range: results 0, subnormal, normal and overflowing. */
static void test_dd_exp_array(void)
{
    fmt_rng_t rng;
    fmt_rng_seed(&rng, 77);
    long n = 4099, bad = 0;
    double *h = malloc(sizeof(double) * (size_t)n), *l = malloc(sizeof(double) * (size_t)n);
    dd_t *x = malloc(sizeof(dd_t) * (size_t)n);
    dd_t scale = {0x1.6a09e667f3bcdp-5, -0x1.bdd3413b26456p-59}; /* ~1/sqrt(512) */
    double m = 3.25;
    for (long i = 0; i < n; i++) {
        double u = ldexp((double)(fmt_rng_next(&rng) >> 11), -53);
        double hi = i % 3 == 0 ? m - 40000.0 * u : i % 3 == 1 ? m - 200.0 * u : m + 35000.0 * (u - 0.5);
        /* shifted and scaled to -712 .. -707, the scale 2^m about binary64's least normal: at random,
         * then in order (-709.6 .. -707.6), so that whole vectors of lanes share one scale */
        if (i >= n - 512)
            hi = m - (i < n - 256 ? 707.0 + 5.0 * u : 709.6 - 2.0 * (double)(i - (n - 256)) / 256) * 0x1.6a09e667f3bcdp+4;
        x[i] = dd_fast_two_sum(hi, ldexp(u - 0.5, -60) * hi);
        h[i] = x[i].hi;
        l[i] = x[i].lo;
    }
    for (dd_simd = 1; dd_simd <= 2; dd_simd++) { /* AVX2, then AVX-512 where present */
        for (long i = 0; i < n; i++) {
            h[i] = x[i].hi;
            l[i] = x[i].lo;
        }
        dd_exp_array(h, l, n, m, scale);
        for (long i = 0; i < n; i++) {
            dd_t want = dd_exp(dd_mul(dd_add(x[i], (dd_t){-m, 0.0}), scale));
            if (memcmp(&want.hi, &h[i], sizeof(double)) || memcmp(&want.lo, &l[i], sizeof(double)))
                if (bad++ < 5)
                    CHECK(0, "dd_exp_array (simd level %d) element %ld (%a): %a + %a, scalar %a + %a", dd_simd, i,
                          x[i].hi, h[i], l[i], want.hi, want.lo);
        }
    }
    dd_simd = 2;
    CHECK(bad == 0, "dd_exp_array: %ld of %ld elements differ from the scalar path", bad, 2 * n);
    /* dd_sum_rows against dd_sum_array row by row: 21 rows (a group of eight long ones, a group of eight with short
     * ones, then five alone) of lengths from 0 to n, at every simd level */
    enum { NR = 21 };
    long lens[NR] = {n,    n - 1, 1029, n - 2, 1030, n - 3, 515, 1027, n, 4, 0,   7, n - 2, 1, 3, 1029,
                     n - 3, 5,     0,    1030, 2},
         ld = n;
    double *rh = malloc(sizeof(double) * (size_t)(NR * ld)), *rl = malloc(sizeof(double) * (size_t)(NR * ld));
    for (long i = 0; i < NR * ld; i++) {
        double u = ldexp((double)(fmt_rng_next(&rng) >> 11), -53);
        dd_t v = dd_fast_two_sum(ldexp(u, (int)(i % 61) - 30), ldexp(u - 0.5, (int)(i % 61) - 85));
        rh[i] = v.hi;
        rl[i] = v.lo;
    }
    long sbad = 0;
    for (dd_simd = 0; dd_simd <= 2; dd_simd++) {
        dd_t s[NR];
        dd_sum_rows(s, rh, rl, ld, lens, NR);
        for (int r = 0; r < NR; r++) {
            dd_t want = dd_sum_array(rh + r * ld, rl + r * ld, lens[r]);
            if (memcmp(&want, &s[r], sizeof want) && sbad++ < 5)
                CHECK(0, "dd_sum_rows (simd level %d) row %d of %ld: %a + %a, dd_sum_array %a + %a", dd_simd, r,
                      lens[r], s[r].hi, s[r].lo, want.hi, want.lo);
        }
    }
    dd_simd = 2;
    CHECK(sbad == 0, "dd_sum_rows: %ld rows differ from dd_sum_array", sbad);
    free(rh);
    free(rl);
    free(h);
    free(l);
    free(x);
}

typedef struct {
    const char *what;
    attn_shape_t s;
    gen_cfg_t g;
} golden_case_t;

/* W and A of the bound for element (r, c): computed in binary64 (they only scale it). */
static void bound_terms(const attn_input_t *in, long row, long c, double scale, double *w, double *z, double *a)
{
    const attn_shape_t *s = &in->s;
    long rows = s->hq / s->hkv * s->sq;
    long h = row / rows, r = row % rows;
    const double *q = in->q + (h * rows + r) * s->dk, *k = in->k + h * s->sk * s->dk,
                 *v = in->v + h * s->sk * s->dv;
    long lim = s->causal ? r % s->sq + (s->sk - s->sq) : s->sk - 1;
    double *lg = malloc(sizeof(double) * (size_t)s->sk);
    double m = -INFINITY, amax = 0;
    for (long j = 0; j <= lim; j++) {
        double d = 0, da = 0;
        for (long t = 0; t < s->dk; t++) {
            d += q[t] * k[j * s->dk + t];
            da += fabs(q[t] * k[j * s->dk + t]);
        }
        lg[j] = d * scale;
        m = lg[j] > m ? lg[j] : m;
        amax = da * scale > amax ? da * scale : amax;
    }
    double num = 0, den = 0, vs = 0;
    for (long j = 0; j <= lim; j++) {
        double p = exp(lg[j] - m);
        num += p * fabs(v[j * s->dv + c]);
        vs += fabs(v[j * s->dv + c]);
        den += p;
    }
    *w = 2 * num / den; /* factor 2: W itself is only known to binary64 accuracy */
    *z = 2 * vs / den;
    *a = 2 * amax;
    free(lg);
}

static void test_against_mpfr(void)
{
    const golden_case_t cases[] = {
        {"N(0,1) bf16", {4, 1, 1, 64, 32, 16, 0}, {GEN_NORMAL, 0, 1, -1, 1, 0, FMT_BF16, {0, 0, 0, 0, 0, 0}}},
        {"N(0,100) bf16 (near one-hot)", {4, 1, 1, 64, 32, 16, 0}, {GEN_NORMAL, 0, 10, -1, 1, 0, FMT_BF16, {0, 0, 0, 0, 0, 0}}},
        {"U(-60,60) bf16 (one-hot)", {4, 1, 1, 64, 32, 16, 0}, {GEN_UNIFORM, 0, 1, -60, 60, 0, FMT_BF16, {0, 0, 0, 0, 0, 0}}},
        {"U(-1,1) fp16 separate V", {3, 1, 2, 50, 24, 20, 0}, {GEN_UNIFORM, 0, 1, -1, 1, 1, FMT_FP16, {0, 0, 0, 0, 0, 0}}},
        {"fa3-outlier fp32 (TwoProd)", {2, 2, 3, 33, 16, 8, 1}, {GEN_FA3_OUTLIER, 0, 1, -1, 1, 1, FMT_FP32, {0, 0, 0, 0, 0, 0}}},
        {"N(3,4) e4m3 causal GQA", {4, 2, 4, 40, 16, 16, 1}, {GEN_NORMAL, 3, 2, -1, 1, 0, FMT_E4M3, {0, 0, 0, 0, 0, 0}}},
        {"MLA shape N(0,16) bf16", {2, 1, 1, 24, 576, 512, 0}, {GEN_NORMAL, 0, 4, -1, 1, 0, FMT_BF16, {0, 0, 0, 0, 0, 0}}},
        {"N(0,1) bf16, 2500 keys (chunks)", {2, 1, 1, 2500, 64, 24, 0}, {GEN_NORMAL, 0, 1, -1, 1, 0, FMT_BF16, {0, 0, 0, 0, 0, 0}}},
        {"fp32, 2^-60 spread (Dot2 path)", {2, 1, 1, 40, 32, 8, 0}, {GEN_NORMAL, 0, 1, -1, 1, 1, FMT_FP32, {0, 0, 0, 0, 0, 0}}},
        {"bf16, entries 2^-36 (remainders)", {4, 1, 1, 300, 128, 32, 0}, {GEN_NORMAL, 0, 1, -1, 1, 1, FMT_BF16, {0, 0, 0, 0, 0, 0}}},
    };
    /* which path each case must take: 2 = both products Ozaki, 0 = both Dot2 */
    const int ozaki_products[] = {2, 2, 2, 2, 2, 2, 2, 2, 0, 2};
    /* how many of them the one-GEMM path must do (2: both; -1: either way), and whether it must
     * sum remainder terms: the last case scales a few entries by 2^-36, far below their rows'
     * grids (two of Q, every 193rd of K, every 97th of V), so no slice width covers them */
    const int one_products[] = {2, 2, 2, 2, -1, 2, 2, 2, 0, 2}, with_terms[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    int nsamples = check_quick() ? 1 : 3;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int sample = 0; sample < nsamples; sample++) {
            const golden_case_t *gc = &cases[ci];
            attn_input_t in = {.s = gc->s, .q = NULL, .k = NULL, .v = NULL};
            err_t e = {0};
            CHECK(gen_sample(&in, &gc->g, 99, sample, &e) == 0, "gen: %s", e.msg);
            if (ozaki_products[ci] == 0) /* rows that need more slices than the Ozaki path allows */
                for (long i = 0; i < gc->s.sk * gc->s.dk; i += 7) {
                    in.k[i] = ldexp(in.k[i], -60);
                    if (i < gc->s.sk * gc->s.dv)
                        in.v[i] = ldexp(in.v[i], -60);
                }
            if (with_terms[ci]) {
                in.q[5] = ldexp(in.q[5], -36);
                in.q[gc->s.dk * 2 + 17] = ldexp(in.q[gc->s.dk * 2 + 17], -36);
                for (long i = 3; i < gc->s.sk * gc->s.dk; i += 193)
                    in.k[i] = ldexp(in.k[i], -36);
                for (long i = 5; i < gc->s.sk * gc->s.dv; i += 97)
                    in.v[i] = ldexp(in.v[i], -36);
            }
            long n = gc->s.hq * gc->s.sq * gc->s.dv;
            double *o = malloc(sizeof(double) * (size_t)n), *ref = malloc(sizeof(double) * (size_t)n);
            long oz0, d0, oz1, d1, one0, t0, one1, t1;
            golden_paths(&oz0, &d0);
            ozaki_one_stats(&one0, &t0);
            golden_attention(o, &in, 0);
            golden_paths(&oz1, &d1);
            ozaki_one_stats(&one1, &t1);
            CHECK(one_products[ci] < 0 || one1 - one0 == one_products[ci] * gc->s.hkv,
                  "%s: %ld products on the one-GEMM path (expected %d per head group)", gc->what, one1 - one0,
                  one_products[ci]);
            CHECK(!with_terms[ci] || t1 - t0 > 0, "%s: no remainder terms summed", gc->what);
            CHECK(oz1 - oz0 == ozaki_products[ci] * gc->s.hkv && d1 - d0 == (2 - ozaki_products[ci]) * gc->s.hkv,
                  "%s: %ld Ozaki and %ld Dot2 products (expected %d Ozaki per head group)", gc->what, oz1 - oz0,
                  d1 - d0, ozaki_products[ci]);
            golden_attention_mpfr(ref, &in, 0, 256);
            double scale = 1.0 / sqrt((double)gc->s.dk);
            double worst = 0;
            for (long i = 0; i < n; i++) {
                double d = fabs(o[i] - ref[i]);
                double rel = ref[i] != 0 ? d / fabs(ref[i]) : d;
                worst = rel > worst ? rel : worst;
                CHECK(rel <= 1e-15, "%s sample %d element %ld: golden %a, MPFR-256 %a (rel %g)", gc->what,
                      sample, i, o[i], ref[i], rel);
                double w, z, a;
                bound_terms(&in, i / gc->s.dv, i % gc->s.dv, scale, &w, &z, &a);
                double bound = golden_bound(fabs(ref[i]), w, z, a, gc->s.sk, gc->s.dk);
                CHECK(d <= bound, "%s element %ld: error %g exceeds the stated bound %g", gc->what, i, d, bound);
            }
            if (sample == 0)
                printf("t-golden: %-30s worst relative difference to MPFR-256: %.3g\n", gc->what, worst);
            free(o);
            free(ref);
            attn_input_free(&in);
        }
}

/* One visible key: the output is that key's V row exactly. */
static void test_single_key(void)
{
    attn_shape_t s = {2, 1, 3, 5, 8, 4, 1}; /* causal, sq = 3, sk = 5: row t sees keys <= t + 2 */
    attn_input_t in = {.s = s, .q = NULL, .k = NULL, .v = NULL};
    gen_cfg_t g = {GEN_NORMAL, 0, 1, -1, 1, 1, FMT_BF16, {0, 0, 0, 0, 0, 0}};
    err_t e = {0};
    gen_sample(&in, &g, 5, 0, &e);
    /* make keys 0..2 identical: row 0 then averages V rows 0..2 */
    for (int j = 1; j < 3; j++)
        memcpy(in.k + j * 8, in.k, 8 * sizeof(double));
    double o[2 * 3 * 4];
    golden_attention(o, &in, 0);
    for (long c = 0; c < 4; c++) {
        /* hand calculation: equal weights 1/3 over V rows 0, 1, 2 */
        double want = (in.v[c] + in.v[4 + c] + in.v[8 + c]) / 3.0;
        CHECK(fabs(o[c] - want) <= 4e-16 * (fabs(in.v[c]) + fabs(in.v[4 + c]) + fabs(in.v[8 + c])),
              "equal logits: o %a, mean %a", o[c], want);
    }
    attn_input_free(&in);
}

/* log-sum-exp by hand: with every key equal to k0, row t's visible scores are all
 * scale q_t.k0, so lse = scale q_t.k0 + ln(number of visible keys). */
static void test_lse(void)
{
    attn_shape_t s = {2, 1, 3, 5, 8, 4, 1}; /* causal: row t sees t + 3 keys */
    attn_input_t in = {.s = s, .q = NULL, .k = NULL, .v = NULL};
    gen_cfg_t g = {GEN_NORMAL, 0, 1, -1, 1, 1, FMT_BF16, {0, 0, 0, 0, 0, 0}};
    err_t e = {0};
    gen_sample(&in, &g, 7, 0, &e);
    for (int j = 1; j < 5; j++)
        memcpy(in.k + j * 8, in.k, 8 * sizeof(double));
    double o[2 * 3 * 4], lse[2 * 3];
    golden_attention_lse(o, lse, &in, 0.25);
    for (long h = 0; h < 2; h++)
        for (long t = 0; t < 3; t++) {
            /* bf16 inputs: each product is exact in double and the sum of 8 has at most 8
             * roundings of 2^-53 relative to sum |q||k| */
            double dot = 0, mag = 0;
            for (long c = 0; c < 8; c++) {
                dot += in.q[(h * 3 + t) * 8 + c] * in.k[c];
                mag += fabs(in.q[(h * 3 + t) * 8 + c] * in.k[c]);
            }
            double want = 0.25 * dot + log((double)(t + 3));
            CHECK(fabs(lse[h * 3 + t] - want) <= 0.25 * mag * 8 * 0x1p-53 + 4 * 0x1p-53 * fabs(want),
                  "lse head %ld row %ld: %a, by hand %a", h, t, lse[h * 3 + t], want);
        }
    attn_input_free(&in);
}

/* Golden's exact slice products through AMX's byte products (where the processor has them)
 * give the same bits as through binary64 GEMMs: sums that are exact are the same numbers.
 * MLA's shape at a reduced context, a causal, unaligned one (the last chunks partial), and one whose keys are all
 * alike (every P is 1, more than its planes' cap holds: P V's planes without the cap). */
static void test_u8_same_bits(void)
{
    static const attn_shape_t shapes[] = {{16, 1, 1, 1100, 576, 512, 0}, {5, 1, 3, 700, 96, 64, 1},
                                          {8, 1, 1, 600, 64, 48, 0}};
    long identical = 0, elements = 0;
    for (size_t c = 0; c < sizeof shapes / sizeof *shapes; c++) {
        attn_input_t in = {.s = shapes[c], .q = NULL, .k = NULL, .v = NULL};
        gen_cfg_t g = {GEN_NORMAL, 0, 4, -1, 1, (int)c, FMT_BF16, {0, 0, 0, 0, 0, 0}};
        err_t e = {0};
        gen_sample(&in, &g, 11, 0, &e);
        for (long j = 1; c == 2 && j < in.s.sk; j++)
            memcpy(in.k + j * in.s.dk, in.k, sizeof(double) * (size_t)in.s.dk);
        long n = in.s.hq * in.s.sq * in.s.dv, nl = in.s.hq * in.s.sq;
        double *o[2], *lse[2];
        for (int amx = 0; amx < 2; amx++) {
            o[amx] = malloc(sizeof(double) * (size_t)n);
            lse[amx] = malloc(sizeof(double) * (size_t)nl);
            gemm_u8_amx = amx;
            golden_attention_lse(o[amx], lse[amx], &in, 0);
        }
        gemm_u8_amx = 1;
        for (long i = 0; i < n; i++)
            identical += memcmp(&o[0][i], &o[1][i], sizeof(double)) == 0;
        for (long i = 0; i < nl; i++)
            identical += memcmp(&lse[0][i], &lse[1][i], sizeof(double)) == 0;
        elements += n + nl;
        for (int amx = 0; amx < 2; amx++) {
            free(o[amx]);
            free(lse[amx]);
        }
        attn_input_free(&in);
    }
    CHECK(identical == elements, "Golden through byte products: %ld of %ld outputs and lse bit-identical", identical,
          elements);
    printf("t-golden: slice products through %s: %ld of %ld outputs and lse identical\n",
           gemm_u8_has_amx() ? "AMX" : "binary64 GEMMs (no AMX here) twice", identical, elements);
}

int main(void)
{
    test_lse();
    test_dd_exp();
    test_dd_exp_array();
    test_against_mpfr();
    test_single_key();
    test_u8_same_bits();
    return check_done("t-golden");
}
