/* fa2 -- what the fa2 variant gives its tests: flash_api's split-count heuristic */
#ifndef AMLA_FA2_H
#define AMLA_FA2_H

/* num_splits_heuristic as set_params_splitkv calls it: programs = entries x query heads x
 * 64-row blocks, on 2 sm_count slots, over n_blocks key blocks of the split kernel. */
long attn_fa2_splits(long programs, long sm_count, long n_blocks);

#endif
