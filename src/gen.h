/* gen -- input distributions and loading Q, K, V from .npy files */
#ifndef AMLA_GEN_H
#define AMLA_GEN_H

#include <stdint.h>

#include "attn.h"
#include "err.h"

typedef enum { GEN_NORMAL, GEN_UNIFORM, GEN_FA3_OUTLIER, GEN_COUNT } gen_dist_t;

typedef struct {
    const char *name;
    const char *summary;
} gen_info_t;

extern const gen_info_t gen_table[GEN_COUNT];

/* FlashAttention-3's outlier mixture: N(0,1) + N(0, 100) Bernoulli(0.001). */
#define GEN_FA3_OUTLIER_RATE 0.001
#define GEN_FA3_OUTLIER_SIGMA 10.0

typedef struct {
    gen_dist_t dist;
    double mean, sigma, low, high;
    int kv_separate; /* 0: V = K[..., :dv] (MLA's shared latent cache) */
    fmt_id_t in_format;
} gen_cfg_t;

int gen_from_name(const char *name);

/* The stream of sample `sample` under `seed` (independent of threads and order). */
uint64_t gen_stream_seed(uint64_t seed, long sample);

/* Allocate and fill in->q, k, v for shape in->s: drawn as binary64, rounded to binary32
 * (as a framework's fp32 generator), then to the input format (RNE). */
int gen_sample(attn_input_t *in, const gen_cfg_t *cfg, uint64_t seed, long sample, err_t *e);

/* Load DIR/q.npy, DIR/k.npy and optionally DIR/v.npy; fills in->s (hq, hkv, sq, sk, dk, dv)
 * and rounds the values to in_format. dv_req > 0 selects V = K[..., :dv_req] when there is
 * no v.npy (0: dv = dk). */
int gen_load(attn_input_t *in, const char *dir, fmt_id_t in_format, long dv_req, err_t *e);

void gen_free(attn_input_t *in);

#endif
