/* t-sfu -- the SFU models against the H100's own results: every one of the 2^23 inputs of each
 * measured core (tests/data/sfu, read through xz): ex2 on [0, 1) and (-1, 0], rcp on [1, 2),
 * lg2 on [2, 4); and the special inputs the probes recorded. AMLA_QUICK (valgrind, sanitizers):
 * every QUICK_STEP-th input of each core and of the width check, both ends kept; make test runs all. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpfr.h>

#include "check.h"
#include "num/acc/acc.h"
#include "num/sfu/sfu.h"

#define N (1 << 23)
#define QUICK_STEP 61 /* odd: the low 17 bits of the inputs taken still take every value (2^23 / 61 > 2^17) */

static int32_t res[N];
static float xs[N], ys[N];

/* the measured residuals of one core: hardware minus correctly rounded binary32, in ulps */
static int load(const char *name)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "xz -dc tests/data/sfu/%s.bin.xz", name);
    FILE *p = popen(cmd, "r");
    size_t got = p ? fread(res, 4, N, p) : 0;
    if (p)
        pclose(p);
    return got == N;
}

/* the hardware's result: the correctly rounded value of `exact` moved by the residual */
static uint32_t hw_bits(double exact, int32_t d)
{
    float cr = (float)exact;
    uint32_t b;
    memcpy(&b, &cr, 4);
    return b + (uint32_t)d;
}

/* the input after f with this step, the last one (N - 1) always taken; N after it */
static uint32_t next_input(uint32_t f, uint32_t step)
{
    return f == N - 1 ? N : f + step < N ? f + step : N - 1;
}

static uint32_t bits(float y)
{
    uint32_t b;
    memcpy(&b, &y, 4);
    return b;
}

/* The largest distance in binary32 ulps between the model's f(x) and the correctly rounded f(x)
 * (MPFR), the CUDA Programming Guide's definition of its error bounds, over inputs x = lo + (hi -
 * lo) i / n with normal results. */
typedef int (*mpfr_fn)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t);
static double max_ulp_vs_mpfr(float (*model)(float), mpfr_fn f, double lo, double hi, long n)
{
    mpfr_t a, r;
    mpfr_inits2(200, a, r, (mpfr_ptr)0);
    double worst = 0;
    for (long i = 0; i <= n; i++) {
        float x = (float)(lo + (hi - lo) * (double)i / (double)n);
        mpfr_set_flt(a, x, MPFR_RNDN);
        f(r, a, MPFR_RNDN);
        float cr = mpfr_get_flt(r, MPFR_RNDN), y = model(x);
        if (!isfinite(cr) || cr == 0 || fabsf(cr) < 0x1p-126f)
            continue; /* the bounds are for normal results */
        /* positive results: their bit patterns are consecutive integers */
        double d = fabs((double)bits(y) - (double)bits(cr));
        worst = d > worst ? d : worst;
    }
    mpfr_clears(a, r, (mpfr_ptr)0);
    return worst;
}

/* CUDA's exp2f, expf, logf and log2f (no fast math; models read off the H100 / H200 SASS) against MPFR within
 * the CUDA Programming Guide's maximum ulp errors (2, 2, 1 and 1), and their special values */
static void check_cuda_math(void)
{
    long n = check_quick() ? 4000 : 400000;
    double e2 = max_ulp_vs_mpfr(sfu_cuda_exp2f, mpfr_exp2, -140, 127, n);
    double e = max_ulp_vs_mpfr(sfu_cuda_expf, mpfr_exp, -100, 88, n);
    double l = max_ulp_vs_mpfr(sfu_cuda_logf, mpfr_log, 0x1p-140, 1e6, n);
    double l1 = max_ulp_vs_mpfr(sfu_cuda_logf, mpfr_log, 0.5, 2, n);
    double g = max_ulp_vs_mpfr(sfu_cuda_log2f, mpfr_log2, 0x1p-140, 1e6, n);
    double g1 = max_ulp_vs_mpfr(sfu_cuda_log2f, mpfr_log2, 0.5, 2, n);
    printf("t-sfu: CUDA exp2f %.0f ulp, expf %.0f ulp, logf %.0f ulp (%.0f near 1), log2f %.0f ulp (%.0f near 1) from "
           "MPFR's rounding at most\n", e2, e, l, l1, g, g1);
    CHECK(g <= 1 && g1 <= 1, "log2f within 1 ulp of MPFR: %.3f, %.3f near 1", g, g1);
    CHECK(sfu_cuda_log2f(1) == 0 && sfu_cuda_log2f(8) == 3 && sfu_cuda_log2f(0x1p-149f) == -149 &&
              sfu_cuda_log2f(0) == -INFINITY && isnan(sfu_cuda_log2f(-1)) && isinf(sfu_cuda_log2f(INFINITY)),
          "log2f: 1, 8, the smallest subnormal, 0, -1, inf");
    CHECK(e2 <= 2, "exp2f within 2 ulp of MPFR: %.3f", e2);
    CHECK(e <= 2, "expf within 2 ulp of MPFR: %.3f", e);
    CHECK(l <= 1 && l1 <= 1, "logf within 1 ulp of MPFR: %.3f, %.3f near 1", l, l1);
    CHECK(sfu_cuda_expf(0) == 1 && sfu_cuda_exp2f(0) == 1 && sfu_cuda_logf(1) == 0, "exp 0 = 1, log 1 = 0");
    CHECK(sfu_cuda_expf(-INFINITY) == 0 && isinf(sfu_cuda_expf(INFINITY)) && isnan(sfu_cuda_expf(NAN)), "expf: -inf, inf, NaN");
    CHECK(sfu_cuda_exp2f(-INFINITY) == 0 && sfu_cuda_exp2f(-149) == 0x1p-149f && sfu_cuda_exp2f(-140) == 0x1p-140f,
          "exp2f keeps subnormal results (2^-140, 2^-149)");
    CHECK(sfu_cuda_logf(0) == -INFINITY && isnan(sfu_cuda_logf(-1)) && isinf(sfu_cuda_logf(INFINITY)) &&
              sfu_cuda_logf(0x1p-149f) < -103,
          "logf: 0, -1, inf, the smallest subnormal");
    CHECK(sfu_cuda_fast_logf(1) == 0 && fabsf(sfu_cuda_fast_logf(0x1p-140f) + 140 * 0.6931472f) < 1e-4f,
          "__logf: 1, a subnormal (scaled by 2^24)");
}

