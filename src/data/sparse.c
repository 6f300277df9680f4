/* sparse -- a sparse FP8 decoding case as --load reads it (FlashMLA's flash_mla_with_kvcache with
 * indices): q.npy, the cache's bytes kcache.npy, indices.npy and optionally topk_length.npy, into a batch
 * of one entry per query token whose keys are the cache rows its valid indices name, dequantized as the
 * kernel dequantizes them */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/gen.h"
#include "data/kvfp8.h"
#include "data/npy.h"

enum { SP_Q, SP_CACHE, SP_IDX, SP_LEN, SP_N };
static const char *const sp_names[SP_N] = {"q.npy", "kcache.npy", "indices.npy", "topk_length.npy"};

#define SP_BLOCK 64 /* TOPK_BLOCK_SIZE: the kernel walks the top-k list 64 slots at a time */

/* Shapes and types: q [B, Sq, Hq, d] bf16, kcache uint8 [blocks, page, 1, bytes], indices int32
 * [B, Sq, topk] with topk a multiple of 64, topk_length int32 [B] (MODEL1 only). */
static int sp_check_shapes(io_npy_t a[SP_N], int have_len, char path[SP_N][4096], kvfp8_layout_t *l, err_t *e)
{
    char sh[128];
    for (int i = 0; i < SP_N; i++)
        for (int d = 0; d < a[i].ndim && (i != SP_LEN || have_len); d++)
            if (a[i].shape[d] <= 0) {
                io_npy_shape_text(sh, sizeof sh, &a[i]);
                return err_set(e, ERR_USAGE, "%s: empty dimension in shape %s", path[i], sh);
            }
    io_npy_shape_text(sh, sizeof sh, &a[SP_CACHE]);
    if (!a[SP_CACHE].codes || a[SP_CACHE].elsize != 1 || a[SP_CACHE].ndim != 4 || a[SP_CACHE].shape[2] != 1)
        return err_set(e, ERR_USAGE, "%s: shape %s%s, but it must be uint8 [blocks, page, 1, bytes]", path[SP_CACHE],
                       sh, a[SP_CACHE].codes && a[SP_CACHE].elsize == 1 ? "" : " not of bytes");
    *l = kvfp8_layout_of_bytes(a[SP_CACHE].shape[3]);
    if (*l == KVFP8_NONE)
        return err_set(e, ERR_USAGE, "%s: %ld bytes a token is no FP8 cache layout (V32: 656, MODEL1: 584)",
                       path[SP_CACHE], a[SP_CACHE].shape[3]);
    const kvfp8_info_t *t = &kvfp8_table[*l];
    io_npy_shape_text(sh, sizeof sh, &a[SP_Q]);
    if (a[SP_Q].ndim != 4 || a[SP_Q].shape[3] != t->d)
        return err_set(e, ERR_USAGE, "%s: shape %s, but a %s cache needs q [B, Sq, Hq, %ld]", path[SP_Q], sh, t->name,
                       t->d);
    long B = a[SP_Q].shape[0], sq = a[SP_Q].shape[1];
    if (!a[SP_IDX].integer)
        return err_set(e, ERR_USAGE, "%s: %s, but indices are int32 cache rows (-1: invalid)", path[SP_IDX],
                       a[SP_IDX].codes ? "unsigned bytes or bit patterns" : "float values");
    if (have_len && !a[SP_LEN].integer)
        return err_set(e, ERR_USAGE, "%s: %s, but top-k lengths are int32", path[SP_LEN],
                       a[SP_LEN].codes ? "unsigned bytes or bit patterns" : "float values");
    io_npy_shape_text(sh, sizeof sh, &a[SP_IDX]);
    if (!a[SP_IDX].integer || a[SP_IDX].ndim != 3 || a[SP_IDX].shape[0] != B || a[SP_IDX].shape[1] != sq ||
        a[SP_IDX].shape[2] < SP_BLOCK || a[SP_IDX].shape[2] % SP_BLOCK)
        return err_set(e, ERR_USAGE, "%s: shape %s, but it must be int32 [%ld, %ld, topk] (q.npy's B and Sq) with "
                       "topk a multiple of %d", path[SP_IDX], sh, B, sq, SP_BLOCK);
    if (have_len && *l != KVFP8_MODEL1)
        return err_set(e, ERR_USAGE, "%s: the V32 kernel takes no top-k length (MODEL1's does)", path[SP_LEN]);
    io_npy_shape_text(sh, sizeof sh, &a[SP_LEN]);
    if (have_len && (!a[SP_LEN].integer || a[SP_LEN].ndim != 1 || a[SP_LEN].shape[0] != B))
        return err_set(e, ERR_USAGE, "%s: shape %s, but it must be int32 [%ld] (q.npy's batch)", path[SP_LEN], sh, B);
    for (long b = 0; have_len && b < B; b++)
        if (a[SP_LEN].data[b] < 0 || a[SP_LEN].data[b] > a[SP_IDX].shape[2])
            return err_set(e, ERR_USAGE, "%s: topk_length[%ld] = %.0f is not 0 to topk %ld", path[SP_LEN], b,
                           a[SP_LEN].data[b], a[SP_IDX].shape[2]);
    return ERR_OK;
}

