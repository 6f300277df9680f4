/* t-snapmla -- the FP8 family: configuration identities, page order, quantized RoPE, overflow-free P */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "check.h"
#include "data/gen.h"
#include "ref/golden.h"
#include "run/metric.h"

static void run_only(double *o, const char *name, const attn_input_t *in, long rope, const char *only)
{
    attn_cfg_t c;
    memset(&c, 0, sizeof c);
    c.in_format = c.out_format = FMT_BF16;
    c.block = 512;
    c.acc_qk = c.acc_pv = ACC_FP32_FMA;
    c.scale = 1.0 / sqrt((double)in->s.dk);
    c.rope_dims = rope;
    c.only = only;
    attn_stats_t st = {0};
    attn_ctx_t ctx;
    err_t e = {0};
    int vi = attn_find(name);
    CHECK(vi >= 0 && attn_ctx_init(&ctx, vi, &c, &st, &e) == 0, "variant %s", name);
    attn_run(o, vi, in, &ctx);
}

static void run_v(double *o, const char *name, const attn_input_t *in, long rope)
{
    run_only(o, name, in, rope, NULL);
}

/* e4m3 (E4M3FN) round to nearest even, written from the format's definition: 3 fraction
 * bits, exponents down to -6, subnormal quantum 2^-9 (independent of fmt.c). */
static double e4m3_rne(double y)
{
    if (y == 0)
        return y;
    int e = (int)floor(log2(fabs(y)));
    if (e < -6)
        e = -6;
    double quantum = ldexp(1.0, e - 3);
    return nearbyint(y / quantum) * quantum;
}

/* Config A's cache built here from its definition, and exact attention over it: per token one
 * scale over all dk columns (RoPE included), s = fp32(fp32(amax) / 448), K^ = e4m3(fp32(k / s)) s;
 * V^ = K^[:, :dv] (MLA's one cache: V is read from the same quantized cache). */
static void snap_a_reference(double *o, const attn_input_t *in)
{
    const attn_shape_t *s = &in->s;
    long sk = s->sk, dk = s->dk, dv = s->dv;
    double *kh = malloc(sizeof(double) * (size_t)(sk * dk));
    for (long j = 0; j < sk; j++) {
        double amax = 0;
        for (long c = 0; c < dk; c++)
            amax = fmax(amax, fabs(in->k[j * dk + c]));
        double sc = (double)(float)((double)(float)amax / 448.0);
        for (long c = 0; c < dk; c++)
            kh[j * dk + c] = e4m3_rne((double)(float)(in->k[j * dk + c] / sc)) * sc;
    }
    double scale = 1.0 / sqrt((double)dk);
    for (long r = 0; r < s->hq; r++) {
        long double w[4096], m = -INFINITY, l = 0;
        for (long j = 0; j < sk; j++) {
            long double d = 0;
            for (long c = 0; c < dk; c++)
                d += (long double)in->q[r * dk + c] * kh[j * dk + c];
            w[j] = d * scale;
            m = w[j] > m ? w[j] : m;
        }
        for (long j = 0; j < sk; j++)
            l += w[j] = expl(w[j] - m);
        for (long c = 0; c < dv; c++) {
            long double acc = 0;
            for (long j = 0; j < sk; j++)
                acc += w[j] * kh[j * dk + c];
            o[r * dv + c] = (double)(acc / l);
        }
    }
    free(kh);
}

static int same_bits(const double *a, const double *b, long n)
{
    return memcmp(a, b, sizeof(double) * (size_t)n) == 0;
}

