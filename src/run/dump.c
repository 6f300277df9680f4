/* dump -- what --dump writes: the case's inputs in the layout it was read in (FP8 codes with their scales), each
 * output NAME.npy, its log-sum-exp NAME.lse.npy, and the intermediate arrays a variant hands out */
#include "run/dump.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/files.h"
#include "data/npy.h"

/* A batch array in FlashMLA's layout [B, S, H, D] (rows past each entry's s left zero) from the
 * entries' [H][s][D] arrays (which = 0, 1, 2: q, k, v; 3: the outputs o, one [H][sq][dv] per
 * entry at o + b per). */
static double *run_batch_array(const attn_batch_t *bt, int which, const double *o, long shape[4])
{
    const attn_shape_t *s0 = &bt->entry[0].s;
    long S = which == 0 || which == 3 ? s0->sq : bt->smax, H = which == 1 || which == 2 ? s0->hkv : s0->hq,
         D = which == 0 || which == 1 ? s0->dk : s0->dv;
    long dims[4] = {bt->n, S, H, D};
    memcpy(shape, dims, sizeof dims);
    double *x = err_calloc((size_t)(bt->n * S * H * D), sizeof(double));
    for (long b = 0; b < bt->n; b++) {
        const attn_input_t *in = &bt->entry[b];
        const double *src = which == 0 ? in->q : which == 1 ? in->k : which == 2 ? in->v : o + b * s0->hq * s0->sq * s0->dv;
        long s = which == 1 || which == 2 ? in->s.sk : S;
        for (long h = 0; h < H; h++)
            for (long j = 0; j < s; j++)
                memcpy(x + ((b * S + j) * H + h) * D, src + (h * s + j) * D, sizeof(double) * (size_t)D);
    }
    return x;
}

void run_extra_put(void *arg, const char *name, long d0, long d1, long i0, long i1, const double *x, long n)
{
    run_extra_t *ex = arg;
    int k = 0;
    while (k < ex->count && strcmp(ex->a[k].name, name) != 0)
        k++;
    if (k == ex->count) {
        if (k == RUN_EXTRA_MAX || strlen(name) >= sizeof ex->a[k].name)
            return;
        run_extra_arr_t *a = &ex->a[ex->count++];
        snprintf(a->name, sizeof a->name, "%s", name);
        a->d0 = d0;
        a->d1 = d1;
        a->n = n;
        a->x = err_malloc((size_t)(d0 * d1 * n), sizeof(double));
        for (long i = 0; i < d0 * d1 * n; i++)
            a->x[i] = NAN;
    }
    run_extra_arr_t *a = &ex->a[k];
    if (a->d0 == d0 && a->d1 == d1 && a->n == n && i0 >= 0 && i0 < d0 && i1 >= 0 && i1 < d1)
        memcpy(a->x + (i0 * d1 + i1) * n, x, sizeof(double) * (size_t)n);
}

void run_extra_free(run_extra_t *ex)
{
    for (int k = 0; k < ex->count; k++)
        free(ex->a[k].x);
    ex->count = 0;
}

/* Array which (0 q, 1 k, 2 v) of a case whose entries hold it as e4m3 codes times a scale (attn_input_t.scale): x, in
 * the dump's layout (shape: [B, S, H, D] in FlashMLA's, else [H, S, D]), written as its codes (x / scale, exact) to
 * path and the scale to DIR/NAME_scale.npy, float32 [1] where one scale serves every entry and head, else [B, Hkv],
 * so that the dump reloads as the same case. */