/* sfu_ex2_n, sfu_cuda_exp2f_n and sfu_cuda_expf_n at every width against their scalar functions on bit patterns spread over all 2^32 (a
 * stride coprime to 2^32, offset so that each binade's first and last patterns come too), and on
 * every class its lanes treat apart: NaNs, infinities, |x| >= 128, integers, subnormal inputs,
 * results just above and below binary32's normal range, lengths that leave a scalar tail */
static void check_ex2_widths(void)
{
    static const float special[] = {NAN, -NAN, INFINITY, -INFINITY, 128.0f, -128.0f, 127.99999f, -127.99999f, 0.0f,
                                    -0.0f, 0x1p-140f, -0x1p-140f, -126.0f, -126.5f, -127.0f, -127.5f, -149.0f, -0x1p-23f,
                                    3.0f, -1.0f, 1e-30f, -1e-30f, 0x1.fffffep6f, -0x1.fffffep6f, 0.5f, -0.5f};
    const long ns = (long)(sizeof special / sizeof special[0]);
    int saved = acc_simd;
    for (int w = 2; w >= 0; w--) {
        acc_simd = w;
        long bad = 0, n = 0;
        for (uint64_t start = 0; start < 3; start++) {
            const uint64_t stride = (4099 + 2 * start) * (check_quick() ? QUICK_STEP : 1); /* odd */
            long m = 0;
            for (uint64_t u = start * 0x7fffff; u < (1ULL << 32) && m < N; u += stride, m++) {
                uint32_t b = (uint32_t)u;
                memcpy(&xs[m], &b, 4);
            }
            for (long i = 0; i < ns && m < N; i++)
                xs[m++] = special[i];
            for (long len = m; len > m - 9; len--) { /* every tail length of the eight-lane loop */
                sfu_ex2_n(ys, xs, len);
                for (long i = 0; i < len; i++)
                    bad += bits(ys[i]) != bits(sfu_ex2(xs[i]));
                n += len;
                sfu_cuda_exp2f_n(ys, xs, len);
                for (long i = 0; i < len; i++)
                    bad += bits(ys[i]) != bits(sfu_cuda_exp2f(xs[i]));
                n += len;
                sfu_cuda_expf_n(ys, xs, len);
                for (long i = 0; i < len; i++)
                    bad += bits(ys[i]) != bits(sfu_cuda_expf(xs[i]));
                n += len;
            }
        }
        CHECK(bad == 0, "sfu_ex2_n, sfu_cuda_exp2f_n, sfu_cuda_expf_n at width %d: %ld of %ld results differ from the scalar ones", w, bad, n);
    }
    acc_simd = saved;
}

