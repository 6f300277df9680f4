/* gen -- input distributions and loading Q, K, V from .npy files */
#ifndef AMLA_GEN_H
#define AMLA_GEN_H

#include <stdint.h>

#include "data/problem.h"
#include "num/fmt/fmt.h"
#include "base/err.h"
#include "data/files.h"
#include "data/npy.h"

typedef enum { GEN_NORMAL, GEN_UNIFORM, GEN_FA3_OUTLIER, GEN_MLA, GEN_COUNT } gen_dist_t;

typedef struct {
    const char *name;
    const char *summary;
} gen_info_t;

extern const gen_info_t gen_table[GEN_COUNT];

/* FlashAttention-3's outlier mixture: N(0,1) + N(0, 100) Bernoulli(0.001). */
#define GEN_FA3_OUTLIER_RATE 0.001
#define GEN_FA3_OUTLIER_SIGMA 10.0

/* The synthetic MLA latent cache (--dist mla): per token, content dims ~ N(0, sigma^2)
 * times a per-token magnitude exp(token_spread z_t); the last rope_dims dims (RoPE) ~
 * N(0, (rope_scale sigma)^2) plus, with probability outlier_rate per entry, an outlier
 * N(0, (outlier_scale rope_scale sigma)^2). Q is drawn the same way. Layer profiles 1..8
 * set rope_scale, outlier_rate and token_spread along a progression standing in for depth. */
typedef struct {
    long rope_dims;
    double rope_scale, outlier_rate, outlier_scale, token_spread;
    int profile; /* 0: the values above as given; 1..GEN_MLA_PROFILES: a named layer profile */
} gen_mla_t;

#define GEN_MLA_PROFILES 8

/* The MLA-like cache's defaults (also --help's, through the option table). */
#define GEN_MLA_ROPE_DIMS 64
#define GEN_MLA_ROPE_SCALE 10
#define GEN_MLA_OUTLIER_RATE 0.002
#define GEN_MLA_OUTLIER_SCALE 8
#define GEN_MLA_TOKEN_SPREAD 0.5

typedef struct {
    gen_dist_t dist;
    double mean, sigma, low, high;
    int kv_separate; /* 0: V = K[..., :dv] (MLA's shared latent cache) */
    fmt_id_t in_format;
    gen_mla_t mla;
} gen_cfg_t;

/* Defaults of the MLA-like cache, and the layer profiles (shallow to deep). */
void gen_mla_default(gen_mla_t *m);
void gen_mla_profile(gen_mla_t *m, int profile);

int gen_from_name(const char *name);

/* The stream of sample `sample` under `seed` (independent of threads and order). */
uint64_t gen_stream_seed(uint64_t seed, long sample);

/* Allocate and fill in->q, k, v for shape in->s: drawn as binary64, rounded to binary32
 * (as a framework's fp32 generator), then to the input format (RNE). */
int gen_sample(attn_input_t *in, const gen_cfg_t *cfg, uint64_t seed, long sample, err_t *e);

/* Load DIR/q.npy, DIR/k.npy and optionally DIR/v.npy into a batch of one entry (shapes
 * [Hq, Sq, Dk] or [Hq, Dk], [Hkv, Sk, Dk] or [Sk, Dk]), or with DIR/seqlens.npy (int32 [B]) the
 * batch in FlashMLA's layout: q [B, Sq, Hq, Dk], k [B, Smax, Hkv, Dk] or [B, Smax, Dk], rows past
 * seqlens[b] ignored. Values are rounded to in_format (one that is not finite there is refused);
 * without v.npy, V = K[..., :dv_req] (--dv). */
int gen_load(attn_batch_t *bt, const char *dir, fmt_id_t in_format, long dv_req, err_t *e);

/* FP8 codes beside their scales (data/scales.c): the arrays a[x] (0 q, 1 k, 2 v) with a scale file (x_scale.npy or
 * x_descale.npy; both only if they agree) decoded as e4m3 codes, fmt[x] set to FMT_E4M3 (before --in-format decodes
 * the rest); a scale beside anything but one-byte codes, or v's without v.npy, refused. Then, on the loaded batch,
 * each array with a scale multiplied by it (float32 [1] or [B, Hkv], finite, positive and normal; V read from K
 * takes K's), the scales kept in attn_input_t.scale. */
int gen_scales_decode(io_npy_t a[3], fmt_id_t fmt[3], const char *dir, int have_v, err_t *e);
int gen_scales_apply(attn_batch_t *bt, const char *dir, int have_v, err_t *e);

/* A sparse FP8 decoding case (gen_load does this when DIR/kcache.npy exists; data/sparse.c): q.npy bf16
 * [B, Sq, Hq, d], kcache.npy uint8 [blocks, page, 1, bytes] in one of FlashMLA's FP8 layouts (data/kvfp8.h),
 * indices.npy int32 [B, Sq, topk] (token ids block * page + row, -1 invalid), optionally topk_length.npy
 * int32 [B] (MODEL1). Entry b * Sq + t holds token t of batch entry b: its Hq query rows and the cache rows
 * its valid indices name, dequantized as the kernel does. */
int gen_load_sparse(attn_batch_t *bt, const char *dir, fmt_id_t in_format, err_t *e);

/* FlashMLA's sparse prefill (gen_load does this when DIR/kv.npy exists; data/prefill.c): q.npy bf16 [s_q, h_q, d_qk]
 * (d_qk 576 or 512, h_q a multiple of 64), kv.npy bf16 [s_kv, 1, d_qk] (V its first 512 dims), indices.npy int32
 * [s_q, 1, topk] (topk a multiple of 128; an index < 0 or >= s_kv is invalid), optionally topk_length.npy int32 [s_q]
 * and attn_sink.npy float32 [h_q]. Entry t holds query token t: its h_q rows and the kv rows its valid indices name
 * (token_rows and max_logits set). */
int gen_load_prefill(attn_batch_t *bt, const char *dir, fmt_id_t in_format, err_t *e);

/* FlashAttention's varlen layout (data/varlen.c), DIR/cu_seqlens_q.npy and cu_seqlens_k.npy (int32 [B + 1], from 0,
 * not decreasing) beside q.npy [total_q, Hq, Dk], k.npy [total_k, Hkv, Dk] and v.npy [total_k, Hkv, Dv] (packed
 * along the first dimension: sequence b is rows cu[b] .. cu[b + 1] - 1); descales as gen_load's ([1] or [B, Hkv]). */
int gen_load_varlen(attn_batch_t *bt, const char *dir, fmt_id_t in_format, err_t *e);


/* The same from parsed arrays a (q, k, v; v only if have_v; array i's codes in format fmt[i]), checking their shapes; on
 * success the arrays' data move into in (a[i].data becomes NULL). */
int gen_from_arrays(attn_input_t *in, io_npy_t a[3], const char *const path[3], int have_v, const fmt_id_t fmt[3],
                    long dv_req, err_t *e);

#endif
