/* attn_variants -- declarations of every variant's entry point and site table */
#ifndef AMLA_ATTN_VARIANTS_H
#define AMLA_ATTN_VARIANTS_H

#include "attn.h"

void attn_standard(double *o, const attn_group_t *g, attn_ctx_t *ctx);
extern const site_def_t attn_standard_sites[];

void attn_base(double *o, const attn_group_t *g, attn_ctx_t *ctx);
extern const site_def_t attn_base_sites[];

#endif
