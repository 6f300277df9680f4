/* varlen -- a batch in FlashAttention's varlen layout (flash_attn_varlen_func's arguments): every sequence's
 * queries and keys packed along the first dimension and cut by cu_seqlens_q / cu_seqlens_k, each sequence of its
 * own query and key length */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "data/gen.h"
#include "data/rows.h"

/* cu (the values of an int32 [B + 1] file at path): from 0, never decreasing, ending at rows (the packed array's
 * first dimension, named by what). */
static int varlen_check_cu(const io_npy_t *cu, const char *path, long B, long rows, const char *what, err_t *e)
{
    char sh[128];
    io_npy_shape_text(sh, sizeof sh, cu);
    if (!cu->integer || cu->ndim != 1 || cu->shape[0] < 2 || (B > 0 && cu->shape[0] != B + 1))
        return err_set(e, ERR_USAGE, "%s: shape %s %s, but it must be int32 [B + 1]%s", path, sh,
                       cu->integer ? "of integers" : "of floats", B > 0 ? " (as cu_seqlens_q.npy)" : "");
    if (cu->data[0] != 0)
        return err_set(e, ERR_USAGE, "%s: starts at %.0f, not 0", path, cu->data[0]);
    for (long b = 0; b + 1 < cu->shape[0]; b++)
        if (cu->data[b + 1] < cu->data[b])
            return err_set(e, ERR_USAGE, "%s: [%ld] = %.0f is below [%ld] = %.0f", path, b + 1, cu->data[b + 1], b,
                           cu->data[b]);
    if (cu->data[cu->shape[0] - 1] != rows)
        return err_set(e, ERR_USAGE, "%s: ends at %.0f, but %s has %ld rows", path, cu->data[cu->shape[0] - 1], what,
                       rows);
    return ERR_OK;
}

/* The packed arrays a (q, k, v) cut into the batch's entries by the cumulative lengths cq and ck. */
static int varlen_entries(attn_batch_t *bt, io_npy_t a[3], const io_npy_t *cq, const io_npy_t *ck,
                          const char *const path[5], const fmt_id_t fmt[3], err_t *e)
{
    long B = cq->shape[0] - 1, hq = a[0].shape[1], dk = a[0].shape[2], hkv = a[1].shape[1], dv = a[2].shape[2];
    bt->n = B;
    bt->entry = err_calloc((size_t)B, sizeof(attn_input_t));
    bt->seqlens = err_malloc((size_t)B, sizeof(long));
    bt->qoff = err_malloc((size_t)B + 1, sizeof(long));
    bt->qoff[0] = 0;
    int rc = ERR_OK;
    for (long b = 0; b < B && !rc; b++) {
        long q0 = (long)cq->data[b], sq = (long)cq->data[b + 1] - q0, k0 = (long)ck->data[b];
        long sk = (long)ck->data[b + 1] - k0;
        if (sq == 0)
            return err_set(e, ERR_USAGE, "%s: sequence %ld has no query token (cu_seqlens_q[%ld] = [%ld])", path[3], b,
                           b, b + 1);
        attn_input_t *in = &bt->entry[b];
        in->s = (attn_shape_t){hq, hkv, sq, sk, dk, dv, 0};
        bt->seqlens[b] = sk;
        bt->smax = sk > bt->smax ? sk : bt->smax;
        bt->qoff[b + 1] = q0 + sq;
        in->q = err_malloc((size_t)(hq * sq * dk), sizeof(double));
        in->k = err_malloc((size_t)(sk > 0 ? hkv * sk * dk : 1), sizeof(double));
        in->v = err_malloc((size_t)(sk > 0 ? hkv * sk * dv : 1), sizeof(double));
        rc = gen_take_rows(in->q, &a[0], -1, q0, sq, hq, dk, dk, fmt[0], path[0], e);
        if (!rc)
            rc = gen_take_rows(in->k, &a[1], -1, k0, sk, hkv, dk, dk, fmt[1], path[1], e);
        if (!rc)
            rc = gen_take_rows(in->v, &a[2], -1, k0, sk, hkv, dv, dv, fmt[2], path[2], e);
    }
    return rc;
}