/* Entry (b, t): its valid slots' cache rows dequantized into K (V = K's first 512 dims). */
static int sp_entry(attn_input_t *in, const io_npy_t a[SP_N], const unsigned char *cache, long b, long t, long len,
                    kvfp8_layout_t l, char path[SP_N][4096], err_t *e)
{
    const kvfp8_info_t *kt = &kvfp8_table[l];
    long sq = a[SP_Q].shape[1], hq = a[SP_Q].shape[2], topk = a[SP_IDX].shape[2];
    long page = a[SP_CACHE].shape[1], tokens = a[SP_CACHE].shape[0] * page, d = kt->d;
    const double *idx = a[SP_IDX].data + (b * sq + t) * topk;
    long nk = 0;
    for (long j = 0; j < len; j++)
        nk += idx[j] != -1;
    in->s = (attn_shape_t){hq, 1, 1, nk, d, KVFP8_DV, 0};
    in->q = malloc(sizeof(double) * (size_t)(hq * d));
    in->k = malloc(sizeof(double) * (size_t)(nk > 0 ? nk * d : 1));
    in->v = malloc(sizeof(double) * (size_t)(nk > 0 ? nk * KVFP8_DV : 1));
    in->kpos = malloc(sizeof(long) * (size_t)(nk > 0 ? nk : 1));
    if (!in->q || !in->k || !in->v || !in->kpos)
        return err_set(e, ERR_USAGE, "%s: the case does not fit in memory", path[SP_CACHE]);
    /* the slots the kernel walks: topk, or MODEL1's length rounded up to whole blocks (at least one) */
    in->kslots = len == topk ? topk : (len + SP_BLOCK - 1) / SP_BLOCK * SP_BLOCK;
    if (in->kslots < SP_BLOCK)
        in->kslots = SP_BLOCK;
    in->kv_fp8 = l;
    for (long h = 0; h < hq; h++)
        for (long c = 0; c < d; c++) {
            double x = a[SP_Q].data[((b * sq + t) * hq + h) * d + c];
            if (!isfinite(x))
                return err_set(e, ERR_USAGE, "%s: element [%ld, %ld, %ld, %ld] is not finite", path[SP_Q], b, t, h, c);
            in->q[h * d + c] = x;
        }
    for (long j = 0, r = 0; j < len; j++) {
        if (idx[j] == -1)
            continue;
        if (idx[j] < 0 || idx[j] >= tokens)
            return err_set(e, ERR_USAGE, "%s: index [%ld, %ld, %ld] = %.0f is past the cache's %ld tokens", path[SP_IDX],
                           b, t, j, idx[j], tokens);
        long tok = (long)idx[j];
        char why[128];
        if (kvfp8_dequant_token(in->k + r * d, cache + tok / page * page * kt->bytes, page, tok % page, l, why,
                                sizeof why))
            return err_set(e, ERR_USAGE, "%s: token %ld (index [%ld, %ld, %ld]): %s", path[SP_CACHE], tok, b, t, j, why);
        memcpy(in->v + r * KVFP8_DV, in->k + r * d, sizeof(double) * KVFP8_DV);
        in->kpos[r++] = j;
    }
    return ERR_OK;
}

