/* prefill -- a sparse prefill case as --load reads it (FlashMLA's flash_mla_sparse_fwd, DeepSeek-V3.2's and V4's
 * DSA attention): q.npy, kv.npy, indices.npy and optionally topk_length.npy and attn_sink.npy, into a batch of one
 * entry per query token whose keys are the kv rows its valid indices name, each with the slot it holds in the
 * top-k list (the kernel masks invalid slots in place) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/gen.h"
#include "data/rows.h"

enum { PF_Q, PF_KV, PF_IDX, PF_LEN, PF_SINK, PF_N };
static const char *const pf_names[PF_N] = {"q.npy", "kv.npy", "indices.npy", "topk_length.npy", "attn_sink.npy"};

#define PF_HEADS 64    /* B_H: query heads per CTA (h_q a multiple of it) */
#define PF_BLOCK 64    /* B_TOPK: the top-k list's slots per block */
#define PF_DV 512      /* D_V: V is kv's first 512 dims */

/* Shapes and types: q [s_q, h_q, d_qk] and kv [s_kv, 1, d_qk] (d_qk 576 or 512), indices int32 [s_q, 1, topk] with
 * topk a multiple of 128, topk_length int32 [s_q] (0 .. topk), attn_sink float [h_q] (NaN refused). */
static int pf_check(const io_npy_t a[PF_N], const int have[PF_N], char path[PF_N][4096], err_t *e)
{
    char sh[128];
    io_npy_shape_text(sh, sizeof sh, &a[PF_Q]);
    if (a[PF_Q].ndim != 3 || (a[PF_Q].shape[2] != 576 && a[PF_Q].shape[2] != 512) || a[PF_Q].shape[0] < 1 ||
        a[PF_Q].shape[1] < PF_HEADS || a[PF_Q].shape[1] % PF_HEADS)
        return err_set(e, ERR_USAGE, "%s: shape %s, but the sparse prefill takes q [s_q, h_q, d_qk] with d_qk 576 "
                       "(V3.2) or 512 (V4) and h_q a multiple of %d", path[PF_Q], sh, PF_HEADS);
    long sq = a[PF_Q].shape[0], hq = a[PF_Q].shape[1], d = a[PF_Q].shape[2];
    io_npy_shape_text(sh, sizeof sh, &a[PF_KV]);
    if (a[PF_KV].ndim != 3 || a[PF_KV].shape[0] < 1 || a[PF_KV].shape[1] != 1 || a[PF_KV].shape[2] != d)
        return err_set(e, ERR_USAGE, "%s: shape %s, but it must be [s_kv, 1, %ld] (one KV head, q.npy's d_qk)",
                       path[PF_KV], sh, d);
    io_npy_shape_text(sh, sizeof sh, &a[PF_IDX]);
    if (!a[PF_IDX].integer || a[PF_IDX].ndim != 3 || a[PF_IDX].shape[0] != sq || a[PF_IDX].shape[1] != 1 ||
        a[PF_IDX].shape[2] < 2 * PF_BLOCK || a[PF_IDX].shape[2] % (2 * PF_BLOCK))
        return err_set(e, ERR_USAGE, "%s: shape %s%s, but it must be int32 [%ld, 1, topk] (q.npy's s_q) with topk a "
                       "multiple of %d", path[PF_IDX], sh, a[PF_IDX].integer ? "" : " of non-integers", sq,
                       2 * PF_BLOCK);
    long topk = a[PF_IDX].shape[2];
    io_npy_shape_text(sh, sizeof sh, &a[PF_LEN]);
    if (have[PF_LEN] && (!a[PF_LEN].integer || a[PF_LEN].ndim != 1 || a[PF_LEN].shape[0] != sq))
        return err_set(e, ERR_USAGE, "%s: shape %s%s, but it must be int32 [%ld] (q.npy's s_q)", path[PF_LEN], sh,
                       a[PF_LEN].integer ? "" : " of non-integers", sq);
    for (long t = 0; have[PF_LEN] && t < sq; t++)
        if (a[PF_LEN].data[t] < 0 || a[PF_LEN].data[t] > topk)
            return err_set(e, ERR_USAGE, "%s: topk_length[%ld] = %.0f is not 0 to topk %ld", path[PF_LEN], t,
                           a[PF_LEN].data[t], topk);
    io_npy_shape_text(sh, sizeof sh, &a[PF_SINK]);
    if (have[PF_SINK] && (a[PF_SINK].codes || a[PF_SINK].integer || a[PF_SINK].ndim != 1 || a[PF_SINK].shape[0] != hq))
        return err_set(e, ERR_USAGE, "%s: shape %s%s, but it must be float32 [%ld] (q.npy's h_q)", path[PF_SINK], sh,
                       a[PF_SINK].codes || a[PF_SINK].integer ? " of integers or codes" : "", hq);
    for (long h = 0; have[PF_SINK] && h < hq; h++)
        if (a[PF_SINK].data[h] != a[PF_SINK].data[h] || (float)a[PF_SINK].data[h] != a[PF_SINK].data[h])
            return err_set(e, ERR_USAGE, "%s: element %ld = %.9g is %s", path[PF_SINK], h, a[PF_SINK].data[h],
                           a[PF_SINK].data[h] != a[PF_SINK].data[h] ? "NaN (+-inf are the kernel's: no sink, or O = 0)"
                                                                    : "not a float32 value");
    return ERR_OK;
}

