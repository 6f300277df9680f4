/* load -- an indexer case from the files DeepGEMM's kernels take (index.h), every shape and value checked */
#include "index/index.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mem.h"
#include "data/npy.h"

#define IDX_PAGE 64 /* the paged cache's tokens a block (block_kv on sm90) */

enum { F_Q, F_K, F_KS, F_W, F_KSTART, F_KEND, F_CACHE, F_LENS, F_TABLE, F_LOGITS, F_TOPK, F_N };
static const char *const idx_names[F_N] = {"q.npy", "k.npy", "k_scale.npy", "weights.npy", "ks.npy", "ke.npy",
                                           "kv_cache.npy", "context_lens.npy", "block_table.npy", "logits.npy",
                                           "topk.npy"};

static int idx_exists(const char *dir, const char *name)
{
    char p[4096];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return lstat(p, &st) == 0;
}

int idx_is_case(const char *dir)
{
    return idx_exists(dir, "weights.npy") && (idx_exists(dir, "k_scale.npy") || idx_exists(dir, "kv_cache.npy"));
}

long idx_krow(const idx_case_t *c, long i, long j)
{
    if (!c->paged)
        return j;
    return c->table[(i / c->next_n) * c->maxb + j / IDX_PAGE] * IDX_PAGE + j % IDX_PAGE;
}

/* a's shape is want[0..nd) (-1: any size), and a's kind: 'c' one-byte codes, 'f' float values, 'i' integers */
static int idx_shape(const io_npy_t *a, const char *path, int nd, const long *want, char kind, const char *what,
                     err_t *e)
{
    char sh[128];
    io_npy_shape_text(sh, sizeof sh, a);
    int ok = a->ndim == nd && (kind == 'c' ? a->codes && a->elsize == 1 : kind == 'i' ? a->integer : !a->codes && !a->integer);
    for (int d = 0; ok && d < nd; d++)
        ok = want[d] < 0 ? a->shape[d] > 0 : a->shape[d] == want[d];
    return ok ? ERR_OK : err_set(e, ERR_USAGE, "%s: shape %s%s, but it must be %s", path, sh,
                                 a->codes ? " of codes" : a->integer ? " of integers" : " of floats", what);
}

/* e4m3 codes into values (a NaN code refused, naming the element) */
static int idx_e4m3(double *dst, const double *codes, long n, const char *path, err_t *e)
{
    for (long i = 0; i < n; i++) {
        dst[i] = fmt_decode((uint32_t)codes[i], FMT_E4M3);
        if (dst[i] != dst[i])
            return err_set(e, ERR_USAGE, "%s: element %ld is an e4m3 NaN code (0x%02x)", path, i, (unsigned)codes[i]);
    }
    return ERR_OK;
}

/* n float32 values, finite (and positive for a scale) */
static int idx_floats(double *dst, const double *x, long n, int positive, const char *path, err_t *e)
{
    for (long i = 0; i < n; i++) {
        if (!isfinite(x[i]) || (positive && !(x[i] > 0)))
            return err_set(e, ERR_USAGE, "%s: element %ld = %.9g is not %s", path, i, x[i],
                           positive ? "a positive finite scale" : "finite");
        dst[i] = x[i];
    }
    return ERR_OK;
}

static int idx_load_prefill(idx_case_t *c, io_npy_t *a, char path[F_N][4096], err_t *e)
{
    long any3[3] = {-1, -1, -1};
    int rc = idx_shape(&a[F_Q], path[F_Q], 3, any3, 'c', "uint8 e4m3 codes [S, H, D]", e);
    c->S = rc ? 0 : a[F_Q].shape[0], c->H = rc ? 0 : a[F_Q].shape[1], c->D = rc ? 0 : a[F_Q].shape[2];
    long kw[2] = {-1, c->D}, sw[1] = {0}, ww[2] = {c->S, c->H}, kk[1] = {c->S};
    if (!rc)
        rc = idx_shape(&a[F_K], path[F_K], 2, kw, 'c', "uint8 e4m3 codes [Skv, D] (q.npy's D)", e);
    c->nrows = rc ? 0 : a[F_K].shape[0];
    sw[0] = c->nrows;
    if (!rc)
        rc = idx_shape(&a[F_KS], path[F_KS], 1, sw, 'f', "float32 [Skv] (k.npy's rows)", e);
    if (!rc)
        rc = idx_shape(&a[F_W], path[F_W], 2, ww, 'f', "float32 [S, H] (q.npy's S and H)", e);
    for (int f = F_KSTART; f <= F_KEND && !rc; f++)
        rc = idx_shape(&a[f], path[f], 1, kk, 'i', "int32 [S] (q.npy's S)", e);
    if (rc)
        return rc;
    c->k = err_malloc((size_t)(c->nrows * c->D), sizeof(double));
    c->kscale = err_malloc((size_t)c->nrows, sizeof(double));
    c->ks = err_malloc((size_t)c->S, sizeof(long));
    c->ke = err_malloc((size_t)c->S, sizeof(long));
    rc = idx_e4m3(c->k, a[F_K].data, c->nrows * c->D, path[F_K], e);
    if (!rc)
        rc = idx_floats(c->kscale, a[F_KS].data, c->nrows, 1, path[F_KS], e);
    for (long i = 0; i < c->S && !rc; i++) {
        c->ks[i] = (long)a[F_KSTART].data[i], c->ke[i] = (long)a[F_KEND].data[i];
        if (c->ks[i] < 0 || c->ke[i] > c->nrows || c->ks[i] > c->ke[i])
            rc = err_set(e, ERR_USAGE, "%s, %s: row %ld's keys [%ld, %ld) are not within 0 .. Skv %ld", path[F_KSTART],
                         path[F_KEND], i, c->ks[i], c->ke[i], c->nrows);
    }
    c->L = c->nrows;
    return rc;
}

