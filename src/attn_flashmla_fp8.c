/* attn_flashmla_fp8 -- FlashMLA's FP8 KV cache: e4m3 content with one power-of-two scale per
 * 1 x 128 tile, RoPE in BF16; dequantized to BF16 and run through Base with 64-token tiles */
#include <math.h>
#include <stdlib.h>

#include "attn_base.h"
#include "attn_variants.h"
#include "quant.h"

#define FLASHMLA_TILE 128       /* one scale per 1 x 128 content tile */
#define FLASHMLA_SCALE_FLOOR 1e-4 /* scale = 2^ceil(log2(max(amax / 448, 1e-4))) */
#define FLASHMLA_BLOCK 64       /* KV tokens per tile of the kernel */

enum { KV_QUANT = ATTN_BASE_NSITES };

const site_def_t attn_flashmla_fp8_sites[] = {
    ATTN_BASE_SITE_DEFS,
    {"kv_quant", "K content / pow2 tile scale -> e4m3 (dequantized exactly to bf16)", SITE_FMT_FIXED, FMT_E4M3,
     FMT_RNE, 0},
    {NULL, NULL, 0, 0, 0, 0},
};

/* x [rows][d]: the first dc columns become e4m3 x scale (exact in bf16), the rest unchanged. */
static void flashmla_dequant(double *out, const double *x, long rows, long d, long dc, attn_ctx_t *ctx)
{
    quant_cfg_t qc = {QUANT_BLOCK, 1, FLASHMLA_TILE, FMT_E4M3, 1, 0, FLASHMLA_SCALE_FLOOR, 0};
    quant_scales_t qs;
    quant_scales(&qs, x, rows, dc, d, &qc);
    const site_t *st = &ctx->site[KV_QUANT];
    for (long r = 0; r < rows; r++) {
        for (long j0 = 0; j0 < dc; j0 += FLASHMLA_TILE) { /* = attn_round(kv_quant, v / s) * s */
            long n = dc - j0 < FLASHMLA_TILE ? dc - j0 : FLASHMLA_TILE;
            double s = quant_scale_at(&qs, r, j0), *o = out + r * d + j0;
            /* division by a power of two: exact */
            quant_round_quotients(o, x + r * d + j0, n, s, 0, st->fmt, st->mode, st->sat, st->exact, &ctx->rng);
            for (long j = 0; j < n; j++)
                o[j] *= s;
        }
        for (long j = dc; j < d; j++)
            out[r * d + j] = x[r * d + j];
    }
    quant_scales_free(&qs);
}

void attn_flashmla_fp8(double *o, const attn_group_t *g, attn_ctx_t *ctx)
{
    long dc = g->dk - ctx->cfg->rope_dims;
    double *k = malloc(sizeof(double) * (size_t)(g->sk * g->dk));
    double *v = malloc(sizeof(double) * (size_t)(g->sk * g->dv));
    flashmla_dequant(k, g->k, g->sk, g->dk, dc, ctx);
    flashmla_dequant(v, g->v, g->sk, g->dv, g->dv < dc ? g->dv : dc, ctx);
    attn_group_t g2 = *g;
    g2.k = k;
    g2.v = v;
    attn_cfg_t c2 = *ctx->cfg;
    c2.block = FLASHMLA_BLOCK;
    const attn_cfg_t *saved = ctx->cfg;
    ctx->cfg = &c2;
    attn_base(o, &g2, ctx);
    ctx->cfg = saved;
    free(k);
    free(v);
}