/* Query token t: its h_q rows, the kv rows its valid indices name (index >= 0 and < s_kv, slot < topk_length), each
 * key's slot, and the slots the kernel walks: its 64-slot blocks in pairs. */
static int pf_entry(attn_input_t *in, const io_npy_t a[PF_N], const int have[PF_N], long t, fmt_id_t f,
                    char path[PF_N][4096], err_t *e)
{
    long hq = a[PF_Q].shape[1], d = a[PF_Q].shape[2], skv = a[PF_KV].shape[0], topk = a[PF_IDX].shape[2];
    long len = have[PF_LEN] ? (long)a[PF_LEN].data[t] : topk, blocks = (len + PF_BLOCK - 1) / PF_BLOCK;
    const double *idx = a[PF_IDX].data + t * topk;
    long nk = 0;
    for (long j = 0; j < len; j++)
        nk += idx[j] >= 0 && idx[j] < skv;
    in->s = (attn_shape_t){hq, 1, 1, nk, d, PF_DV, 0};
    in->q = malloc(sizeof(double) * (size_t)(hq * d));
    in->k = malloc(sizeof(double) * (size_t)(nk > 0 ? nk * d : 1));
    in->v = malloc(sizeof(double) * (size_t)(nk > 0 ? nk * PF_DV : 1));
    in->kpos = malloc(sizeof(long) * (size_t)(nk > 0 ? nk : 1));
    in->sink = have[PF_SINK] ? malloc(sizeof(double) * (size_t)hq) : NULL;
    if (!in->q || !in->k || !in->v || !in->kpos || (have[PF_SINK] && !in->sink))
        return err_set(e, ERR_USAGE, "%s: the case does not fit in memory", path[PF_KV]);
    in->kslots = (blocks + 1) / 2 * 2 * PF_BLOCK;
    in->v_of_k = 1;
    int rc = gen_take_rows(in->q, &a[PF_Q], -1, t, 1, hq, d, d, f, path[PF_Q], e);
    for (long j = 0, r = 0; j < len && !rc; j++) {
        if (!(idx[j] >= 0 && idx[j] < skv))
            continue;
        rc = gen_take_rows(in->k + r * d, &a[PF_KV], -1, (long)idx[j], 1, 1, d, d, f, path[PF_KV], e);
        memcpy(in->v + r * PF_DV, in->k + r * d, sizeof(double) * PF_DV);
        in->kpos[r++] = j;
    }
    for (long h = 0; have[PF_SINK] && h < hq; h++)
        in->sink[h] = a[PF_SINK].data[h];
    return rc;
}

int gen_load_prefill(attn_batch_t *bt, const char *dir, fmt_id_t in_format, err_t *e)
{
    memset(bt, 0, sizeof *bt);
    char path[PF_N][4096];
    io_npy_t a[PF_N];
    int have[PF_N];
    memset(a, 0, sizeof a);
    struct stat st;
    for (int i = 0; i < PF_N; i++) {
        snprintf(path[i], sizeof path[i], "%s/%s", dir, pf_names[i]);
        have[i] = i < PF_LEN || lstat(path[i], &st) == 0;
    }
    int rc = ERR_OK;
    if (in_format != FMT_BF16)
        rc = err_set(e, ERR_USAGE, "--load %s: the sparse prefill reads bf16 q and kv (--in-format bf16, not %s)", dir,
                     fmt_table[in_format].name);
    for (int i = 0; i < PF_N && !rc; i++)
        if (have[i])
            rc = io_npy_read(&a[i], path[i], e);
    const char *const qkv[2] = {path[PF_Q], path[PF_KV]};
    for (int i = 0; i < 2 && !rc; i++) {
        rc = io_npy_decode(&a[i], FMT_BF16, qkv[i], "the sparse prefill's bf16 q and kv", e);
        if (!rc && a[i].integer)
            rc = err_set(e, ERR_USAGE, "%s holds integers: need bf16 values or bit patterns (uint16)", qkv[i]);
    }
    if (!rc)
        rc = pf_check(a, have, path, e);
    long sq = rc ? 0 : a[PF_Q].shape[0];
    if (!rc) {
        bt->n = sq;
        bt->entry = err_calloc((size_t)sq, sizeof(attn_input_t));
        bt->seqlens = err_malloc((size_t)sq, sizeof(long));
        bt->smax = a[PF_KV].shape[0];
        bt->token_rows = 1;
        bt->max_logits = 1;
    }
    for (long t = 0; t < sq && !rc; t++) {
        rc = pf_entry(&bt->entry[t], a, have, t, FMT_BF16, path, e);
        bt->seqlens[t] = bt->entry[t].s.sk;
    }
    for (int i = 0; i < PF_N; i++)
        io_npy_free(&a[i]);
    if (rc)
        attn_batch_free(bt);
    return rc;
}