static int run_dump_codes(const run_cfg_t *c, const attn_batch_t *bt, int which, const double *x, const long *shape,
                          int ndim, const long *row_entry, const char *path, err_t *e)
{
    const attn_shape_t *s0 = &bt->entry[0].s;
    long H = ndim == 4 || row_entry ? shape[ndim - 2] : shape[0], D = shape[ndim - 1], rows = shape[1];
    long group = H / s0->hkv, n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    uint8_t *codes = err_malloc((size_t)n, 1);
    for (long i = 0; i < n; i++) {
        long b = ndim == 4 ? i / (rows * H * D) : 0, h = ndim == 4 ? i / D % H : i / (rows * D);
        if (row_entry) /* a packed [total, H, D] array: the row's entry */
            b = row_entry[i / (H * D)], h = i / D % H;
        codes[i] = (uint8_t)fmt_encode(x[i] / bt->entry[b].scale[which][h / group], FMT_E4M3, FMT_RNE, 0, NULL);
    }
    int rc = io_npy_write_uint(path, codes, 1, shape, ndim, e);
    free(codes);
    long nsc = bt->n * s0->hkv, one = 1;
    double *sc = err_malloc((size_t)nsc, sizeof(double));
    int same = 1;
    for (long b = 0; b < bt->n; b++)
        for (long h = 0; h < s0->hkv; h++) {
            sc[b * s0->hkv + h] = bt->entry[b].scale[which][h];
            same &= sc[b * s0->hkv + h] == sc[0];
        }
    char sp[4096];
    snprintf(sp, sizeof sp, "%s/%c_scale.npy", c->dump_dir, "qkv"[which]);
    long sshape[2] = {bt->n, s0->hkv};
    if (!rc)
        rc = io_npy_write(sp, sc, same ? &one : sshape, same ? 1 : 2, 1, e);
    free(sc);
    return rc;
}

/* --dump: q, k, v, each output NAME.npy and NAME.lse.npy for Golden and each variant that models
 * the kernel's log-sum-exp (lses[v] NULL or all NaN: none); one entry: [hq][sq][dk] ... and LSE
 * [hq][sq]; a batch read in FlashMLA's layout: that layout (and seqlens.npy), outputs [B, Sq, Hq,
 * Dv], LSE [B, Hq, Sq]. */
/* The intermediate arrays slot v's variant handed out, NAME.ARRAY.npy [d0, d1(, n)] whatever the case's layout. */
static int run_dump_extras(const run_cfg_t *c, int v, const run_extra_t *ex, err_t *e)
{
    char path[4096];
    int rc = ERR_OK;
    for (int k = 0; k < ex->count && !rc; k++) {
        const run_extra_arr_t *a = &ex->a[k];
        long shape[3] = {a->d0, a->d1, a->n};
        snprintf(path, sizeof path, "%s/%s.%s.npy", c->dump_dir, run_slot_name(c, v), a->name);
        rc = io_npy_write(path, a->x, shape, a->n > 1 ? 3 : 2, 0, e);
    }
    return rc;
}

/* A varlen batch's packed array which (0 q, 1 k, 2 v; 3: the outputs o) [total, H, D] from its entries' [H][s][D], and
 * (row_entry not NULL) each row's entry. */
static double *run_packed_array(const attn_batch_t *bt, int which, const double *o, long shape[3], long **row_entry)
{
    const attn_shape_t *s0 = &bt->entry[0].s;
    int kv = which == 1 || which == 2;
    long H = kv ? s0->hkv : s0->hq, D = which == 0 || which == 1 ? s0->dk : s0->dv, T = 0;
    for (long b = 0; b < bt->n; b++)
        T += kv ? bt->entry[b].s.sk : bt->entry[b].s.sq;
    shape[0] = T, shape[1] = H, shape[2] = D;
    double *x = err_calloc((size_t)(T * H * D > 0 ? T * H * D : 1), sizeof(double));
    if (row_entry)
        *row_entry = err_malloc((size_t)(T > 0 ? T : 1), sizeof(long));
    for (long b = 0, t0 = 0; b < bt->n; b++) {
        const attn_input_t *in = &bt->entry[b];
        const double *src = which == 0 ? in->q : which == 1 ? in->k : which == 2 ? in->v
                                                                     : o + attn_batch_row(bt, b) * s0->hq * s0->dv;
        long s = kv ? in->s.sk : in->s.sq;
        for (long h = 0; h < H; h++)
            for (long j = 0; j < s; j++)
                memcpy(x + ((t0 + j) * H + h) * D, src + (h * s + j) * D, sizeof(double) * (size_t)D);
        for (long j = 0; row_entry && j < s; j++)
            (*row_entry)[t0 + j] = b;
        t0 += s;
    }
    return x;
}

/* --dump of a varlen batch: FlashAttention's packed layout (q, k, v [total, H, D], cu_seqlens_q.npy and
 * cu_seqlens_k.npy), outputs [total_q, Hq, Dv] and log-sum-exps [Hq, total_q], as flash_attn_varlen_func returns them. */
