/* t-flashmla -- the split-KV scheduler against the metadata the real kernel's get_mla_metadata
 * wrote on an H100 (shared/captures/flashmla a1, a4 and a6: tile_scheduler_metadata and
 * num_splits, copied here) */
#include <string.h>

#include "attn/variants/fa2.h"
#include "attn/variants/flashmla.h"
#include "check.h"

#define PARTS 66 /* 132 SMs / ceil(128 query rows / 64) */

static void check_case(const char *name, const long *seqlens, long b, const long (*want)[5], long nwant,
                       const long *idle, const long *want_splits)
{
    long meta[PARTS][5], ns[8];
    flashmla_schedule(meta, ns, seqlens, b, PARTS);
    for (long p = 0; p < PARTS; p++) {
        const long *w = p < nwant ? want[p] : idle;
        CHECK(memcmp(meta[p], w, sizeof meta[p]) == 0, "%s part %ld: [%ld %ld %ld %ld %ld], the H100's [%ld %ld %ld %ld %ld]",
              name, p, meta[p][0], meta[p][1], meta[p][2], meta[p][3], meta[p][4], w[0], w[1], w[2], w[3], w[4]);
    }
    for (long i = 0; i <= b; i++)
        CHECK(ns[i] == want_splits[i], "%s num_splits[%ld] %ld, the H100's %ld", name, i, ns[i], want_splits[i]);
}

int main(void)
{
    /* a1: one entry of 4096 keys: 13 splits of five 64-key blocks, the rest of the parts idle */
    long a1[13][5];
    for (long p = 0; p < 13; p++) {
        long row[5] = {0, 320 * p, 0, p == 12 ? 4096 : 320 * (p + 1), p};
        memcpy(a1[p], row, sizeof row);
    }
    static const long a1_idle[5] = {1, 0, 0, 4096, 0}, a1_splits[2] = {0, 13}, a1_len[1] = {4096};
    check_case("a1", a1_len, 1, (const long (*)[5])a1, 13, a1_idle, a1_splits);
    /* a6: 2048 keys (s_q 2, 64 heads: 128 rows): 7 splits */
    long a6[7][5];
    for (long p = 0; p < 7; p++) {
        long row[5] = {0, 320 * p, 0, p == 6 ? 2048 : 320 * (p + 1), p};
        memcpy(a6[p], row, sizeof row);
    }
    static const long a6_idle[5] = {1, 0, 0, 2048, 0}, a6_splits[2] = {0, 7}, a6_len[1] = {2048};
    check_case("a6", a6_len, 1, (const long (*)[5])a6, 7, a6_idle, a6_splits);
    /* a4: four entries of 4096, 1000, 129 and 64 keys sharing the parts */
    static const long a4[19][5] = {
        {0, 0, 0, 320, 0},     {0, 320, 0, 640, 1},   {0, 640, 0, 960, 2},    {0, 960, 0, 1280, 3},
        {0, 1280, 0, 1600, 4}, {0, 1600, 0, 1920, 5}, {0, 1920, 0, 2240, 6},  {0, 2240, 0, 2560, 7},
        {0, 2560, 0, 2880, 8}, {0, 2880, 0, 3200, 9}, {0, 3200, 0, 3520, 10}, {0, 3520, 0, 3840, 11},
        {0, 3840, 0, 4096, 12}, {1, 0, 1, 320, 0},    {1, 320, 1, 640, 1},    {1, 640, 1, 960, 2},
        {1, 960, 1, 1000, 3},  {2, 0, 2, 129, 0},     {3, 0, 3, 64, 0}};
    static const long a4_idle[5] = {4, 0, 3, 64, 0}, a4_splits[5] = {0, 13, 17, 18, 19},
                      a4_len[4] = {4096, 1000, 129, 64};
    check_case("a4", a4_len, 4, a4, 19, a4_idle, a4_splits);

    /* FlashAttention-2's split count (flash_api's num_splits_heuristic on 2 x 132 slots), by hand:
     * 512 programs fill 0.8 x 264 -> 1; 16 programs over 2 blocks: efficiencies 16/264 and 32/264,
     * the first below 0.85 of the best -> 2; 16 over 4 blocks: 3 splits give 2 blocks each like 2
     * (not eligible), 4 is the best (64/264) and 2's 32/264 < 0.85 of it -> 4; 64 programs over 4
     * blocks: 256/264 -> 4; 8 programs over 8 blocks: 5, 6 and 7 splits give 2 blocks each like 4
     * (not eligible), 4's 32/264 < 0.85 of 8's 64/264 -> 8 (the captures' cases, each
     * bit-identical at 99% or more) */
    CHECK(attn_fa2_splits(512, 132, 4) == 1, "fa2 splits, full GPU");
    CHECK(attn_fa2_splits(16, 132, 2) == 2, "fa2 splits, 16 programs x 2 blocks");
    CHECK(attn_fa2_splits(16, 132, 4) == 4, "fa2 splits, 16 programs x 4 blocks");
    CHECK(attn_fa2_splits(64, 132, 4) == 4, "fa2 splits, 64 programs x 4 blocks");
    CHECK(attn_fa2_splits(8, 132, 8) == 8, "fa2 splits, decode: 8 programs x 8 blocks");
    CHECK(attn_fa2_splits(16, 132, 1) == 1, "fa2 splits, one block");
    return check_done("t-flashmla");
}
