/* flashmla_fp8 -- FlashMLA's FP8 KV cache: e4m3 content with one power-of-two scale per
 * 1 x 128 tile, RoPE in BF16; dequantized to BF16 and run through Base with 64-token tiles */
#include <math.h>
#include <stdlib.h>

#include "attn/variants/base.h"
#include "attn/variants/variants.h"
#include "attn/quant.h"
#include "num/vec/vec.h"

#define FLASHMLA_TILE 128       /* one scale per 1 x 128 content tile */
#define FLASHMLA_SCALE_FLOOR 1e-4 /* scale = 2^ceil(log2(max(amax / 448, 1e-4))) */
#define FLASHMLA_BLOCK 64       /* KV tokens per tile of the kernel */

/* Base's sites, then the cache's quantization */
#define FLASHMLA_FP8_SITES(X)                                                                                    \
    BASE_SITES(X)                                                                                                \
    X(KV_QUANT, "kv_quant", "K content / pow2 tile scale -> e4m3 (dequantized exactly to bf16)", SITE_FMT_FIXED,  \
      FMT_E4M3, FMT_RNE, 0)

enum { FLASHMLA_FP8_SITES(SITE_ENUM) };

const site_def_t attn_flashmla_fp8_sites[] = {FLASHMLA_FP8_SITES(SITE_ROW) SITE_END};

/* The cache's tile scales, and a page buffer that one tile at a time is dequantized into. */
typedef struct {
    const attn_group_t *g;
    attn_ctx_t *ctx;
    long dc;
    quant_scales_t ks, vs;
    double *kbuf, *vbuf;
} flashmla_cache_t;

static const quant_cfg_t flashmla_qc = {QUANT_BLOCK, 1, FLASHMLA_TILE, FMT_E4M3, 1, 0, FLASHMLA_SCALE_FLOOR, 0};

/* Rows r0 .. r0+n-1 of x [.][d] into out [n][d]: the first dc columns become e4m3 x scale
 * (exact in bf16), the rest unchanged. */
static void flashmla_dequant(double *out, const double *x, long r0, long n, long d, long dc, const quant_scales_t *qs,
                             attn_ctx_t *ctx)
{
    const site_t *st = &ctx->site[KV_QUANT];
    for (long i = 0; i < n; i++) {
        long r = r0 + i;
        for (long j0 = 0; j0 < dc; j0 += FLASHMLA_TILE) { /* = attn_round(kv_quant, v / s) * s */
            long m = dc - j0 < FLASHMLA_TILE ? dc - j0 : FLASHMLA_TILE;
            double s = quant_scale_at(qs, r, j0), *o = out + i * d + j0;
            /* division by a power of two: exact */
            quant_round_quotients(o, x + r * d + j0, m, s, 0, st->fmt, st->mode, st->sat, st->exact, &ctx->rng);
            vec_mul(o, o, m, s);
        }
        for (long j = dc; j < d; j++)
            out[i * d + j] = x[r * d + j];
    }
}

static void flashmla_tile(void *arg, long j0, long nb, const double **kt, const double **vt)
{
    flashmla_cache_t *c = arg;
    const attn_group_t *g = c->g;
    /* the tile's scales (each row's own: 1 x 128 tiles) as its rows are dequantized, while they are in cache */
    quant_scales_rows(&c->ks, g->k, j0, nb, g->dk, &flashmla_qc);
    quant_scales_rows(&c->vs, g->v, j0, nb, g->dv, &flashmla_qc);
    flashmla_dequant(c->kbuf, g->k, j0, nb, g->dk, c->dc, &c->ks, c->ctx);
    flashmla_dequant(c->vbuf, g->v, j0, nb, g->dv, g->dv < c->dc ? g->dv : c->dc, &c->vs, c->ctx);
    *kt = c->kbuf;
    *vt = c->vbuf;
}

ATTN_VARIANT(attn_flashmla_fp8)
{
    flashmla_cache_t c = {g, ctx, g->dk - ctx->cfg->rope_dims, {0}, {0}, NULL, NULL};
    quant_scales_init(&c.ks, g->sk, c.dc, &flashmla_qc);
    quant_scales_init(&c.vs, g->sk, g->dv < c.dc ? g->dv : c.dc, &flashmla_qc);
    c.kbuf = err_malloc((size_t)(FLASHMLA_BLOCK * g->dk), sizeof(double));
    c.vbuf = err_malloc((size_t)(FLASHMLA_BLOCK * g->dv), sizeof(double));
    attn_cfg_t c2 = *ctx->cfg;
    c2.block = FLASHMLA_BLOCK;
    const attn_cfg_t *saved = ctx->cfg;
    ctx->cfg = &c2;
    attn_base_tiles(o, g, ctx, flashmla_tile, &c); /* the cache dequantized one tile at a time */
    ctx->cfg = saved;
    quant_scales_free(&c.ks);
    quant_scales_free(&c.vs);
    free(c.kbuf);
    free(c.vbuf);
}
