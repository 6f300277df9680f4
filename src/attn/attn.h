/* attn -- the variant interface: configuration, resolved sites, the registry, site rounding */
#ifndef AMLA_ATTN_H
#define AMLA_ATTN_H

#include <stdint.h>

#include "num/acc/acc.h"
#include "num/fmt/fmt.h"
#include "base/err.h"
#include "attn/site.h"
#include "data/problem.h"

/* What a variant is configured with: formats, tile, accumulation models, exact sites. */
typedef struct {
    fmt_id_t in_format;  /* format of Q, K, V (and of P for P.V) */
    fmt_id_t out_format; /* format of the returned O */
    long block;          /* KV tile (tokens) */
    acc_model_t acc_qk, acc_pv;
    double scale;          /* softmax scale, 1/sqrt(dk) unless given */
    const char *exact;     /* comma-separated site names computed in FP64, or NULL */
    const char *only;      /* if set: the only sites that round; every other one is exact */
    uint64_t rng_seed;     /* for stochastic rounding sites */
    int amla_form;         /* ATTN_AMLA_PAPER or ATTN_AMLA_CANN (--amla-form) */
    long rope_dims;        /* the last rope_dims of Dk are RoPE (FP8 variants keep them apart) */
    long row_block, sub_block; /* fastattn: query rows per Cube block, rows per Vector pass */
    int fa3_block, fa3_hadamard; /* fa3-fp8: block quantization, incoherent processing (1 = on) */
    long sm_count;               /* flashmla: the GPU's SMs, for the split-KV scheduler (--sm-count) */
    long sm_parts;               /* flashmla: SM parts the keys are split over; 0: the kernel's own choice */
    long split_k;                /* sdpa-math: cuBLAS's split-K count of P.V (1: none) */
    int flashmla_sched;          /* flashmla: ATTN_FMLA_SCHED_* (--flashmla-sched), whose scheduler splits the keys */
    int fa3_varlen;              /* fa3: the call is varlen (seqused_k, cu_seqlens, with_kvcache): splits per entry */
    long page_size;              /* fa3: the KV cache's page size (0: contiguous) */
    int triton_decode;           /* triton-mla: ATTN_TRITON_* (--triton-decode), whose Triton MLA decode */
    int split_interleaved;       /* 1: the xmma SIMT kernels' round-robin tiles; 0: contiguous K ranges */
    int build;                   /* ATTN_BUILD_*: how a CUDA kernel was compiled (--build; gpu_fp.h) */
} attn_cfg_t;

/* A CUDA kernel's build (--build): with --use_fast_math (FTZ; exp2f, logf and x / y as ex2.approx.ftz,
 * lg2.approx.ftz and rcp.approx.ftz: every kernel repository's setup.py, SGLang's builds) or without it (vLLM's
 * CMake build of FlashMLA: subnormals kept, exp2f with its subnormal fix-up, libdevice's logf, IEEE division). */
enum { ATTN_BUILD_FAST_MATH, ATTN_BUILD_IEEE };
/* The variants whose model follows the build (each checked against captures of both builds); every other one is its
 * kernel's own build whatever --build says (attn_ctx_t.ieee). */
#define ATTN_BUILD_VARIANTS "flashmla-sparse-prefill,flashmla,flashmla-sparse"

/* AMLA's two published forms (docs/REFERENCES.md, AMLA): Algorithm 2 as printed, or the
 * public CANN kernel (inverse compensation ratio, half-away rounding, |O| > 1e10 -> 0). */
enum { ATTN_AMLA_PAPER, ATTN_AMLA_CANN };

/* FlashMLA's decode scheduler (get_mla_metadata; docs/REFERENCES.md, FlashMLA): as rewritten in 9241ae3 and
 * kept since (a part's payload ceil(total / parts) + 5 blocks, no floor; an empty entry counts one block; the
 * combine adds a zero weight), or 9c5dfab's (a payload of at least 10 blocks; the combine skips zero weights). */
enum { ATTN_FMLA_SCHED_9241AE3, ATTN_FMLA_SCHED_9C5DFAB };

