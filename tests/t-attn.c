/* t-attn -- variants: all sites exact equals Golden; a hand-computed Base; site resolution */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/flash.h"
#include "check.h"
#include "data/gen.h"
#include "ref/golden.h"
#include "run/metric.h"

static attn_cfg_t cfg_default(long block, double scale)
{
    attn_cfg_t c;
    memset(&c, 0, sizeof c);
    c.in_format = FMT_BF16;
    c.out_format = FMT_BF16;
    c.block = block;
    c.acc_qk = c.acc_pv = ACC_FP32_FMA;
    c.scale = scale;
    return c;
}

static double run_variant(double *o, const char *name, const attn_input_t *in, const attn_cfg_t *c)
{
    int vi = attn_find(name);
    CHECK(vi >= 0, "variant %s registered", name);
    attn_stats_t st = {0};
    attn_ctx_t ctx;
    err_t e = {0};
    CHECK(attn_ctx_init(&ctx, vi, c, &st, &e) == 0, "ctx: %s", e.msg);
    attn_run(o, vi, in, &ctx);
    return 0;
}

/* With every site exact (FP64, no rounding) each variant computes softmax(QK^T s)V in
 * binary64: it must equal Golden to 1e-12 relative (Frobenius). */
static void test_exact_equals_golden(void)
{
    const char *variants[] = {"standard", "base"};
    const struct {
        attn_shape_t s;
        gen_cfg_t g;
        long block;
    } cases[] = {
        {{8, 1, 1, 300, 64, 48, 0}, {GEN_NORMAL, 0, 1, -1, 1, 0, FMT_BF16, {0, 0, 0, 0, 0, 0}}, 64},
        {{8, 1, 1, 300, 64, 48, 0}, {GEN_NORMAL, 0, 10, -1, 1, 0, FMT_BF16, {0, 0, 0, 0, 0, 0}}, 128},
        {{4, 2, 3, 100, 32, 32, 1}, {GEN_UNIFORM, 0, 1, -60, 60, 1, FMT_FP16, {0, 0, 0, 0, 0, 0}}, 7},
        {{4, 1, 5, 77, 32, 16, 1}, {GEN_FA3_OUTLIER, 0, 1, -1, 1, 1, FMT_BF16, {0, 0, 0, 0, 0, 0}}, 16},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        attn_input_t in = {.s = cases[ci].s};
        err_t e = {0};
        gen_sample(&in, &cases[ci].g, 7, (long)ci, &e);
        long n = in.s.hq * in.s.sq * in.s.dv;
        double *g = malloc(sizeof(double) * (size_t)n), *o = malloc(sizeof(double) * (size_t)n);
        golden_attention(g, &in, 0);
        for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
            attn_cfg_t c = cfg_default(cases[ci].block, 1.0 / sqrt((double)in.s.dk));
            c.exact = "all";
            run_variant(o, variants[v], &in, &c);
            double m[METRIC_COUNT];
            metric_all(m, o, g, n);
            CHECK(m[METRIC_REL_FRO] <= 1e-12, "case %zu %s all-exact: rel_fro %g vs golden", ci, variants[v],
                  m[METRIC_REL_FRO]);
            /* with the default roundings the error is that of a bf16/fp16 kernel: not 0, below 5% */
            c.exact = NULL;
            run_variant(o, variants[v], &in, &c);
            metric_all(m, o, g, n);
            CHECK(m[METRIC_REL_FRO] > 0 && m[METRIC_REL_FRO] < 5e-2, "case %zu %s rounded: rel_fro %g",
                  ci, variants[v], m[METRIC_REL_FRO]);
        }
        free(g);
        free(o);
        attn_input_free(&in);
    }
}

/* Base on G = 1, two keys, one block each, by hand in binary32 (independent of the lab):
 * q = 1, k = (0, 1), v = (1, 2), scale = 1.
 * block 1: s = 0, m = 0, p = 1, l = 1, P = bf16(1) = 1, O = 1 * 1 = 1.
 * block 2: s = 1, m = 1, alpha = fl32(exp(-1)), p = 1, l = fl32(fl32(1 alpha) + 1),
 *          O = fl32(fl32(1 alpha) + 1 * 2); result bf16(fl32(O / l)). */
