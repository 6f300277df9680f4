/* kvfp8 -- FlashMLA's FP8 KV cache for sparse decoding (deepseek-ai/FlashMLA 9241ae3, tests/quant.py and
 * csrc/sm90/decode/sparse_fp8): its two byte layouts, the quantizer that writes them and the kernel's
 * dequantization that reads them */
#ifndef AMLA_KVFP8_H
#define AMLA_KVFP8_H

#include <stddef.h>

/* KVFP8_V32 (DeepSeek-V3.2): d 576 = 512 e4m3 in 4 tiles of 128, a float32 scale per tile, 64 bf16 RoPE
 * values; a token's 656 bytes in a row. KVFP8_MODEL1: d 512 = 448 e4m3 in 7 tiles of 64, an e8m0 scale per
 * tile, 64 bf16 RoPE; a page block holds its tokens' 576 bytes of codes and RoPE, then their 8 bytes of
 * scales (7 and a pad byte), so [blocks, page, 1, 584] does not follow tokens inside a block. */
typedef enum { KVFP8_NONE, KVFP8_V32, KVFP8_MODEL1, KVFP8_COUNT } kvfp8_layout_t;

typedef struct {
    const char *name;
    long d, d_nope, tile, ntiles, bytes; /* head dim, e4m3 dims, dims per scale, scales, bytes a token */
} kvfp8_info_t;

extern const kvfp8_info_t kvfp8_table[KVFP8_COUNT];

#define KVFP8_DV 512          /* V = the first 512 dims of the dequantized K (both layouts) */
#define KVFP8_SCALE_FLOOR 1e-4 /* quant.py: scale = 2^ceil(log2(max(amax / 448, 1e-4))) */

/* The layout whose tokens take `bytes` bytes, or KVFP8_NONE. */
kvfp8_layout_t kvfp8_layout_of_bytes(long bytes);
/* The layout of head dim d (576: V32, 512: MODEL1), or KVFP8_NONE. */
kvfp8_layout_t kvfp8_layout_of_dim(long d);

/* One page block of `page` tokens k [page][d] (bf16 values) into blk (page * bytes bytes) as tests/quant.py
 * writes it: per tile s = 2^ceil(log2(max(fl32(amax / 448), fl32(1e-4)))), code = e4m3(x / s) RNE, RoPE as
 * bf16; MODEL1's pad bytes 0. */
void kvfp8_quantize_block(unsigned char *blk, const double *k, long page, kvfp8_layout_t l);

/* A tile's scale as tests/quant.py chooses it: 2^ceil(log2(max(fl32(amax / 448), fl32(1e-4)))). */
double kvfp8_tile_scale(const double *x, long n);

/* The values the kernel reads back for rows k [rows][d] (bf16 values) after kvfp8_quantize_block and
 * kvfp8_dequant_token, computed without the bytes (vectorized rounding): code s per tile, RoPE as bf16.
 * Equal bit for bit to the byte path wherever that one accepts the token (t-kvfp8); a value past e4m3's
 * range (a non-finite input) becomes NaN here. */
void kvfp8_roundtrip(double *out, const double *k, long rows, kvfp8_layout_t l);

/* Token `row` of a page block as the kernel's producer warpgroup dequantizes it into out[d]: each code to
 * fp32 to bf16 (exact), the scale to bf16 (V32: RNE of the float32; MODEL1: 2^(e - 127)), their bf16 product
 * (RNE), RoPE as stored. Returns 0, or 1 with why (at most n bytes, "dim 7 is an e4m3 NaN code") where the
 * token holds a NaN code, a scale that is not a positive finite power of two, or a RoPE value that is not
 * finite. */
int kvfp8_dequant_token(double *out, const unsigned char *blk, long page, long row, kvfp8_layout_t l, char *why,
                        size_t n);

#endif