int main(void)
{
    attn_input_t in = {.s = {8, 1, 1, 200, 96, 64, 0}, .q = NULL, .k = NULL, .v = NULL};
    gen_cfg_t g = {GEN_MLA, 0, 0.1, -1, 1, 0, FMT_BF16, {0, 0, 0, 0, 0, 0}};
    gen_mla_profile(&g.mla, 6);
    g.mla.rope_dims = 32;
    err_t e = {0};
    gen_sample(&in, &g, 5, 0, &e);
    long n = 8 * 64;
    double *a = malloc(sizeof(double) * (size_t)n), *b = malloc(sizeof(double) * (size_t)n),
           *gold = malloc(sizeof(double) * (size_t)n);
    golden_attention(gold, &in, 0);

    /* without a RoPE part, RoPE-unaware (A) and RoPE-aware (snapmla) are the same computation */
    run_v(a, "snapmla", &in, 0);
    run_v(b, "snapmla-a", &in, 0);
    CHECK(same_bits(a, b, n), "no RoPE dims: snapmla-a differs from snapmla");
    /* per-tensor dynamic (C) on a single token's worth of scales is per-token: one KV token */
    attn_input_t one = {.s = {8, 1, 1, 1, 96, 64, 0}, .q = in.q, .k = in.k, .v = in.v};
    run_v(a, "snapmla", &one, 32);
    run_v(b, "snapmla-c", &one, 32);
    CHECK(same_bits(a, b, n), "one token: per-tensor dynamic differs from per-token");
    /* one page pair only reorders when there are two pages: with 64 tokens inverted = snapmla */
    attn_input_t page = {.s = {8, 1, 1, 64, 96, 64, 0}, .q = in.q, .k = in.k, .v = in.v};
    run_v(a, "snapmla", &page, 32);
    run_v(b, "snapmla-inverted", &page, 32);
    CHECK(same_bits(a, b, n), "one page: inverted order differs");
    /* with two pages the order changes rounding, not the result's size */
    run_v(a, "snapmla", &in, 32);
    run_v(b, "snapmla-inverted", &in, 32);
    double ma[METRIC_COUNT], mb[METRIC_COUNT];
    metric_all(ma, a, gold, n);
    metric_all(mb, b, gold, n);
    CHECK(mb[METRIC_NONFINITE] == 0 && fabs(mb[METRIC_REL_FRO] / ma[METRIC_REL_FRO] - 1) < 0.2,
          "inverted: rel_fro %g vs %g", mb[METRIC_REL_FRO], ma[METRIC_REL_FRO]);
    /* FP8 error is that of 3-bit mantissas: well above BF16's, well below 1 */
    CHECK(ma[METRIC_REL_FRO] > 4e-3 && ma[METRIC_REL_FRO] < 0.2, "snapmla rel_fro %g", ma[METRIC_REL_FRO]);
    /* quantizing RoPE (A) with its wide outliers costs more than keeping it in BF16 */
    run_v(b, "snapmla-a", &in, 32);
    metric_all(mb, b, gold, n);
    CHECK(mb[METRIC_REL_FRO] > ma[METRIC_REL_FRO], "RoPE-unaware %g not worse than RoPE-aware %g",
          mb[METRIC_REL_FRO], ma[METRIC_REL_FRO]);
    /* config A reads V from its own quantized cache: with only kv_quant rounding it is exact
     * attention over the cache built above (V quantized on its own, with a content-only
     * scale, would miss by the size of the FP8 error) */
    run_only(b, "snapmla-a", &in, 32, "kv_quant");
    snap_a_reference(a, &in);
    double worst = 0, big = 0;
    for (long i = 0; i < n; i++) {
        worst = fmax(worst, fabs(a[i] - b[i]));
        big = fmax(big, fabs(a[i]));
    }
    worst /= big;
    CHECK(worst < 1e-12, "snapmla-a (only kv_quant) vs its cache built from the definition: rel %g", worst);
    /* FlashMLA's FP8 cache keeps P in BF16: finite, and an FP8-sized error */
    run_v(b, "flashmla-fp8", &in, 32);
    metric_all(mb, b, gold, n);
    CHECK(mb[METRIC_NONFINITE] == 0 && mb[METRIC_REL_FRO] > 1e-3 && mb[METRIC_REL_FRO] < 0.2,
          "flashmla-fp8 rel_fro %g", mb[METRIC_REL_FRO]);
    free(a);
    free(b);
    free(gold);
    attn_input_free(&in);
    return check_done("t-snapmla");
}