static int idx_load_paged(idx_case_t *c, io_npy_t *a, char path[F_N][4096], err_t *e)
{
    long any4[4] = {-1, -1, -1, -1};
    int rc = idx_shape(&a[F_Q], path[F_Q], 4, any4, 'c', "uint8 e4m3 codes [B, next_n, H, D]", e);
    c->B = rc ? 0 : a[F_Q].shape[0], c->next_n = rc ? 0 : a[F_Q].shape[1];
    c->H = rc ? 0 : a[F_Q].shape[2], c->D = rc ? 0 : a[F_Q].shape[3], c->S = c->B * c->next_n;
    long cw[4] = {-1, IDX_PAGE, 1, c->D + 4}, ww[2] = {c->S, c->H}, lw[2] = {c->B, c->next_n}, tw[2] = {c->B, -1};
    if (!rc)
        rc = idx_shape(&a[F_CACHE], path[F_CACHE], 4, cw, 'c', "uint8 [blocks, 64, 1, D + 4] (q.npy's D)", e);
    if (!rc)
        rc = idx_shape(&a[F_W], path[F_W], 2, ww, 'f', "float32 [B next_n, H] (q.npy's)", e);
    if (!rc)
        rc = idx_shape(&a[F_LENS], path[F_LENS], 2, lw, 'i', "int32 [B, next_n] (q.npy's)", e);
    if (!rc)
        rc = idx_shape(&a[F_TABLE], path[F_TABLE], 2, tw, 'i', "int32 [B, max_blocks] (q.npy's B)", e);
    if (rc)
        return rc;
    long nb = a[F_CACHE].shape[0], D = c->D, bytes = IDX_PAGE * (D + 4);
    c->nrows = nb * IDX_PAGE, c->maxb = a[F_TABLE].shape[1];
    c->k = err_malloc((size_t)(c->nrows * D), sizeof(double));
    c->kscale = err_malloc((size_t)c->nrows, sizeof(double));
    c->table = err_malloc((size_t)(c->B * c->maxb), sizeof(long));
    c->ks = err_calloc((size_t)c->S, sizeof(long));
    c->ke = err_malloc((size_t)c->S, sizeof(long));
    /* a block: its 64 tokens' D codes, then their 64 float32 scales (little-endian bytes) */
    for (long b = 0; b < nb && !rc; b++) {
        const double *blk = a[F_CACHE].data + b * bytes;
        rc = idx_e4m3(c->k + b * IDX_PAGE * D, blk, IDX_PAGE * D, path[F_CACHE], e);
        for (long t = 0; t < IDX_PAGE && !rc; t++) {
            uint32_t u = 0;
            for (int byte = 0; byte < 4; byte++)
                u |= (uint32_t)blk[IDX_PAGE * D + 4 * t + byte] << (8 * byte);
            float f;
            memcpy(&f, &u, 4);
            c->kscale[b * IDX_PAGE + t] = f;
            if (!isfinite(f) || !(f > 0))
                rc = err_set(e, ERR_USAGE, "%s: block %ld token %ld's scale %.9g is not a positive finite float32",
                             path[F_CACHE], b, t, (double)f);
        }
    }
    for (long i = 0; i < c->B * c->maxb && !rc; i++)
        c->table[i] = (long)a[F_TABLE].data[i];
    for (long i = 0; i < c->S && !rc; i++) {
        c->ke[i] = (long)a[F_LENS].data[i];
        long blocks = (c->ke[i] + IDX_PAGE - 1) / IDX_PAGE;
        if (c->ke[i] < 0 || blocks > c->maxb)
            rc = err_set(e, ERR_USAGE, "%s: context length [%ld, %ld] = %ld is not 0 .. 64 x block_table's %ld blocks",
                         path[F_LENS], i / c->next_n, i % c->next_n, c->ke[i], c->maxb);
        for (long j = 0; j < blocks && !rc; j++) {
            long t = c->table[(i / c->next_n) * c->maxb + j];
            if (t < 0 || t >= nb)
                rc = err_set(e, ERR_USAGE, "%s: [%ld, %ld] = %ld is not a block of kv_cache.npy's %ld", path[F_TABLE],
                             i / c->next_n, j, t, nb);
        }
    }
    return rc;
}

