/* t-amla -- Lemma 3.1 over every exponent, AMLA = Base in exact arithmetic, a hand-computed
 * two-block example of Algorithm 2 in both forms, and the naive form's overflow */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/variants/variants.h"
#include "check.h"
#include "data/gen.h"
#include "ref/golden.h"
#include "run/metric.h"

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Lemma 3.1: for 0 < E < 255 and -E < n < 255 - E, AS_FP32(AS_INT32(F) + n 2^23) = F 2^n
 * (checked against ldexpf); outside that range the add is reported as an event. */
static void test_lemma(void)
{
    const uint32_t mant[] = {0, 1, 0x400000, 0x7FFFFF, 0x123456};
    long inside = 0, outside = 0;
    for (uint32_t sign = 0; sign < 2; sign++)
        for (uint32_t E = 1; E < 255; E++)
            for (size_t mi = 0; mi < sizeof mant / sizeof mant[0]; mi++)
                for (int n = -255; n <= 255; n++) { /* n 2^23 must fit in an int32 */
                    float f = float_of(sign << 31 | E << 23 | mant[mi]);
                    float g = f;
                    int ev = attn_amla_int_add(&g, (int32_t)((uint32_t)n << 23));
                    if ((int)E + n > 0 && (int)E + n < 255) {
                        inside++;
                        float want = ldexpf(f, n);
                        CHECK(bits_of(g) == bits_of(want) && ev == 0,
                              "E %u n %d: int add gives 0x%08x, F 2^n is 0x%08x (event %d)", E, n, bits_of(g),
                              bits_of(want), ev);
                    } else {
                        outside++;
                        CHECK(ev == 1, "E %u n %d outside Lemma 3.1 not reported", E, n);
                    }
                }
    /* zero, subnormal, infinity and NaN operands are outside the lemma too */
    const uint32_t special[] = {0x00000000, 0x80000000, 0x00000001, 0x007FFFFF, 0x7F800000, 0x7FC00000};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
        float g = float_of(special[i]);
        CHECK(attn_amla_int_add(&g, 1 << 23) == 1, "special 0x%08x not reported", special[i]);
    }
    printf("t-amla: Lemma 3.1 checked on %ld in-range and %ld out-of-range adds\n", inside, outside);
}

static attn_cfg_t cfg(fmt_id_t in, fmt_id_t out, long block, double scale, int form, const char *exact)
{
    attn_cfg_t c;
    memset(&c, 0, sizeof c);
    c.in_format = in;
    c.out_format = out;
    c.block = block;
    c.acc_qk = c.acc_pv = ACC_FP32_FMA;
    c.scale = scale;
    c.amla_form = form;
    c.exact = exact;
    return c;
}

static long run_v(double *o, const char *name, const attn_input_t *in, const attn_cfg_t *c)
{
    attn_stats_t st = {0};
    attn_ctx_t ctx;
    err_t e = {0};
    int vi = attn_find(name);
    CHECK(vi >= 0 && attn_ctx_init(&ctx, vi, c, &st, &e) == 0, "variant %s: %s", name, e.msg);
    attn_run(o, vi, in, &ctx);
    return st.events;
}

/* In exact arithmetic (fp64 formats, every site exact) AMLA's rescaling is an identity
 * transformation of Base: all forms and ablations equal Base to 1e-12. */
static void test_exact_equals_base(void)
{
    const char *names[] = {"amla", "amla-nocomp", "amla-premul"};
    attn_input_t in = {.s = {8, 1, 1, 1000, 64, 48, 0}, .q = NULL, .k = NULL, .v = NULL};
    gen_cfg_t g = {GEN_NORMAL, 0, 3, -1, 1, 0, FMT_FP64, {0, 0, 0, 0, 0, 0}};
    err_t e = {0};
    gen_sample(&in, &g, 21, 0, &e);
    long n = 8 * 48;
    double *b = malloc(sizeof(double) * (size_t)n), *a = malloc(sizeof(double) * (size_t)n);
    attn_cfg_t c = cfg(FMT_FP64, FMT_FP64, 96, 1.0 / 8.0, ATTN_AMLA_PAPER, "all");
    run_v(b, "base", &in, &c);
    for (int form = 0; form < 2; form++)
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            c.amla_form = form;
            run_v(a, names[i], &in, &c);
            double m[METRIC_COUNT];
            metric_all(m, a, b, n);
            CHECK(m[METRIC_REL_FRO] <= 1e-12, "%s form %d exact: rel_fro %g against base", names[i], form,
                  m[METRIC_REL_FRO]);
        }
    free(a);
    free(b);
    attn_input_free(&in);
}