int gen_load_sparse(attn_batch_t *bt, const char *dir, fmt_id_t in_format, err_t *e)
{
    memset(bt, 0, sizeof *bt);
    char path[SP_N][4096];
    io_npy_t a[SP_N];
    memset(a, 0, sizeof a);
    for (int i = 0; i < SP_N; i++)
        snprintf(path[i], sizeof path[i], "%s/%s", dir, sp_names[i]);
    struct stat st;
    int have_len = lstat(path[SP_LEN], &st) == 0, rc = ERR_OK;
    if (in_format != FMT_BF16)
        rc = err_set(e, ERR_USAGE, "--load %s: an FP8 sparse cache is read with bf16 q (--in-format bf16, not %s)", dir,
                     fmt_table[in_format].name);
    for (int i = 0; i < SP_N && !rc; i++)
        if (i != SP_LEN || have_len)
            rc = io_npy_read(&a[i], path[i], e);
    if (!rc && a[SP_Q].codes)
        rc = io_npy_decode(&a[SP_Q], FMT_BF16, path[SP_Q], "the sparse kernel's bf16 q", e);
    else if (!rc && !a[SP_Q].integer) /* float values: each must be a bf16 value */
        for (long i = 0; i < a[SP_Q].n && !rc; i++)
            if (isfinite(a[SP_Q].data[i]) && fmt_round(a[SP_Q].data[i], FMT_BF16, FMT_RNE, 0, NULL) != a[SP_Q].data[i])
                rc = err_set(e, ERR_USAGE, "%s: element %ld = %.9g is not a bf16 value", path[SP_Q], i, a[SP_Q].data[i]);
    if (!rc && a[SP_Q].integer)
        rc = err_set(e, ERR_USAGE, "%s: integers are neither float values nor bf16 codes (uint16)", path[SP_Q]);
    kvfp8_layout_t l = KVFP8_NONE;
    if (!rc)
        rc = sp_check_shapes(a, have_len, path, &l, e);
    unsigned char *cache = NULL;
    if (!rc) {
        cache = malloc((size_t)a[SP_CACHE].n);
        if (!cache)
            rc = err_set(e, ERR_USAGE, "%s: the cache does not fit in memory", path[SP_CACHE]);
        for (long i = 0; cache && i < a[SP_CACHE].n; i++)
            cache[i] = (unsigned char)a[SP_CACHE].data[i];
    }
    long B = rc ? 0 : a[SP_Q].shape[0], sq = rc ? 0 : a[SP_Q].shape[1], topk = rc ? 0 : a[SP_IDX].shape[2];
    if (!rc) {
        bt->n = B * sq;
        bt->entry = err_calloc((size_t)bt->n, sizeof(attn_input_t));
        bt->seqlens = err_malloc((size_t)bt->n, sizeof(long));
        bt->sched_sk = err_malloc((size_t)B, sizeof(long));
        bt->flashmla_layout = 1;
        bt->sparse_sq = sq;
    }
    for (long b = 0; b < B && !rc; b++) {
        long len = have_len ? (long)a[SP_LEN].data[b] : topk;
        bt->sched_sk[b] = len > 0 ? len : 1; /* get_decoding_sched_meta: an empty entry still has one block */
        for (long t = 0; t < sq && !rc; t++) {
            rc = sp_entry(&bt->entry[b * sq + t], a, cache, b, t, len, l, path, e);
            bt->seqlens[b * sq + t] = bt->entry[b * sq + t].s.sk;
            bt->smax = bt->smax > bt->entry[b * sq + t].s.sk ? bt->smax : bt->entry[b * sq + t].s.sk;
        }
    }
    free(cache);
    for (int i = 0; i < SP_N; i++)
        io_npy_free(&a[i]);
    if (rc)
        attn_batch_free(bt);
    return rc;
}