/* Whose Triton MLA decode triton-mla runs (docs/REFERENCES.md); they differ on an FP8 cache only, but SGLang's splits.
 * vLLM's triton_decode_attention.py (splits of cdiv(len, n) keys, n = sm-parts or 4; K = bf16(fl32(code k_scale))):
 * 0155494's as its forward_mqa calls it (V = fl32(code k_scale), P fp32, P.V in TF32), a later file called with
 * is_mla (V = the K tile), or e46a1de's called without it (V = the codes, v_scale 1); SGLang's
 * triton_ops/decode_attention.py (n per request from get_num_kv_splits, or sm-parts for every request; splits of
 * cdiv(cdiv(len, n), 32) 32 keys; the codes as they are, k_scale in the softmax scale, P in e4m3, v_scale on the
 * output). */
enum { ATTN_TRITON_VLLM, ATTN_TRITON_VLLM_MLA, ATTN_TRITON_VLLM_E46A1DE, ATTN_TRITON_SGLANG, ATTN_TRITON_COUNT };
/* --triton-decode's names, in ATTN_TRITON_* order: vllm, vllm-mla, vllm-e46a1de, sglang */
extern const char *const attn_triton_decode_names[ATTN_TRITON_COUNT];

/* Per-sample counters a variant may fill (numeric exceptions are data). */
typedef struct {
    long events; /* variant-specific events (documented per variant) */
} attn_stats_t;

typedef struct attn_ctx attn_ctx_t;

/* A variant computes O [R][dv] of one group. Sites are resolved in ctx. */
typedef void (*attn_fn_t)(double *o, const attn_group_t *g, attn_ctx_t *ctx);

typedef struct {
    const char *name;
    const char *summary;
    attn_fn_t fn;
    const site_def_t *sites; /* terminated by a {NULL} entry */
    long (*fixed_tile)(long dk); /* the kernel's own KV tile (tokens) on head dim dk, which --block
                                    does not change; NULL: --block */
    const char *kernel;          /* the real kernel it reproduces bit for bit (check's verdict names
                                    it); NULL: a paper's algorithm */
} attn_variant_t;

/* The KV tile variant v uses on head dim dk: the kernel's own, or 0 (--block). */
static inline long attn_fixed_tile(const attn_variant_t *v, long dk)
{
    return v->fixed_tile ? v->fixed_tile(dk) : 0;
}

/* Resolved state handed to a variant: cfg, its sites (format/mode/exact), rng, stats. */
struct attn_ctx {
    const attn_cfg_t *cfg;
    int ieee; /* the kernel built without --use_fast_math: cfg->build, on a variant of ATTN_BUILD_VARIANTS */
    site_t site[SITE_MAX];
    int nsites;
    fmt_rng_t rng;
    attn_stats_t *stats;
    /* The log-sum-exp, for a variant that models the kernel's (natural log, the kernel's
     * arithmetic): lse_out [hq][sq] is set by the caller (NULL: not asked; attn_run fills it
     * with NaN first, so a variant without the model leaves NaN); lse is the current group's
     * rows within it, set by attn_run (NULL when not asked). */
    double *lse_out, *lse;
    /* Each row's largest scaled score as the kernel returns it (FlashMLA's sparse prefill's max_logits), the same way:
     * mlog_out set by the caller where the batch asks for it (attn_batch_t.max_logits), NaN-filled by attn_run, the
     * group's rows at mlog. */
    double *mlog_out, *mlog;
    /* The batch the input is an entry of, for a scheduler that spreads the whole batch's keys
     * (flashmla's split-KV): seqlens [batch_n] and this entry's index, set by the caller
     * (batch_n 0: the entry alone). */
    const long *batch_seqlens;
    long batch_n, batch_i;
    /* A sparse batch (attn_batch_t's sparse_sq): its query tokens per batch entry; 0 otherwise. */
    long batch_sq;
    /* The KV-head groups of this entry to compute (groups[h] != 0), set by the caller; NULL: every group. The
     * others' rows of O are left as they were (check's screening on a part of the case). */
    const unsigned char *groups;
    /* Set by attn_run: the input's shape, and the current group's first row in O [hq][sq]. */
    const attn_shape_t *shape;
    long row0;
    /* Intermediate arrays a variant hands out for --dump (extra NULL: not asked): x[n] is
     * element [i0][i1][:] of the array `name`, [d0][d1][n] in all (flashmla: each split's
     * normalized O, "oaccum", and log2-domain LSE, "lse_accum", by split and kernel row). */
    void (*extra)(void *arg, const char *name, long d0, long d1, long i0, long i1, const double *x, long n);
    void *extra_arg;
};