static void test_hand_base(void)
{
    double q[1] = {1}, k[2] = {0, 1}, v[2] = {1, 2};
    attn_input_t in = {.s = {1, 1, 1, 2, 1, 1, 0}, .q = q, .k = k, .v = v};
    attn_cfg_t c = cfg_default(1, 1.0);
    double o;
    run_variant(&o, "base", &in, &c);
    float alpha = (float)exp(-1.0); /* correctly rounded exp: glibc's exp is, here */
    float l = alpha * 1.0f + 1.0f;
    float acc = alpha * 1.0f + 2.0f;
    float res = acc / l;
    /* bf16 RNE of a binary32 by hand: add half of the dropped 16 bits (+ lsb for ties) */
    uint32_t u;
    memcpy(&u, &res, 4);
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
    float want;
    memcpy(&want, &u, 4);
    CHECK(o == (double)want, "hand Base: got %a, want %a (fp32 %a)", o, (double)want, (double)res);

    /* One block of both keys: m = 1 from the start, p = (exp(-1), 1), P bf16-cast for P.V
     * only: O = bf16(e^-1) * 1 + 1 * 2 (fma order), l = fl32(e^-1 + 1). */
    c.block = 2;
    run_variant(&o, "base", &in, &c);
    float p0 = (float)exp(-1.0);
    memcpy(&u, &p0, 4);
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
    float p0b;
    memcpy(&p0b, &u, 4);
    float t = fmaf(1.0f, 2.0f, fmaf(p0b, 1.0f, 0.0f));
    float l2 = (0.0f + p0) + 1.0f;
    res = t / l2;
    memcpy(&u, &res, 4);
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
    memcpy(&want, &u, 4);
    CHECK(o == (double)want, "hand Base one block: got %a, want %a", o, (double)want);
}

/* Block size does not matter when every site is exact; it does when rounding. */
static void test_block_invariance(void)
{
    attn_input_t in = {.s = {4, 1, 1, 256, 32, 32, 0}, .q = NULL, .k = NULL, .v = NULL};
    gen_cfg_t g = {GEN_NORMAL, 0, 2, -1, 1, 0, FMT_BF16, {0, 0, 0, 0, 0, 0}};
    err_t e = {0};
    gen_sample(&in, &g, 3, 0, &e);
    double a[128], b[128];
    attn_cfg_t c = cfg_default(256, 1.0 / sqrt(32.0));
    c.exact = "all";
    run_variant(a, "base", &in, &c);
    c.block = 32;
    run_variant(b, "base", &in, &c);
    double m[METRIC_COUNT];
    metric_all(m, a, b, 128);
    CHECK(m[METRIC_REL_FRO] < 1e-14, "exact base: block 256 vs 32 differ by %g", m[METRIC_REL_FRO]);
    attn_input_free(&in);
}

static void test_sites(void)
{
    attn_cfg_t c = cfg_default(64, 0.1);
    attn_stats_t st;
    attn_ctx_t ctx;
    err_t e = {0};
    c.exact = "p_cast,out_cast";
    CHECK(attn_ctx_init(&ctx, attn_find("base"), &c, &st, &e) == 0, "known sites accepted");
    int exact = 0;
    for (int i = 0; i < ctx.nsites; i++)
        exact += ctx.site[i].exact;
    CHECK(exact == 2, "two sites exact, got %d", exact);
    c.exact = "p_cast,bogus";
    e.code = 0;
    CHECK(attn_ctx_init(&ctx, attn_find("base"), &c, &st, &e) == ERR_USAGE, "unknown site rejected");
    CHECK(strstr(e.msg, "bogus") != NULL, "message names the site: %s", e.msg);
    CHECK(attn_find("nonexistent") < 0, "unknown variant");
}

/* attn_sum_in_order against the chain written out: binary32 terms from 2^-140 to 2^127 of both
 * signs (cancellations; the last two terms take the sum past binary32's range), each partial sum rounded
 * to binary32 (its binary64 sum converted) where the site rounds; the plain binary64 chain where
 * the site is exact; and binary64 terms (x_fp32 0) where it rounds. */
