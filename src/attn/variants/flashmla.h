/* flashmla -- what the flashmla variant shares with its tests and with flashmla-etap (the same
 * API and scheduler): the split-KV scheduler */
#ifndef AMLA_FLASHMLA_H
#define AMLA_FLASHMLA_H

#include "attn/attn.h"

/* get_mla_metadata for a batch of b entries with seqlens keys over `parts` SM parts: per part
 * [begin entry, begin key, end entry, end key, first split index], and num_splits[b + 1]
 * (entry i uses splits num_splits[i] .. num_splits[i+1]-1); a part with begin entry b is idle. */
void flashmla_schedule(long (*meta)[5], long *num_splits, const long *seqlens, long b, long parts);
/* The same with the payload per part at least min_payload blocks (FlashMLA 9c5dfab: 2 overheads,
 * 10; FlashMLA-ETAP's copy of the scheduler: no floor, 0). */
void flashmla_schedule_min(long (*meta)[5], long *num_splits, const long *seqlens, long b, long parts,
                           long min_payload);
/* The splits of entry `entry` under the schedule of the whole batch (seqlens [b]): each part that
 * covers the entry gives one split, starting at block begin[i] (the part's own start in its first
 * entry, else 0); begin[nsplit] = the entry's blocks; begin holds parts + 1. The entry's first
 * split in the batch's numbering into *first, the batch's splits into *total. Returns nsplit. */
long flashmla_splits(long *begin, long *first, long *total, const long *seqlens, long b, long entry, long parts,
                     long min_payload);
/* The metadata get_mla_metadata writes, as --dump's NAME.tile_scheduler_metadata.npy [parts, 1, 5]
 * ([begin_idx, begin_seqlen, end_idx, end_seqlen, begin_n_split_idx] per SM part) and
 * NAME.num_splits.npy [b + 1, 1] (cumulative splits), to set beside a capture's. */
void flashmla_dump_schedule(attn_ctx_t *ctx, const long *seqlens, long b, long parts, long min_payload);
/* SM parts for a group of R query rows (one KV head): --sm-parts, or sm_count / h_kv /
 * ceil(R / 64) as flash_api.cpp chooses them (at least 1). */
long flashmla_parts(const attn_ctx_t *ctx, long R);

/* The combine kernel for one row: split i's O_i (oacc + i ldo_split, dv values) and lse_i (log2 domain);
 * gmax (0 if every lse_i is -inf); each of 32 lanes sums ex2(lse_i - gmax) over splits t, t + 32, ... below
 * max_splits, then the warp's butterfly; g = lg2(sum) + gmax; O = sum_i ex2(lse_i - g) O_i by FFMA in split
 * order (a zero weight skipped where skip_zero: FlashMLA 9c5dfab's combine; 9241ae3's adds it). Sums at
 * site_sum, the rest at site_scale. Returns g (+inf where the sum is 0). */
/* The combine kernel of the FlashMLA forks before 9c5dfab's rewrite (FlashMLA-ETAP, vLLM's dense FP8 decode), for
 * one row in the natural-log domain: gmax over the splits' lse (0 if all are -inf); lane t sums __expf(lse_i - gmax)
 * over splits t, t + 32, ... from 0, then the warp's butterfly; g = FFMA(lg2(sum), fl32(ln 2), gmax) (+inf for a
 * zero sum); O = sum over the splits in order of FFMA(__expf(lse_i - g), O_i, O). Sums at site_sum, the rest at
 * site_scale. Returns g. (flashmla_etap.c) */
double flashmla_combine_ln(attn_ctx_t *ctx, int site_sum, int site_scale, double *o, const double *oacc, long ldo_split,
                           const double *lse, long nsplit, long dv, long max_splits);
double flashmla_combine(attn_ctx_t *ctx, int site_sum, int site_scale, int skip_zero, double *o, const double *oacc,
                        long ldo_split, const double *lse, long nsplit, long dv, long max_splits);
/* x / (float)M_LOG2E as the build compiles it: x fl32(ln 2) with fast math, the IEEE quotient without (the lse of
 * FlashMLA's kernels from their log2-domain maximum or lse) */
double flashmla_from_log2(attn_ctx_t *ctx, int site, double x);

/* The combine kernel over a group's R rows: oacc [nsplit][R][dv] (or, where oacc is NULL, oacc32 there: splits
 * whose values are binary32, in half the memory), lse [R][nsplit] (log2), into o [R][dv] rounded at site_out,
 * and ctx->lse (natural log, g fl32(ln 2)) where asked; the split bound from the SM parts (32, 64, ... 160). */
void flashmla_combine_rows(attn_ctx_t *ctx, int site_sum, int site_scale, int site_out, int skip_zero, double *o,
                           const double *oacc, const float *oacc32, const double *lse, long R, long nsplit, long dv,
                           long parts);

#endif