static int run_dump_varlen(const run_cfg_t *c, const attn_batch_t *bt, double **outs, double **lses,
                           const run_extra_t *extras, err_t *e)
{
    const attn_shape_t *s0 = &bt->entry[0].s;
    char path[4096];
    int rc = io_ensure_dir(c->dump_dir, e);
    for (int i = 0; i < 3 && !rc; i++) {
        long shape[3], *row_entry = NULL;
        double *x = run_packed_array(bt, i, NULL, shape, bt->entry[0].scale[i] ? &row_entry : NULL);
        snprintf(path, sizeof path, "%s/%c.npy", c->dump_dir, "qkv"[i]);
        if (row_entry) /* FP8 codes with their scale: the same again */
            rc = run_dump_codes(c, bt, i, x, shape, 3, row_entry, path, e);
        else
            rc = io_npy_write(path, x, shape, 3, 0, e);
        free(x);
        free(row_entry);
    }
    long n1 = bt->n + 1;
    int32_t *cu = err_malloc((size_t)n1, sizeof(int32_t));
    for (int k = 0; k < 2 && !rc; k++) {
        cu[0] = 0;
        for (long b = 0; b < bt->n; b++)
            cu[b + 1] = cu[b] + (int32_t)(k ? bt->entry[b].s.sk : bt->entry[b].s.sq);
        snprintf(path, sizeof path, "%s/cu_seqlens_%c.npy", c->dump_dir, "qk"[k]);
        rc = io_npy_write_i32(path, cu, &n1, 1, e);
    }
    free(cu);
    long tq = attn_batch_row(bt, bt->n), nl = tq * s0->hq, lshape[2] = {s0->hq, tq};
    double *l = err_malloc((size_t)nl, sizeof(double));
    for (int v = 0; v <= c->nvariants && !rc; v++) {
        long shape[3];
        double *x = run_packed_array(bt, 3, outs[v], shape, NULL);
        snprintf(path, sizeof path, "%s/%s.npy", c->dump_dir, run_slot_name(c, v));
        rc = io_npy_write(path, x, shape, 3, 0, e);
        free(x);
        int any = 0;
        for (long b = 0; b < bt->n; b++) /* [rows of b][Hq][sq] -> [Hq, total_q] */
            for (long h = 0; h < s0->hq; h++)
                for (long t = 0, sq = bt->entry[b].s.sq, r = attn_batch_row(bt, b); t < sq; t++) {
                    l[h * tq + r + t] = lses[v][r * s0->hq + h * sq + t];
                    any |= l[h * tq + r + t] == l[h * tq + r + t];
                }
        snprintf(path, sizeof path, "%s/%s.lse.npy", c->dump_dir, run_slot_name(c, v));
        if (!rc && any)
            rc = io_npy_write(path, l, lshape, 2, 0, e);
        if (!rc)
            rc = run_dump_extras(c, v, &extras[v], e);
    }
    free(l);
    return rc;
}

/* A sparse prefill (one query token an entry): its inputs are the case's files; each variant's out [s_q, h_q, Dv],
 * lse and max_logits [s_q, h_q] as flash_mla_sparse_fwd returns them (NAME.npy, NAME.lse.npy, NAME.max_logits.npy;
 * the two row files where the variant has them). */
static int run_dump_tokens(const run_cfg_t *c, const attn_batch_t *bt, double **outs, double **lses,
                           const run_extra_t *extras, err_t *e)
{
    const attn_shape_t *s = &bt->entry[0].s;
    long nl = bt->n * s->hq, o3[3] = {bt->n, s->hq, s->dv}, l2[2] = {bt->n, s->hq};
    char path[4096];
    int rc = io_ensure_dir(c->dump_dir, e);
    for (int v = 0; v <= c->nvariants && !rc; v++) {
        snprintf(path, sizeof path, "%s/%s.npy", c->dump_dir, run_slot_name(c, v));
        rc = io_npy_write(path, outs[v], o3, 3, 0, e);
        for (int p = 0; p < attn_batch_row_planes(bt) && !rc; p++) {
            const double *x = lses[v] + p * nl;
            long i = 0;
            while (i < nl && x[i] != x[i])
                i++;
            snprintf(path, sizeof path, "%s/%s.%s.npy", c->dump_dir, run_slot_name(c, v), p ? "max_logits" : "lse");
            if (i < nl)
                rc = io_npy_write(path, x, l2, 2, 0, e);
        }
        if (!rc)
            rc = run_dump_extras(c, v, &extras[v], e);
    }
    return rc;
}