int main(void)
{
    static const struct {
        const char *name;
        int fn;       /* 0: ex2, 1: rcp */
        double base, step;
    } cores[] = {{"ex2_pos", 0, 0, 0x1p-23}, {"ex2_neg", 0, 0, -0x1p-23}, {"rcp", 1, 1, 0x1p-23},
                 {"lg2_2", 2, 2, 0x1p-22}};
    /* lg2 on [1, 2) is checked on the GPU instead (probe4.txt: 9 inputs of 2^32 differ there, all
     * in [1, 2)): its stored residuals are against the GPU's own double log2, which differs from
     * this machine's for a few inputs, so that the hardware's result cannot be rebuilt here for
     * every input of that binade */
    for (size_t c = 0; c < sizeof cores / sizeof cores[0]; c++) {
        if (!load(cores[c].name)) {
            CHECK(0, "cannot read tests/data/sfu/%s.bin.xz (is xz installed?)", cores[c].name);
            continue;
        }
        long bad = 0, n = 0;
        const uint32_t step = check_quick() ? QUICK_STEP : 1;
        for (uint32_t f = 0; f < N; f = next_input(f, step)) {
            float x = (float)(cores[c].base + f * cores[c].step);
            int fn = cores[c].fn;
            uint32_t want = hw_bits(fn == 2 ? log2(x) : fn ? 1.0 / x : exp2(x), res[f]);
            uint32_t got = bits(fn == 2 ? sfu_lg2(x) : fn ? sfu_rcp(x) : sfu_ex2(x));
            n++;
            if (got != want && bad++ < 5)
                CHECK(0, "%s(%a): model 0x%08x, H100 0x%08x", fn == 2 ? "lg2" : fn ? "rcp" : "ex2", (double)x, got, want);
        }
        CHECK(bad == 0, "%s: %ld of %ld inputs differ from the H100", cores[c].name, bad, n);
        if (cores[c].fn == 0) { /* the vector ex2 (the widest this processor has) on the same inputs */
            long m = 0;
            for (uint32_t f = 0; f < N; f = next_input(f, step))
                xs[m] = (float)(cores[c].base + f * cores[c].step), res[m++] = res[f];
            sfu_ex2_n(ys, xs, m);
            long vbad = 0;
            for (long i = 0; i < m; i++)
                vbad += bits(ys[i]) != hw_bits(exp2(xs[i]), res[i]);
            CHECK(vbad == 0, "%s: sfu_ex2_n differs from the H100 on %ld of %ld inputs", cores[c].name, vbad, m);
        }
    }
    check_ex2_widths();
    /* lg2 on the nine inputs where the H100 keeps the fraction unshifted (probe4.txt, every binary32
     * input run on the GPU against the model before these were listed): the H100's values */
    FILE *pf = fopen("tests/data/sfu/probe4.txt", "r");
    CHECK(pf != NULL, "cannot read tests/data/sfu/probe4.txt");
    int nl = 0;
    char line[256];
    while (pf && fgets(line, sizeof line, pf)) {
        unsigned in, hw, old;
        if (sscanf(line, " lg2(0x%x): H100 0x%x, model 0x%x", &in, &hw, &old) != 3)
            continue;
        float x;
        memcpy(&x, &in, 4);
        CHECK(bits(sfu_lg2(x)) == hw, "lg2(0x%08x): model 0x%08x, H100 0x%08x", in, bits(sfu_lg2(x)), hw);
        nl++;
    }
    if (pf)
        fclose(pf);
    CHECK(nl == 9, "probe4.txt: %d lg2 lines, not 9", nl);
    /* special inputs, as the probes over every binary32 input found them (probe3.txt) */
    CHECK(isnan(sfu_ex2(NAN)) && isnan(sfu_rcp(NAN)), "NaN");
    CHECK(sfu_ex2(INFINITY) == INFINITY && bits(sfu_ex2(-INFINITY)) == 0, "ex2(+-inf)");
    CHECK(sfu_ex2(128.0f) == INFINITY && bits(sfu_ex2(-128.0f)) == 0 && sfu_ex2(0.0f) == 1 && sfu_ex2(-0.0f) == 1,
          "ex2 range ends and zeros");
    CHECK(sfu_ex2(0x1p-140f) == 1.0f && bits(sfu_ex2(-127.5f)) == 0, "ex2: subnormal input 1, subnormal result 0");
    CHECK(sfu_ex2(-126.0f) == 0x1p-126f && sfu_ex2(3.0f) == 8.0f && sfu_ex2(-1.0f) == 0.5f, "ex2 of integers");
    CHECK(sfu_rcp(0.0f) == INFINITY && sfu_rcp(-0.0f) == -INFINITY && sfu_rcp(0x1p-130f) == INFINITY,
          "rcp of zeros and subnormals (flushed)");
    CHECK(bits(sfu_rcp(INFINITY)) == 0 && bits(sfu_rcp(-INFINITY)) == 0x80000000u, "rcp(+-inf)");
    CHECK(bits(sfu_rcp(0x1p127f)) == 0 && sfu_rcp(2.0f) == 0.5f && sfu_rcp(-4.0f) == -0.25f, "rcp: flushed, powers");
    CHECK(sfu_lg2(0.0f) == -INFINITY && sfu_lg2(0x1p-130f) == -INFINITY && isnan(sfu_lg2(-1.0f)) &&
              sfu_lg2(INFINITY) == INFINITY && sfu_lg2(1.0f) == 0 && sfu_lg2(8.0f) == 3.0f &&
              sfu_lg2(0.25f) == -0x1.fffffep+0f,
          "lg2: zeros and subnormals -inf, negative NaN, powers of two (below 1 the one's complement "
          "leaves the H100's lg2(1/4) at -2 + 2^-23: probe4.txt, the model equals the hardware there)");
    CHECK(bits(sfu_ftz(0x1p-140f)) == 0 && bits(sfu_ftz(-0x1p-140f)) == 0x80000000u && sfu_ftz(0x1p-126f) == 0x1p-126f,
          "ftz");
    check_cuda_math();
    return check_done("t-sfu");
}