static void test_sum_in_order(void)
{
    attn_cfg_t c = cfg_default(64, 0.1);
    attn_stats_t st = {0};
    attn_ctx_t ctx;
    err_t e = {0};
    enum { N = 4000 };
    static double x[N], y[N];
    uint64_t u = 88172645463325252ULL;
    for (int i = 0; i < N; i++) {
        u ^= u << 13, u ^= u >> 7, u ^= u << 17;
        double m = 1.0 + (double)(u >> 40) * 0x1p-24; /* 1 .. 2 */
        int ex = (int)(u % 241) - 140;                /* 2^-140 .. 2^100: sums stay finite */
        x[i] = (double)(float)ldexp(u >> 63 ? -m : m, ex);
        y[i] = ldexp(m, ex % 60) * (1.0 + 0x1p-40); /* not binary32 values */
    }
    x[N - 2] = x[N - 1] = 0x1.fffffep127; /* the last two overflow binary32's range: infinity */
    for (int exact = 0; exact < 2; exact++) {
        c.exact = exact ? "l_sum" : NULL;
        CHECK(attn_ctx_init(&ctx, attn_find("base"), &c, &st, &e) == 0, "ctx: %s", e.msg);
        int site = -1;
        for (int i = 0; i < ctx.nsites; i++)
            if (strcmp(ctx.site[i].def->name, "l_sum") == 0)
                site = i;
        CHECK(site >= 0, "base has l_sum");
        for (int n = 0; n <= N; n += n < N - N / 8 ? N / 8 + 1 : 1)
            for (int fp32 = 0; fp32 < 2; fp32++) {
                const double *t = fp32 ? x : y;
                double want = 0;
                for (int i = 0; i < n; i++)
                    want = exact ? want + t[i] : (double)(float)(want + t[i]);
                double got = attn_sum_in_order(&ctx, site, t, n, fp32);
                CHECK(got == want || (isnan(got) && isnan(want)), "sum of %d (exact %d, fp32 terms %d): %a vs %a", n,
                      exact, fp32, got, want);
            }
    }
}

/* Every registered variant, both AMLA forms: every site exact equals Golden to 1e-12; only
 * out_cast rounded equals Golden's output rounded to the output format, bit for bit. */
static void test_every_variant_sites(void)
{
    attn_input_t in = {.s = {8, 1, 2, 600, 64, 48, 1}, .q = NULL, .k = NULL, .v = NULL};
    gen_cfg_t g = {GEN_NORMAL, 0, 2, -1, 1, 1, FMT_BF16, {0, 0, 0, 0, 0, 0}};
    err_t e = {0};
    gen_sample(&in, &g, 17, 0, &e);
    long n = 8 * 2 * 48;
    double *gold = malloc(sizeof(double) * (size_t)n), *o = malloc(sizeof(double) * (size_t)n);
    golden_attention(gold, &in, 0);
    for (int vi = 0; vi < attn_variant_count; vi++)
        for (int form = 0; form < 2; form++) {
            const char *name = attn_variants[vi].name;
            attn_cfg_t c = cfg_default(128, 1.0 / 8.0);
            c.amla_form = form;
            c.exact = "all";
            run_variant(o, name, &in, &c);
            double m[METRIC_COUNT];
            metric_all(m, o, gold, n);
            CHECK(m[METRIC_REL_FRO] <= 1e-12, "%s (form %d) every site exact: rel_fro %g", name, form, m[METRIC_REL_FRO]);
            c.exact = NULL;
            c.only = "out_cast";
            run_variant(o, name, &in, &c);
            long same = 0;
            for (long i = 0; i < n; i++)
                same += o[i] == fmt_round(gold[i], FMT_BF16, FMT_RNE, 0, NULL);
            CHECK(same == n, "%s (form %d) only out_cast: %ld of %ld elements equal bf16(golden)", name, form, same, n);
        }
    free(gold);
    free(o);
    attn_input_free(&in);
}

int main(void)
{
    test_every_variant_sites();
    test_exact_equals_golden();
    test_hand_base();
    test_block_invariance();
    test_sites();
    test_sum_in_order();
    return check_done("t-attn");
}
