/* problem -- the attention problem: shapes, inputs, and its KV-head groups */
#ifndef AMLA_PROBLEM_H
#define AMLA_PROBLEM_H

/* Q [hq][sq][dk], K [hkv][sk][dk], V [hkv][sk][dv], O [hq][sq][dv]; query heads
 * h*hq/hkv .. (h+1)*hq/hkv-1 read KV head h (hq = G query heads, hkv = 1 for MLA). */
typedef struct {
    long hq, hkv, sq, sk, dk, dv;
    int causal; /* attn_causal_t: which keys query token t sees */
} attn_shape_t;

/* The causal mask's alignment: bottom-right (FlashAttention's and FlashMLA's, the lab's --causal: query
 * token t sees keys j <= t + (sk - sq)) or top-left (PyTorch SDPA's is_causal=True: j <= t). */
typedef enum { ATTN_CAUSAL_NONE = 0, ATTN_CAUSAL_BOTTOM_RIGHT = 1, ATTN_CAUSAL_TOP_LEFT = 2 } attn_causal_t;

/* The mask's name as --causal takes it and CSV / JSON record it: "no", "yes" (bottom-right), "top-left". */
const char *attn_causal_name(int causal);

typedef struct {
    attn_shape_t s;
    double *q, *k, *v; /* values already rounded to the input format */
    /* Sparse decoding (FlashMLA's FP8 sparse kernel, --load of kcache.npy): K holds the entry's valid
     * top-k keys in order, kpos[j] the slot of key j in the top-k list and kslots the slots the kernel
     * walks (a multiple of its 64-key block; absent slots are invalid indices). kv_fp8 (kvfp8_layout_t):
     * K and V are that FP8 cache as the kernel dequantized it (0: plain values). kpos NULL: dense. */
    long *kpos;
    long kslots;
    int kv_fp8;
    int v_of_k; /* 1: V is known to be K's first dv columns, row for row (MLA's one latent cache,
                   as generated); 0: not known (a variant that needs to know compares them) */
    /* FP8 codes with their descales (--load's q_scale.npy / q_descale.npy, likewise k and v): scale[x][h] the
     * factor of array x (0 q, 1 k, 2 v) for KV head h, already multiplied into q, k and v (the true inputs, which
     * Golden sees); a kernel that computes on the codes divides it out (exact). NULL: plain values. */
    double *scale[3];
    /* An attention sink per query head (FlashMLA's sparse prefill, attn_sink.npy): exp(sink[h]) joins the softmax's
     * denominator, not its log-sum-exp (natural-log logit units; -inf: none, +inf: O = 0). NULL: none. */
    double *sink;
} attn_input_t;

/* A batch of entries that share hq, hkv, sq, dk and dv, each with its own keys: what --load DIR
 * reads with DIR/seqlens.npy (FlashMLA's layout: q [B, Sq, Hq, Dk], k [B, Smax, Hkv, Dk]), or a
 * single entry (flashmla_layout 0). seqlens[i] = entry[i].s.sk. */
typedef struct {
    long n;
    attn_input_t *entry;
    long *seqlens;
    long smax;           /* the key rows of k.npy (>= every seqlen) */
    int flashmla_layout; /* outputs are dumped as [B, Sq, Hq, Dv] and LSE as [B, Hq, Sq] */
    /* A sparse batch (kcache.npy): sparse_sq > 0 query tokens per batch entry, entry b * sparse_sq + t
     * being token t of batch entry b (one query row per head, its own keys); sched_sk[b] the keys the
     * kernel's scheduler counts for batch entry b (top-k, or top-k length with 0 as 1). */
    long sparse_sq;
    long *sched_sk;
    /* A varlen batch (--load of cu_seqlens_q.npy: FlashAttention's packed layout, q [total_q, Hq, Dk]): entries of
     * their own query lengths, entry b being rows qoff[b] .. qoff[b + 1] - 1 of the packed queries. NULL: every
     * entry has entry[0].s.sq rows. */
    long *qoff;
    /* A batch of one query token an entry, whose outputs are laid out by token (the sparse prefill's out [s_q, h_q,
     * Dv], lse and max_logits [s_q, h_q]); max_logits: the kernel also returns each row's largest scaled score,
     * which the per-row arrays of a run carry as a second plane after the log-sum-exp's (attn_batch_row_planes). */
    int token_rows, max_logits;
} attn_batch_t;

/* The per-row planes of a batch's run: 1 (the log-sum-exp), or 2 with max_logits after it. */
static inline int attn_batch_row_planes(const attn_batch_t *bt)
{
    return bt && bt->max_logits ? 2 : 1;
}

/* The first query row of entry b (b = n: the batch's rows): an entry's outputs [hq][sq][dv] and log-sum-exp [hq][sq]
 * follow the earlier entries', at hq dv attn_batch_row(bt, b) and hq attn_batch_row(bt, b). */
long attn_batch_row(const attn_batch_t *bt, long b);

/* One KV-head group: R query rows against sk keys. limit[r] is the last key row r may see. */
typedef struct {
    long R, sk, dk, dv;
    const double *q, *k, *v; /* [R][dk], [sk][dk], [sk][dv] */
    const long *limit;
    const long *kpos; /* the input's sparse key slots (NULL: dense), kslots and kv_fp8 */
    long kslots;
    int kv_fp8;
    int v_of_k; /* attn_input_t's */
    double scale[3]; /* the group's descales of q, k and v (attn_input_t.scale); 0: none */
    const double *sink; /* row r's sink is sink[r / sq] (the group's heads' attn_input_t.sink); NULL: none */
    long sq;
} attn_group_t;

/* Build per-row key limits (causal or not) for one group; limit has R entries. */
void attn_row_limits(long *limit, const attn_shape_t *s);

/* Call fn(o_group, group, arg) for every KV-head group of the input. */
void attn_for_groups(double *o, const attn_input_t *in,
                     void (*fn)(double *, const attn_group_t *, void *), void *arg);

/* Whether V is K's first dv columns, row for row (v_of_k, or the arrays compared): MLA's one latent cache. */
int attn_v_is_k(const attn_input_t *in);

/* An input's arrays, and a batch's entries with its arrays, freed (the struct zeroed for a batch). */
void attn_input_free(attn_input_t *in);
void attn_batch_free(attn_batch_t *bt);

#endif