int gen_load_varlen(attn_batch_t *bt, const char *dir, fmt_id_t in_format, err_t *e)
{
    static const char *const names[5] = {"q.npy", "k.npy", "v.npy", "cu_seqlens_q.npy", "cu_seqlens_k.npy"};
    char path[5][4096];
    const char *paths[5];
    for (int i = 0; i < 5; i++) {
        snprintf(path[i], sizeof path[i], "%s/%s", dir, names[i]);
        paths[i] = path[i];
    }
    struct stat st;
    char other[4096];
    snprintf(other, sizeof other, "%s/seqlens.npy", dir);
    if (lstat(other, &st) == 0)
        return err_set(e, ERR_USAGE, "--load %s: seqlens.npy beside cu_seqlens_q.npy: a case is either FlashMLA's "
                       "batch or FlashAttention's varlen layout", dir);
    for (int i = 2; i < 5; i++)
        if (lstat(path[i], &st) != 0)
            return err_set(e, ERR_USAGE, "--load %s: %s is missing: FlashAttention's varlen layout needs q.npy, k.npy, "
                           "v.npy, cu_seqlens_q.npy and cu_seqlens_k.npy", dir, names[i]);
    io_npy_t a[5];
    memset(a, 0, sizeof a);
    int rc = ERR_OK;
    for (int i = 0; i < 5 && !rc; i++)
        rc = io_npy_read(&a[i], path[i], e);
    fmt_id_t fmt[3] = {in_format, in_format, in_format};
    if (!rc)
        rc = gen_scales_decode(a, fmt, dir, 1, e);
    if (!rc)
        rc = gen_decode_inputs(a, paths, 1, fmt, e);
    for (int i = 0; i < 3 && !rc; i++) {
        char sh[128];
        io_npy_shape_text(sh, sizeof sh, &a[i]);
        if (a[i].ndim != 3 || a[i].shape[1] <= 0 || a[i].shape[2] <= 0)
            rc = err_set(e, ERR_USAGE, "%s: shape %s, but beside cu_seqlens_q.npy it must be [total, %s, D]", path[i],
                         sh, i ? "Hkv" : "Hq");
    }
    if (!rc && (a[1].shape[2] != a[0].shape[2]))
        rc = err_set(e, ERR_USAGE, "%s: head dim %ld differs from q.npy's %ld", path[1], a[1].shape[2], a[0].shape[2]);
    if (!rc && (a[2].shape[0] != a[1].shape[0] || a[2].shape[1] != a[1].shape[1]))
        rc = err_set(e, ERR_USAGE, "%s: %ld rows of %ld heads, but k.npy has %ld of %ld", path[2], a[2].shape[0],
                     a[2].shape[1], a[1].shape[0], a[1].shape[1]);
    if (!rc && a[0].shape[1] % a[1].shape[1] != 0)
        rc = err_set(e, ERR_USAGE, "%s: %ld query heads is not a multiple of %ld KV heads", path[0], a[0].shape[1],
                     a[1].shape[1]);
    if (!rc)
        rc = varlen_check_cu(&a[3], path[3], 0, a[0].shape[0], "q.npy", e);
    if (!rc)
        rc = varlen_check_cu(&a[4], path[4], a[3].shape[0] - 1, a[1].shape[0], "k.npy", e);
    if (!rc)
        rc = varlen_entries(bt, a, &a[3], &a[4], paths, fmt, e);
    if (!rc)
        rc = gen_scales_apply(bt, dir, 1, e);
    if (rc)
        attn_batch_free(bt);
    for (int i = 0; i < 5; i++)
        io_npy_free(&a[i]);
    return rc;
}
