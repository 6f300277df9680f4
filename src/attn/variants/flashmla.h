/* flashmla -- what the flashmla variant gives its tests: the split-KV scheduler */
#ifndef AMLA_FLASHMLA_H
#define AMLA_FLASHMLA_H

/* get_mla_metadata for a batch of b entries with seqlens keys over `parts` SM parts: per part
 * [begin entry, begin key, end entry, end key, first split index], and num_splits[b + 1]
 * (entry i uses splits num_splits[i] .. num_splits[i+1]-1); a part with begin entry b is idle. */
void flashmla_schedule(long (*meta)[5], long *num_splits, const long *seqlens, long b, long parts);

#endif