static float bf16_rne(float x)
{
    uint32_t u = bits_of(x);
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
    return float_of(u);
}

/* Algorithm 2 by hand on G = 1, Dk = Dv = 1, two keys in two blocks, scale 1:
 * q = 1, k = (0, 1), v = (1, 2); all vector math in binary32. */
static float hand_amla(int cann)
{
    const float ln2 = 0x1.62e43p-1f; /* fp32(ln 2) */
    /* block 1: s = 0, m1 = 0, n1 = 0, P = 1, l = 1, S32 = exp(0) = 1, S16 = 1, c1 = 1 */
    float l = 1.0f, o = 1.0f * 1.0f; /* O = bf16(P S16) v1 */
    float c1 = 1.0f;
    int n1 = 0;
    /* block 2: s = 1, m2 = 1 */
    float m2 = 1.0f;
    float mup = (float)exp((double)(0.0f - m2));
    float mq = m2 / ln2;
    float nn = -mq;
    int n2 = (int)(cann ? round(nn) : nearbyint(nn));
    float p = (float)exp((double)(1.0f - m2)); /* = 1 */
    l = l * mup + p;
    float s32 = (float)exp((double)(ln2 * ((float)n2 + mq)));
    float s16 = bf16_rne(s32);
    float c2 = s32 / s16;
    float ratio = cann ? c1 / c2 : c2 / c1;
    float eps = 1.5f * (ratio - 1.0f);
    float pb = bf16_rne(p * s16);
    float nf = ((float)(n2 - n1) + eps) + 1e-6f;
    double nscaled = (double)(nf * 0x1p23f);
    int32_t nint = (int32_t)(cann ? round(nscaled) : nearbyint(nscaled));
    o = float_of(bits_of(o) + (uint32_t)nint); /* AtomicAdd<INT32> */
    o = o + fmaf(pb, 2.0f, 0.0f);              /* AtomicAdd<FP32> of P V */
    float y = o / (l * s16);
    return bf16_rne(y);
}

static void test_hand(void)
{
    double q[1] = {1}, k[2] = {0, 1}, v[2] = {1, 2};
    attn_input_t in = {.s = {1, 1, 1, 2, 1, 1, 0}, .q = q, .k = k, .v = v};
    for (int form = 0; form < 2; form++) {
        attn_cfg_t c = cfg(FMT_BF16, FMT_BF16, 1, 1.0, form, NULL);
        double o;
        run_v(&o, "amla", &in, &c);
        float want = hand_amla(form);
        CHECK(o == (double)want, "hand AMLA form %d: got %a, want %a", form, o, (double)want);
        /* and both are close to the exact answer (e^-1 + 2 e^0) / (e^-1 + 1) */
        double exact = (exp(-1.0) + 2.0) / (exp(-1.0) + 1.0);
        CHECK(fabs(o - exact) < 1e-2 * exact, "hand AMLA form %d: %g far from %g", form, o, exact);
    }
}

/* Eq. (3) overflows once the running max passes 88.7: NaN/Inf outputs counted, no crash;
 * below that it behaves like Base. */
static void test_naive(void)
{
    attn_input_t in = {.s = {4, 1, 1, 256, 64, 32, 0}, .q = NULL, .k = NULL, .v = NULL};
    gen_cfg_t g = {GEN_NORMAL, 0, 10, -1, 1, 0, FMT_BF16, {0, 0, 0, 0, 0, 0}};
    err_t e = {0};
    gen_sample(&in, &g, 3, 0, &e);
    double o[4 * 32], gold[4 * 32] = {0}, m[METRIC_COUNT];
    attn_cfg_t c = cfg(FMT_BF16, FMT_BF16, 64, 1.0 / 8.0, 0, NULL);
    long events = run_v(o, "amla-naive", &in, &c);
    metric_all(m, o, gold, 4 * 32);
    CHECK(events > 0 && m[METRIC_NONFINITE] > 0, "sigma 10: naive reported %ld overflows, %g non-finite", events,
          m[METRIC_NONFINITE]);
    attn_input_free(&in);
    g.sigma = 0.5;
    gen_sample(&in, &g, 3, 0, &e);
    golden_attention(gold, &in, 0);
    events = run_v(o, "amla-naive", &in, &c);
    metric_all(m, o, gold, 4 * 32);
    CHECK(events == 0 && m[METRIC_NONFINITE] == 0 && m[METRIC_REL_FRO] < 1e-2, "sigma 0.5: naive error %g",
          m[METRIC_REL_FRO]);
    attn_input_free(&in);
}

int main(void)
{
    test_lemma();
    test_exact_equals_base();
    test_hand();
    test_naive();
    return check_done("t-amla");
}
