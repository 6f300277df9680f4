/* kernel -- the real kernels' envelopes (docs/REFERENCES.md): FlashMLA 9c5dfab's and FlashMLA-ETAP
 * 39e6160's dense decode take BF16 or FP16 Q and cache, head dims 576 (Q, K) and 512 (V read from
 * the K cache) and return O in the input's type; PyTorch's SDPA flash backend (FlashAttention-2)
 * takes BF16 or FP16, one head dim for Q, K and V, a multiple of 8 up to 256, and returns the
 * input's type; FlashMLA 9241ae3's sparse FP8 decode takes BF16 Q, 64 or 128 heads, d 576 or 512; PyTorch's
 * math, memory-efficient and cuDNN backends as attn_kernel_outside says */
#include "attn/kernel.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The loaded case's FP8 scales of q or k differ between its batch entries or KV heads (per-tensor scales: none). */
static int attn_scales_per_entry(const attn_batch_t *in)
{
    for (int x = 0; in && x < 2; x++)
        for (long b = 0; b < in->n && in->entry[0].scale[x]; b++)
            for (long h = 0; h < in->entry[b].s.hkv; h++)
                if (in->entry[b].scale[x][h] != in->entry[0].scale[x][0])
                    return 1;
    return 0;
}

int attn_kernel_outside(int vi, const attn_cfg_t *cfg, const attn_shape_t *s, int kv_separate,
                        const attn_batch_t *input, char *why, size_t n)
{
    const char *name = attn_variants[vi].name, *kernel;
    int mla = 0, fp8_sparse = input && input->sparse_sq > 0, prefill = strcmp(name, "flashmla-sparse-prefill") == 0;
    /* a sparse prefill's case (each token's keys through its top-k list into kv.npy) is no other kernel's input; the
     * sparse prefill runs a dense one as the list of every key in order */
    if (input && input->token_rows && !prefill && attn_variants[vi].kernel) {
        snprintf(why, n, "%s does not read a sparse prefill's top-k lists (here kv.npy and indices.npy)",
                 attn_variants[vi].kernel);
        return 1;
    }
    if (prefill) {
        /* FlashMLA 9241ae3's sparse prefill: bf16 q, kv and out, h_q a multiple of 64 over one KV head, d_qk 576 or
         * 512, V kv's first 512 dims (what its loader checks; run on generated inputs, the same) */
        if (cfg->in_format != FMT_BF16 || cfg->out_format != FMT_BF16)
            snprintf(why, n, "FlashMLA's sparse prefill takes bf16 and returns bf16 (here %s in and %s out)",
                     fmt_table[cfg->in_format].name, fmt_table[cfg->out_format].name);
        else if ((s->dk != 576 && s->dk != 512) || s->dv != 512 || kv_separate)
            snprintf(why, n, "FlashMLA's sparse prefill runs d_qk 576 or 512 over V = kv's first 512 dims (here %ld and "
                     "%ld%s)", s->dk, s->dv, kv_separate ? ", --kv separate" : "");
        else if (s->hkv != 1 || s->hq % 64)
            snprintf(why, n, "FlashMLA's sparse prefill runs a multiple of 64 query heads on one KV head (here %ld on %ld)",
                     s->hq, s->hkv);
        else if (s->causal && s->sq > 1)
            snprintf(why, n, "FlashMLA's sparse prefill has no causal mask: each token's keys are its indices (here "
                             "--causal)");
        else
            return 0;
        return 1;
    }
    /* a dense kernel reads a BF16 or FP16 cache: on FlashMLA's FP8 sparse cache it is run on the dequantized keys
     * the sparse kernel sees, which no dense kernel is given */
    if (fp8_sparse && attn_variants[vi].kernel && strcmp(name, "flashmla-sparse") != 0) {
        snprintf(why, n, "%s reads a dense bf16 or fp16 cache (here FlashMLA's FP8 sparse cache)",
                 attn_variants[vi].kernel);
        return 1;
    }
    if (strcmp(name, "flashmla") == 0) {
        kernel = "FlashMLA";
        mla = 1;
    } else if (strcmp(name, "flashmla-etap") == 0) {
        kernel = "FlashMLA-ETAP";
        mla = 1;
    } else if (strcmp(name, "flashmla-sparse") == 0) {
        /* FlashMLA 9241ae3's sparse FP8 decode: bf16 q and out, h_q 64 or 128 over one KV head, d 576 (V32)
         * or 512 (MODEL1), V from the cache, no causal mask */
        if (cfg->in_format != FMT_BF16 || cfg->out_format != FMT_BF16)
            snprintf(why, n, "FlashMLA's sparse FP8 kernel takes bf16 q and returns bf16 (here %s in and %s out)",
                     fmt_table[cfg->in_format].name, fmt_table[cfg->out_format].name);
        else if ((s->dk != 576 && s->dk != 512) || s->dv != 512)
            snprintf(why, n, "FlashMLA's sparse FP8 kernel runs dk 576 (V32) or 512 (MODEL1) and dv 512 (here %ld and %ld)",
                     s->dk, s->dv);
        else if (s->hkv != 1 || (s->hq != 64 && s->hq != 128))
            snprintf(why, n, "FlashMLA's sparse FP8 kernel runs 64 or 128 query heads on one KV head (here %ld on %ld)",
                     s->hq, s->hkv);
        else if (kv_separate)
            snprintf(why, n, "FlashMLA's sparse FP8 kernel reads V from the K cache (here --kv separate)");
        else if (s->causal && s->sq > 1)
            snprintf(why, n, "FlashMLA's sparse FP8 kernel has no causal mask (here --causal)");
        else
            return 0;
        return 1;
    } else if (strcmp(name, "flashmla-dense-fp8") == 0) {
        /* vLLM's FlashMLA fork's dense FP8 decode: e4m3 q and cache (their descales per tensor), bf16 out, d 576 over
         * V = the cache's first 512, one KV head */
        if (cfg->in_format != FMT_E4M3 || cfg->out_format != FMT_BF16)
            snprintf(why, n, "vLLM's FlashMLA dense FP8 kernel takes e4m3 q and cache and returns bf16 (here %s in and %s out)",
                     fmt_table[cfg->in_format].name, fmt_table[cfg->out_format].name);
        else if (s->dk != 576 || s->dv != 512 || kv_separate || s->hkv != 1)
            snprintf(why, n, "vLLM's FlashMLA dense FP8 kernel runs dk 576 over V = the cache's first 512 dims, one KV head "
                     "(here %ld and %ld on %ld)", s->dk, s->dv, s->hkv);
        else if (attn_scales_per_entry(input))
            snprintf(why, n, "vLLM's FlashMLA dense FP8 kernel takes one descale per tensor for q and for the cache (here "
                     "they differ between batch entries)");
        else
            return 0;
        return 1;
    } else if (strcmp(name, "triton-mla") == 0) {
        /* vLLM's Triton MLA decode: q bf16 or fp16, the output in q's type, d 576 over V = the cache's first 512 dims,
         * one KV head (a bf16 cache, or e4m3 codes beside k_scale.npy) */
        fmt_id_t in = cfg->in_format, out = cfg->out_format;
        if ((in != FMT_BF16 && in != FMT_FP16) || out != in)
            snprintf(why, n, "vLLM's Triton MLA decode takes a bf16 or fp16 q and returns its type (here %s in and %s out)",
                     fmt_table[in].name, fmt_table[out].name);
        else if (s->dk != 576 || s->dv != 512 || kv_separate || s->hkv != 1)
            snprintf(why, n, "vLLM's Triton MLA decode runs dk 576 over V = the cache's first 512 dims, one KV head (here "
                     "%ld and %ld on %ld)", s->dk, s->dv, s->hkv);
        else if (s->causal && s->sq > 1)
            snprintf(why, n, "vLLM's Triton MLA decode has no causal mask (here --causal on %ld query tokens)", s->sq);
        else
            return 0;
        return 1;
    } else if (strcmp(name, "fa3") == 0) {
        /* FlashAttention-3's BF16/FP16 forward: head dims up to 256 (Q and K, V the same), or the q_v pair (64 + 512,
         * V read from the cache: the lab's MLA layout); its causal mask is bottom-right */
        fmt_id_t in = cfg->in_format, out = cfg->out_format;
        int qv = s->dk == 576 && s->dv == 512 && !kv_separate;
        if (in != FMT_BF16 && in != FMT_FP16 && in != FMT_E4M3)
            snprintf(why, n, "FlashAttention-3 takes bf16, fp16 or e4m3 (here %s)", fmt_table[in].name);
        else if (in == FMT_E4M3 && (out != FMT_BF16 || qv))
            snprintf(why, n, "FlashAttention-3's FP8 path returns bf16 and has no q_v pair (here %s out%s)",
                     fmt_table[out].name, qv ? ", MLA" : "");
        else if (in != FMT_E4M3 && out != in)
            snprintf(why, n, "FlashAttention-3 returns its input's format (here %s in and %s out)", fmt_table[in].name,
                     fmt_table[out].name);
        else if (!qv && (s->dk % 8 || s->dv % 8 || s->dk > 256 ||
                         (s->dk != s->dv && !(s->dk > 128 && s->dk <= 192 && s->dv > 96 && s->dv <= 128))))
            snprintf(why, n, "FlashAttention-3 takes one head dim up to 256, q/k in (128, 192] with v in (96, 128], or the "
                     "q_v pair 576 / 512 (here %ld and %ld)", s->dk, s->dv);
        else if (s->causal == ATTN_CAUSAL_TOP_LEFT && s->sq != s->sk)
            snprintf(why, n, "FlashAttention-3 masks bottom-right (here --causal=top-left on %ld queries and %ld keys)",
                     s->sq, s->sk);
        else if (cfg->sm_parts > ATTN_FA3_MAX_SPLITS)
            snprintf(why, n, "FlashAttention-3 runs at most %d splits (here sm-parts %ld)", ATTN_FA3_MAX_SPLITS,
                     cfg->sm_parts);
        else
            return 0;
        return 1;
    } else if (strcmp(name, "fa2") == 0) {
        kernel = "PyTorch's flash backend";
    } else if (strncmp(name, "sdpa-", 5) == 0) {
        /* PyTorch's other SDPA backends (torch 2.11): math takes fp32 too and any head dims; the
         * memory-efficient kernels modelled are the aligned ones (head dims a multiple of 8), without GQA;
         * cuDNN's take one head dim up to 256, a multiple of 8, and two keys or more */
        int math = strcmp(name, "sdpa-math") == 0, eff = strcmp(name, "sdpa-efficient") == 0;
        fmt_id_t in = cfg->in_format, out = cfg->out_format;
        const char *k = math ? "PyTorch's math backend" : eff ? "PyTorch's memory-efficient backend" : "PyTorch's cuDNN backend";
        if (in != FMT_BF16 && in != FMT_FP16 && !(math && in == FMT_FP32))
            snprintf(why, n, "%s takes %s inputs only (here %s)", k, math ? "bf16, fp16 or fp32" : "bf16 or fp16",
                     fmt_table[in].name);
        else if (out != in)
            snprintf(why, n, "%s returns its input's format (here %s in and %s out)", k, fmt_table[in].name,
                     fmt_table[out].name);
        else if (eff && (s->dk % 8 || s->dv % 8))
            snprintf(why, n, "%s's aligned kernels take head dims that are multiples of 8 (here %ld and %ld)", k, s->dk,
                     s->dv);
        else if (eff && s->hkv != s->hq)
            snprintf(why, n, "%s refuses grouped KV heads (here %ld query heads on %ld)", k, s->hq, s->hkv);
        else if (!math && !eff && (s->dk != s->dv || s->dk % 8 || s->dk > 256))
            snprintf(why, n, "%s takes one head dim for Q and K and V that is a multiple of 8 up to 256 (here %ld and %ld)",
                     k, s->dk, s->dv);
        else if (!math && !eff && s->sk < 2)
            snprintf(why, n, "%s takes two keys or more (here %ld)", k, s->sk);
        else
            return 0;
        return 1;
    } else {
        return 0;
    }
    fmt_id_t in = cfg->in_format, out = cfg->out_format;
    if (in != FMT_BF16 && in != FMT_FP16)
        snprintf(why, n, "%s takes bf16 or fp16 inputs only (here %s)", kernel, fmt_table[in].name);
    else if (out != in)
        snprintf(why, n, "%s returns its input's format (here %s in and %s out)", kernel, fmt_table[in].name,
                 fmt_table[out].name);
    else if (mla && (s->dk != 576 || s->dv != 512))
        snprintf(why, n, "%s runs dk 576 and dv 512 only (here %ld and %ld)", kernel, s->dk, s->dv);
    else if (mla && kv_separate)
        snprintf(why, n, "%s reads V from the K cache (here --kv separate)", kernel);
    else if (!mla && (s->dk != s->dv || s->dk % 8 || s->dk > 256))
        snprintf(why, n, "%s takes one head dim for Q and K and V that is a multiple of 8 up to 256 (here %ld and %ld)", kernel,
                 s->dk, s->dv);
    else if (s->causal == ATTN_CAUSAL_TOP_LEFT && s->sq != s->sk)
        snprintf(why, n, mla ? "%s masks bottom-right (here --causal=top-left on %ld queries and %ld keys)"
                             : "%s refuses is_causal when queries and keys differ in number (here top-left on %ld and %ld)",
                 kernel, s->sq, s->sk);
    else
        return 0;
    return 1;
}

const char *attn_kernel_name(int vi, const attn_cfg_t *cfg)
{
    static const char *const triton[ATTN_TRITON_COUNT] = {
        "vLLM's Triton MLA decode kernel (0155494's, as its forward_mqa calls it)",
        "vLLM's Triton MLA decode kernel (called with is_mla)",
        "vLLM's Triton MLA decode kernel (e46a1de's, called without is_mla)", "SGLang's Triton MLA decode kernel"};
    if (strcmp(attn_variants[vi].name, "triton-mla") == 0)
        return triton[cfg->triton_decode];
    return attn_variants[vi].kernel;
}

void attn_kernel_no_keys(int vi, double *o, double *lse)
{
    const char *name = vi >= 0 ? attn_variants[vi].name : "golden";
    *o = 0, *lse = INFINITY;
    if (strcmp(name, "fa3") == 0) {
        *lse = -INFINITY;
    } else if (strcmp(name, "triton-mla") == 0) {
        *o = NAN, *lse = -INFINITY;
    }
}
