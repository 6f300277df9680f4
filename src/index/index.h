/* index -- DeepSeek's lightning indexer (DeepGEMM's fp8_mqa_logits / fp8_paged_mqa_logits): the case as the kernels
 * take it, its exact logits (Golden), the kernels' arithmetic bit for bit, and what a top-k of them selects */
#ifndef AMLA_INDEX_H
#define AMLA_INDEX_H

#include "base/err.h"
#include "num/fmt/fmt.h"

/* A case: S query rows (B * next_n for the paged form) of H heads and D dims against key rows of D dims with one
 * scale each. Row i's logit j is for key position j, valid for ks[i] <= j < ke[i]; position j of row i is key
 * row krow(i, j): j (prefill), or the paged cache's row block_table[i / next_n][j / 64] * 64 + j % 64. */
typedef struct {
    long S, H, D, nrows;  /* query rows, heads, dims, key rows (prefill: Skv; paged: blocks * 64) */
    long L;               /* logit positions per query row (prefill: Skv, or max_seqlen_k compressed; paged:
                             the logits' width) */
    int paged, compressed; /* compressed (prefill): logits column c is key ks[i] + c */
    long next_n, B, maxb;  /* paged: query tokens per request, requests, block-table width */
    double *q;             /* [S][H][D] e4m3 values */
    double *k, *kscale;    /* [nrows][D] e4m3 values, [nrows] float32 scales */
    double *w;             /* [S][H] float32 */
    long *ks, *ke;         /* [S] */
    long *table;           /* paged: [B][maxb] */
    fmt_id_t out;          /* the logits' format: FMT_FP32 or FMT_BF16 */
    double *logits;        /* [S][L] as the kernel returned them (NULL: none given) */
    long *topk, K;         /* the kernel's selection [S][K] (NULL: none given) */
} idx_case_t;

/* The key row of position j of query row i. */
long idx_krow(const idx_case_t *c, long i, long j);
/* The key position of logits column col of row i (compressed: ks[i] + col). */
static inline long idx_pos(const idx_case_t *c, long i, long col)
{
    return c->compressed ? c->ks[i] + col : col;
}

/* DIR's indexer case: the prefill form (q.npy uint8 e4m3 codes [S, H, D], k.npy codes [Skv, D], k_scale.npy
 * float32 [Skv], weights.npy float32 [S, H], ks.npy / ke.npy int32 [S]) or the paged one (q.npy [B, next_n, H, D],
 * kv_cache.npy uint8 [blocks, 64, 1, D + 4], weights.npy [B next_n, H], context_lens.npy int32 [B, next_n],
 * block_table.npy int32 [B, max_blocks]); logits.npy (float32, or uint16 bf16 bits) and topk.npy (int32 [S, K])
 * where given. Bad input: ERR_USAGE naming the file. */
int idx_load(idx_case_t *c, const char *dir, err_t *e);
/* Whether DIR holds an indexer case (weights.npy beside k_scale.npy or kv_cache.npy). */
int idx_is_case(const char *dir);
void idx_free(idx_case_t *c);

/* The exact logits: sum_h relu(q_h . k) w_h k_scale, in double-double from exact dot products (e4m3 products
 * of D <= 256 dims sum exactly in binary64), rounded once to binary64; NAN at positions not valid. Where seq is
 * given, the kernel's sequence of operations on the same exact products in binary64 (no rounding) goes there. */
void idx_golden(const idx_case_t *c, double *g, double *seq);
/* DeepGEMM's sm90 kernels (54e2261; docs/REFERENCES.md, DeepGEMM), both forms: each head's q . k by FP8 WGMMA from
 * zero (tc-hopper-fp8-fast); each of a quad's four lanes its heads 8c + 2q and 8c + 2q + 1 in c order, relu(s) w
 * summed as FFMA(r_0, w_0, fl(r_1 w_1)) then FFMA for c = 2, 3, ...; (sum_a + sum_b) k_scale; the quad's butterfly; the output cast. No fast math: IEEE binary32.
 * NAN at positions not valid. */
void idx_deepgemm(const idx_case_t *c, double *x);

/* Selection metrics of one query row's top-K (K clipped to its valid positions): against Golden's logits g. */
typedef struct {
    long K;         /* the row's top-K size */
    long hit;       /* of the selected keys, those in Golden's top-K */
    long ties;      /* valid positions whose Golden logit equals Golden's K-th largest */
    long tie_zeros; /* of them, exact zeros (every head's relu 0) */
    long worst;     /* Golden's rank (1 = largest) of the worst selected key */
} idx_sel_t;
/* The kernel's top-K of row i: its topk.npy row where given, else the K largest of x (ties to the lower position). */
void idx_select(const idx_case_t *c, const double *x, const double *g, long i, long K, idx_sel_t *s);

#endif
