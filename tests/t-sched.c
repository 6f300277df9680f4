/* t-sched -- schedules (seesaw, etap, fastattn, FA3 FP8): exact agreement with Base, the
 * tiling-mask against the full causal mask, ETAP's only reduction-order difference */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "check.h"
#include "data/gen.h"
#include "ref/golden.h"
#include "run/metric.h"

static attn_cfg_t cfg(fmt_id_t f, long block, double scale, const char *exact)
{
    attn_cfg_t c;
    memset(&c, 0, sizeof c);
    c.in_format = c.out_format = f;
    c.block = block;
    c.acc_qk = c.acc_pv = ACC_FP32_FMA;
    c.scale = scale;
    c.exact = exact;
    c.row_block = 128;
    c.sub_block = 32;
    c.fa3_block = c.fa3_hadamard = 1;
    return c;
}

static void run_v(double *o, const char *name, const attn_input_t *in, const attn_cfg_t *c)
{
    attn_stats_t st = {0};
    attn_ctx_t ctx;
    err_t e = {0};
    int vi = attn_find(name);
    CHECK(vi >= 0 && attn_ctx_init(&ctx, vi, c, &st, &e) == 0, "variant %s: %s", name, e.msg);
    attn_run(o, vi, in, &ctx);
}

int main(void)
{
    const char *scheds[] = {"seesaw", "etap", "fastattn", "fastattn-fp16acc", "fa3-fp8"};
    /* 1. every format fp64 and every site exact: each schedule agrees with Base to 1e-12 */
    attn_input_t in = {.s = {8, 1, 3, 333, 64, 64, 1}, .q = NULL, .k = NULL, .v = NULL};
    gen_cfg_t g = {GEN_NORMAL, 0, 2, -1, 1, 1, FMT_FP64, {0, 0, 0, 0, 0, 0}};
    err_t e = {0};
    gen_sample(&in, &g, 8, 0, &e);
    long n = 8 * 3 * 64;
    double *b = malloc(sizeof(double) * (size_t)n), *o = malloc(sizeof(double) * (size_t)n);
    attn_cfg_t c = cfg(FMT_FP64, 64, 0.125, "all");
    run_v(b, "base", &in, &c);
    for (size_t i = 0; i < sizeof scheds / sizeof scheds[0]; i++) {
        run_v(o, scheds[i], &in, &c);
        double m[METRIC_COUNT];
        metric_all(m, o, b, n);
        CHECK(m[METRIC_REL_FRO] <= 1e-12, "%s exact: rel_fro %g against base", scheds[i], m[METRIC_REL_FRO]);
    }
    attn_input_free(&in);

    /* 2. causal prefill: the tiling-mask (B-masks cut from the M-mask, all-zero blocks
     * skipped) gives Base's full-mask output bit for bit */
    attn_input_t pre = {.s = {4, 2, 300, 300, 64, 64, 1}, .q = NULL, .k = NULL, .v = NULL};
    g.in_format = FMT_BF16;
    gen_sample(&pre, &g, 9, 0, &e);
    long np = 4 * 300 * 64;
    double *pb = malloc(sizeof(double) * (size_t)np), *po = malloc(sizeof(double) * (size_t)np);
    for (long block = 16; block <= 256; block *= 4) {
        c = cfg(FMT_BF16, block, 0.125, NULL);
        run_v(pb, "base", &pre, &c);
        run_v(po, "fastattn", &pre, &c);
        CHECK(memcmp(pb, po, sizeof(double) * (size_t)np) == 0, "block %ld: tiling-mask output differs from the full mask",
              block);
    }

    /* 3. ETAP computes the same dot products in the same order (both products, any model
     * that is per element): only its tree row sums differ from Base's sequential ones */
    c = cfg(FMT_BF16, 64, 0.125, "l_sum");
    run_v(pb, "base", &pre, &c);
    run_v(po, "etap", &pre, &c);
    long same = 0;
    for (long i = 0; i < np; i++)
        same += pb[i] == po[i];
    CHECK(same >= np * 999 / 1000, "etap vs base with exact row sums: %ld of %ld identical", same, np);
    c.exact = NULL;
    run_v(po, "etap", &pre, &c);
    run_v(pb, "base", &pre, &c);
    double m[METRIC_COUNT];
    metric_all(m, po, pb, np);
    CHECK(m[METRIC_REL_FRO] < 1e-3, "etap vs base: rel_fro %g", m[METRIC_REL_FRO]);

    /* 4. incoherent processing is orthogonal: with only the rotation rounded (fp32), FA3's
     * output is Golden's to fp32 accuracy */
    double *gold = malloc(sizeof(double) * (size_t)np);
    golden_attention(gold, &pre, 0.125);
    c = cfg(FMT_FP32, 64, 0.125, NULL);
    c.only = "hadamard";
    run_v(po, "fa3-fp8", &pre, &c);
    metric_all(m, po, gold, np);
    CHECK(m[METRIC_REL_FRO] < 1e-5 && m[METRIC_REL_FRO] > 0, "fa3-fp8 rotation alone: rel_fro %g", m[METRIC_REL_FRO]);
    free(gold);
    free(pb);
    free(po);
    free(b);
    free(o);
    attn_input_free(&pre);
    return check_done("t-sched");
}
