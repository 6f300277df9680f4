/* variants -- what variant files share: the entry-point macro, the Hopper tile, AMLA's add */
#ifndef AMLA_ATTN_VARIANTS_H
#define AMLA_ATTN_VARIANTS_H

#include "attn/attn.h"
#include "attn/flash.h"

/* The 64-token KV tile of the Hopper kernels (FlashMLA and its FP8 cache, SnapMLA, ETAP,
 * FlashAttention-3): fixed by the kernel, --block does not change it. */
#define ATTN_KERNEL_TILE 64

/* The registry's fixed tiles: the Hopper kernels' 64 keys whatever the head dim, and
 * FlashAttention-2's launch rule on an H100 (flash_fwd_launch_template.h, no dropout, not sm8x:
 * head dims up to 64 run kBlockN = 128, the larger ones 64; fa2.c). */
long attn_kernel_tile(long dk);
long attn_fa2_tile(long dk);
/* FlashAttention-3's kBlockN on head dim dk (one head dim for Q, K and V; fa3.c). */
long attn_fa3_tile(long dk);
/* PyTorch's memory-efficient kernel's key block on head dim dk (sdpa_efficient.c). */
long attn_sdpa_efficient_tile(long dk);
long attn_sdpa_cudnn_tile(long dk);

/* A variant's entry point, declared where it is defined (the registry declares it too):
 *     ATTN_VARIANT(attn_base) { ... }  */
#define ATTN_VARIANT(fn)                                                                                         \
    void fn(double *o, const attn_group_t *g, attn_ctx_t *ctx);                                                  \
    void fn(double *o, const attn_group_t *g, attn_ctx_t *ctx)

/* AMLA's rescale: add n to the INT32 reading of *x's binary32 bits (Lemma 3.1). Returns 1
 * when the operand or result leaves the lemma's range (zero/subnormal/inf/NaN operand,
 * result exponent field 0 or 255, or a carry into the sign bit), else 0. */
int attn_amla_int_add(float *x, int32_t n);

#endif
