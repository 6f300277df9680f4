/* attn_variants -- declarations of every variant's entry point and site table */
#ifndef AMLA_ATTN_VARIANTS_H
#define AMLA_ATTN_VARIANTS_H

#include "attn/attn.h"
#include "attn/flash.h"

/* The 64-token KV tile of the Hopper kernels (FlashMLA and its FP8 cache, SnapMLA, ETAP,
 * FlashAttention-3): fixed by the kernel, --block does not change it. */
#define ATTN_KERNEL_TILE 64

void attn_standard(double *o, const attn_group_t *g, attn_ctx_t *ctx);
extern const site_def_t attn_standard_sites[];

void attn_base(double *o, const attn_group_t *g, attn_ctx_t *ctx);
extern const site_def_t attn_base_sites[];

void attn_amla(double *o, const attn_group_t *g, attn_ctx_t *ctx);
void attn_amla_nocomp(double *o, const attn_group_t *g, attn_ctx_t *ctx);
void attn_amla_premul(double *o, const attn_group_t *g, attn_ctx_t *ctx);
extern const site_def_t attn_amla_sites[];

void attn_amla_naive(double *o, const attn_group_t *g, attn_ctx_t *ctx);
extern const site_def_t attn_amla_naive_sites[];

void attn_snapmla(double *o, const attn_group_t *g, attn_ctx_t *ctx);
void attn_snapmla_a(double *o, const attn_group_t *g, attn_ctx_t *ctx);
void attn_snapmla_b(double *o, const attn_group_t *g, attn_ctx_t *ctx);
void attn_snapmla_c(double *o, const attn_group_t *g, attn_ctx_t *ctx);
void attn_snapmla_d(double *o, const attn_group_t *g, attn_ctx_t *ctx);
void attn_snapmla_inverted(double *o, const attn_group_t *g, attn_ctx_t *ctx);
extern const site_def_t attn_snapmla_sites[];

void attn_flashmla_fp8(double *o, const attn_group_t *g, attn_ctx_t *ctx);
extern const site_def_t attn_flashmla_fp8_sites[];

void attn_seesaw(double *o, const attn_group_t *g, attn_ctx_t *ctx);
extern const site_def_t attn_seesaw_sites[];
void attn_etap(double *o, const attn_group_t *g, attn_ctx_t *ctx);
extern const site_def_t attn_etap_sites[];
void attn_fastattn(double *o, const attn_group_t *g, attn_ctx_t *ctx);
extern const site_def_t attn_fastattn_sites[];
extern const site_def_t attn_fastattn_fp16acc_sites[];
void attn_fa3fp8(double *o, const attn_group_t *g, attn_ctx_t *ctx);
extern const site_def_t attn_fa3fp8_sites[];

/* AMLA's rescale: add n to the INT32 reading of *x's binary32 bits (Lemma 3.1). Returns 1
 * when the operand or result leaves the lemma's range (zero/subnormal/inf/NaN operand,
 * result exponent field 0 or 255, or a carry into the sign bit), else 0. */
int attn_amla_int_add(float *x, int32_t n);

#endif