/* logits.npy [S, L] (L at least every row's last valid position + 1; compressed prefill: max(ke - ks) <= L < Skv)
 * and topk.npy [S, K] */
static int idx_load_outputs(idx_case_t *c, io_npy_t *a, const int *have, char path[F_N][4096], err_t *e)
{
    long need = 0, span = 0;
    for (long i = 0; i < c->S; i++) {
        need = c->ke[i] > need ? c->ke[i] : need;
        span = c->ke[i] - c->ks[i] > span ? c->ke[i] - c->ks[i] : span;
    }
    int rc = ERR_OK;
    if (have[F_LOGITS]) {
        io_npy_t *l = &a[F_LOGITS];
        char sh[128];
        io_npy_shape_text(sh, sizeof sh, l);
        c->out = l->codes && l->elsize == 2 ? FMT_BF16 : FMT_FP32;
        if (l->ndim != 2 || l->shape[0] != c->S || l->integer || (l->codes && l->elsize != 2))
            return err_set(e, ERR_USAGE, "%s: shape %s, but it must be float32 or bf16 bits (uint16) [%ld, L]", path[F_LOGITS],
                           sh, c->S);
        c->L = l->shape[1];
        c->compressed = !c->paged && c->L != c->nrows;
        if ((c->compressed && c->L < span) || (!c->compressed && c->L < need))
            return err_set(e, ERR_USAGE, "%s: %ld columns, fewer than the %ld its rows' keys need", path[F_LOGITS],
                           c->L, c->compressed ? span : need);
        if (c->out == FMT_BF16 && (rc = io_npy_decode(l, FMT_BF16, path[F_LOGITS], "the logits' bf16", e)))
            return rc;
        c->logits = l->data;
        l->data = NULL;
    } else {
        c->L = c->paged ? need : c->nrows;
        c->out = FMT_FP32;
    }
    if (have[F_TOPK]) {
        io_npy_t *t = &a[F_TOPK];
        long want[2] = {c->S, -1};
        if ((rc = idx_shape(t, path[F_TOPK], 2, want, 'i', "int32 [S, K] (key positions)", e)))
            return rc;
        c->K = t->shape[1];
        c->topk = err_malloc((size_t)(c->S * c->K), sizeof(long));
        for (long i = 0; i < c->S * c->K; i++)
            c->topk[i] = (long)t->data[i];
    }
    return ERR_OK;
}

int idx_load(idx_case_t *c, const char *dir, err_t *e)
{
    memset(c, 0, sizeof *c);
    char path[F_N][4096];
    io_npy_t a[F_N];
    int have[F_N];
    memset(a, 0, sizeof a);
    for (int f = 0; f < F_N; f++) {
        snprintf(path[f], sizeof path[f], "%s/%s", dir, idx_names[f]);
        have[f] = idx_exists(dir, idx_names[f]);
    }
    c->paged = have[F_CACHE];
    static const int prefill[] = {F_Q, F_K, F_KS, F_W, F_KSTART, F_KEND}, paged[] = {F_Q, F_CACHE, F_W, F_LENS, F_TABLE};
    const int *need = c->paged ? paged : prefill;
    int nneed = c->paged ? 5 : 6, rc = ERR_OK;
    for (int i = 0; i < nneed && !rc; i++)
        if (!have[need[i]])
            rc = err_set(e, ERR_USAGE, "%s: missing (an indexer case %s)", path[need[i]],
                         c->paged ? "with kv_cache.npy needs q, weights, context_lens and block_table"
                                  : "needs q, k, k_scale, weights, ks and ke");
    for (int f = 0; f < F_N && !rc; f++)
        if (have[f])
            rc = io_npy_read(&a[f], path[f], e);
    if (!rc)
        rc = c->paged ? idx_load_paged(c, a, path, e) : idx_load_prefill(c, a, path, e);
    if (!rc) {
        c->q = err_malloc((size_t)(c->S * c->H * c->D), sizeof(double));
        c->w = err_malloc((size_t)(c->S * c->H), sizeof(double));
        rc = idx_e4m3(c->q, a[F_Q].data, c->S * c->H * c->D, path[F_Q], e);
    }
    if (!rc)
        rc = idx_floats(c->w, a[F_W].data, c->S * c->H, 0, path[F_W], e);
    if (!rc && (c->H % 8 || c->D % 32 || c->D > 256))
        rc = err_set(e, ERR_USAGE, "%s: %ld heads of %ld dims, but DeepGEMM's kernels take heads a multiple of 8 and "
                     "dims a multiple of 32 up to 256", path[F_Q], c->H, c->D);
    if (!rc)
        rc = idx_load_outputs(c, a, have, path, e);
    for (int f = 0; f < F_N; f++)
        io_npy_free(&a[f]);
    if (rc)
        idx_free(c);
    return rc;
}

void idx_free(idx_case_t *c)
{
    free(c->q), free(c->k), free(c->kscale), free(c->w), free(c->ks), free(c->ke), free(c->table);
    free(c->logits), free(c->topk);
    memset(c, 0, sizeof *c);
}