int run_dump(const run_cfg_t *c, const attn_batch_t *bt, double **outs, double **lses, const run_extra_t *extras,
             err_t *e)
{
    if (bt->qoff)
        return run_dump_varlen(c, bt, outs, lses, extras, e);
    if (bt->token_rows)
        return run_dump_tokens(c, bt, outs, lses, extras, e);
    const attn_shape_t *s = &bt->entry[0].s;
    long shapes[5][4] = {{s->hq, s->sq, s->dk}, {s->hkv, s->sk, s->dk}, {s->hkv, s->sk, s->dv}, {s->hq, s->sq, s->dv},
                         {bt->n, s->hq, s->sq}};
    int ndim = bt->flashmla_layout ? 4 : 3, lse_ndim = bt->flashmla_layout ? 3 : 2;
    long nl = bt->n * s->hq * s->sq;
    if (!bt->flashmla_layout)
        memmove(shapes[4], shapes[4] + 1, 2 * sizeof(long));
    char path[4096];
    int rc = io_ensure_dir(c->dump_dir, e);
    const char *names[3] = {"q", "k", "v"};
    /* a sparse batch (kcache.npy): its inputs are the case's files; outputs [B, Sq, Hq, Dv], LSE [B, Hq, Sq] */
    long sq = bt->sparse_sq, B = sq ? bt->n / sq : 0;
    if (sq) {
        long o4[4] = {B, sq, s->hq, s->dv}, l3[3] = {B, s->hq, sq};
        memcpy(shapes[3], o4, sizeof o4);
        memcpy(shapes[4], l3, sizeof l3);
    }
    for (int i = 0; i < 3 && !rc && !sq; i++) {
        snprintf(path, sizeof path, "%s/%s.npy", c->dump_dir, names[i]);
        const attn_input_t *in = &bt->entry[0];
        double *x = bt->flashmla_layout ? run_batch_array(bt, i, NULL, shapes[i]) : NULL;
        const double *a = x ? x : i == 0 ? in->q : i == 1 ? in->k : in->v;
        if (in->scale[i]) /* FP8 codes with their scale: the same again */
            rc = run_dump_codes(c, bt, i, a, shapes[i], ndim, NULL, path, e);
        else
            rc = io_npy_write(path, a, shapes[i], ndim, 0, e);
        free(x);
    }
    if (!rc && bt->flashmla_layout && !sq) {
        int32_t *sl = err_malloc((size_t)bt->n, sizeof(int32_t));
        for (long b = 0; b < bt->n; b++)
            sl[b] = (int32_t)bt->seqlens[b];
        snprintf(path, sizeof path, "%s/seqlens.npy", c->dump_dir);
        rc = io_npy_write_i32(path, sl, &bt->n, 1, e);
        free(sl);
    }
    for (int v = 0; v <= c->nvariants && !rc; v++) {
        snprintf(path, sizeof path, "%s/%s.npy", c->dump_dir, run_slot_name(c, v));
        if (sq) { /* entry b sq + t is [hq][dv]: already [B, Sq, Hq, Dv] */
            rc = io_npy_write(path, outs[v], shapes[3], 4, 0, e);
        } else if (bt->flashmla_layout) {
            double *x = run_batch_array(bt, 3, outs[v], shapes[3]);
            rc = io_npy_write(path, x, shapes[3], 4, 0, e);
            free(x);
        } else {
            rc = io_npy_write(path, outs[v], shapes[3], ndim, 0, e);
        }
        long i = 0;
        while (i < nl && lses[v][i] != lses[v][i])
            i++;
        if (!rc && i < nl) {
            snprintf(path, sizeof path, "%s/%s.lse.npy", c->dump_dir, run_slot_name(c, v));
            double *x = lses[v];
            if (sq) { /* [B Sq][Hq] -> [B, Hq, Sq] */
                x = err_malloc((size_t)nl, sizeof(double));
                for (long b = 0; b < B; b++)
                    for (long t = 0; t < sq; t++)
                        for (long h = 0; h < s->hq; h++)
                            x[(b * s->hq + h) * sq + t] = lses[v][(b * sq + t) * s->hq + h];
            }
            rc = io_npy_write(path, x, shapes[4], lse_ndim, 0, e);
            if (x != lses[v])
                free(x);
        }
        if (!rc)
            rc = run_dump_extras(c, v, &extras[v], e);
    }
    return rc;
}

