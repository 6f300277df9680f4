/* fa3 -- what the fa3 variant gives its tests and check: FlashAttention-3's tile sizes and split heuristic */
#ifndef AMLA_FA3_H
#define AMLA_FA3_H

/* tile_size_fwd_sm90: kBlockM and kBlockN for QK head dim d, V head dim dv (512: the q_v pair), a causal mask, a
 * paged cache read without TMA, one-byte (FP8) inputs. */
void attn_fa3_tile_mn(long d, long dv, int causal, int paged_non_tma, int fp8, long *bm, long *bn);
/* num_splits_heuristic (heuristics.h) as get_num_splits calls it. */
long attn_fa3_splits_heuristic(long total_mblocks, long num_sms, long num_n_blocks, long num_m_blocks,
                               long size_one_kv_head, int causal, long max_splits);

#endif
