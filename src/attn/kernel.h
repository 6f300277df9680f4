/* kernel -- where the real kernel behind a kernel variant runs: the head dims, formats and cache
 * layouts its source accepts, so that a result outside them is marked as an extrapolation of the
 * kernel's arithmetic rather than taken for the kernel */
#ifndef AMLA_ATTN_KERNEL_H
#define AMLA_ATTN_KERNEL_H

#include <stddef.h>

#include "attn/attn.h"

/* The most splits FlashAttention-3 runs (get_num_splits's max_splits; an explicit num_splits is capped at it). */
#define ATTN_FA3_MAX_SPLITS 128

/* For variant vi under cfg on shape s (kv_separate: V is not the first dv columns of K; input: the loaded case,
 * NULL for generated inputs: FlashMLA's FP8 sparse cache, kcache.npy, or FP8 codes with their scales): 0 when the
 * variant models no kernel or its kernel runs this case; else 1, with why (at most n bytes) saying what the kernel
 * takes, e.g. "FlashMLA runs dk 576 and dv 512 only (here 64 and 32)" (no commas: a CSV cell). */
int attn_kernel_outside(int vi, const attn_cfg_t *cfg, const attn_shape_t *s, int kv_separate,
                        const attn_batch_t *input, char *why, size_t n);

/* The real kernel variant vi reproduces under cfg (check's verdict names it), or NULL for a paper's algorithm:
 * attn_variant_t.kernel, but for a setting that names another kernel (triton-mla: the file --triton-decode names) */
const char *attn_kernel_name(int vi, const attn_cfg_t *cfg);

/* What variant vi returns for an entry with no key (seqlens 0, or a sparse entry with no valid index): every O
 * element *o and every lse row *lse. The softmax of nothing has no value, so each kernel's own convention
 * (docs/REFERENCES.md): FlashMLA's decodes and PyTorch's flash backend write 0 and +inf (the lab's Golden and its
 * paper algorithms take the same), FlashAttention-3's epilogue store_zero 0 and -inf, vLLM's Triton decode
 * 0 / 0 = NaN and -inf + log(0) = -inf. */
void attn_kernel_no_keys(int vi, double *o, double *lse);

#endif