extern const attn_variant_t attn_variants[];
extern const int attn_variant_count;

/* Index of a variant by name, -1 if unknown. */
int attn_find(const char *name);

/* Resolve the sites of variant vi under cfg; returns ERR_USAGE naming an unknown --exact site. */
int attn_ctx_init(attn_ctx_t *ctx, int vi, const attn_cfg_t *cfg, attn_stats_t *st,
                  err_t *e);

/* The accumulation model of an accumulation site under cfg (its own where the kernel fixes it). */
acc_model_t attn_site_acc(const site_def_t *d, const attn_cfg_t *cfg);

/* The model variant vi uses for Q.K^T (pv 0) or P.V (pv 1) under cfg: --acc-qk/--acc-pv, or
 * the kernel's own (tc-hopper for a Hopper kernel's WGMMA, fp16-acc for an FP16 accumulator). */
acc_model_t attn_variant_acc(int vi, const attn_cfg_t *cfg, int pv);

/* Run variant vi on the whole input: O [hq][sq][dv]. */
void attn_run(double *o, int vi, const attn_input_t *in, attn_ctx_t *ctx);

/* The KV tile a --block variant uses on sk keys: a tile wider than the keys is one tile of all
 * of them (the same arithmetic), so no work array is sized by --block beyond the keys. */
static inline long attn_tile(const attn_ctx_t *ctx, long sk)
{
    long b = ctx->cfg->block;
    return b < sk ? b : sk > 0 ? sk : 1;
}

/* True when the site rounds to binary32 with RNE (not saturating, not exact): a hot loop may
 * then use (double)(float) conversions, which is what attn_round does for it, and vectorize. */
static inline int attn_site_is_fp32(const attn_ctx_t *ctx, int site)
{
    const site_t *s = &ctx->site[site];
    return !s->exact && s->fmt == FMT_FP32 && s->mode == FMT_RNE && !s->sat;
}

/* True when the site's rounding draws from ctx->rng (stochastic rounding): its roundings must
 * then happen in the order the kernel's are written, interleaved with other sites' draws. */
static inline int attn_site_draws(const attn_ctx_t *ctx, int site)
{
    const site_t *s = &ctx->site[site];
    return !s->exact && s->mode == FMT_RSTOCH;
}

/* Rounding at a resolved site: identity when exact. */
static inline double attn_round(attn_ctx_t *ctx, int site, double x)
{
    const site_t *s = &ctx->site[site];
    if (s->exact)
        return x;
    if (attn_site_is_fp32(ctx, site))
        return (double)(float)x; /* fmt_round's binary32 RNE, inline (the commonest site) */
    return fmt_round(x, s->fmt, s->mode, s->sat, &ctx->rng);
}

/* x[i] = attn_round(ctx, site, x[i]) for i < n: round-to-nearest-even sites vectorized. */
static inline void attn_round_n(attn_ctx_t *ctx, int site, double *x, long n)
{
    const site_t *s = &ctx->site[site];
    if (s->exact)
        return;
    if (s->mode == FMT_RNE) {
        fmt_round_array_rne(x, n, s->fmt, s->sat);
        return;
    }
    for (long i = 0; i < n; i++)
        x[i] = fmt_round(x[i], s->fmt, s->mode, s->sat, &ctx->rng);
}

/* The binary32 arithmetic inside a site whose result goes on to a narrower format (an op
 * computing in fp32 "opmath" and returning bf16): identity when the site is exact. */
static inline double attn_fp32(attn_ctx_t *ctx, int site, double x)
{
    return ctx->site[site].exact ? x : fmt_fp32(x);
}

#endif
