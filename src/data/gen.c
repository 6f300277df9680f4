/* gen -- Gaussian, uniform and outlier inputs (GSL), and .npy loading */
#include "base/err.h"
#include "data/gen.h"
#include "data/rows.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>

#include "data/files.h"
#include "data/npy.h"

const gen_info_t gen_table[GEN_COUNT] = {
    {"normal", "N(mean, sigma^2) per entry (--mean, --sigma)"},
    {"uniform", "U(low, high) per entry (--low, --high)"},
    {"fa3-outlier", "FlashAttention-3's test inputs: N(0,1) + N(0,100) * Bernoulli(0.001)"},
    {"mla", "MLA-like latent cache: content near zero, RoPE dims wide with outlier tails (--layer-profile 1..8)"},
};

/* Default shape of the MLA-like cache (SnapMLA Figure 3's description: content concentrated
 * near zero, RoPE an order of magnitude wider with outlier tails). */






void gen_mla_default(gen_mla_t *m)
{
    *m = (gen_mla_t){GEN_MLA_ROPE_DIMS, GEN_MLA_ROPE_SCALE, GEN_MLA_OUTLIER_RATE, GEN_MLA_OUTLIER_SCALE,
                     GEN_MLA_TOKEN_SPREAD, 0};
}

/* Profile i = 1..8: RoPE range 4 sqrt(2)^(i-1) (4 .. 45), outlier rate 0.001 i, per-token
 * spread 0.2 + 0.1 i: deeper layers have wider RoPE tails and more varied tokens. */
void gen_mla_profile(gen_mla_t *m, int profile)
{
    gen_mla_default(m);
    m->profile = profile;
    m->rope_scale = 4.0 * pow(sqrt(2.0), profile - 1);
    m->outlier_rate = 0.001 * profile;
    m->token_spread = 0.2 + 0.1 * profile;
}

int gen_from_name(const char *name)
{
    for (int i = 0; i < GEN_COUNT; i++)
        if (strcmp(name, gen_table[i].name) == 0)
            return i;
    return -1;
}

uint64_t gen_stream_seed(uint64_t seed, long sample)
{
    fmt_rng_t r;
    fmt_rng_seed(&r, seed * 0x100000001B3ull + (uint64_t)sample);
    return fmt_rng_next(&r);
}

static double gen_draw(gsl_rng *r, const gen_cfg_t *c)
{
    switch (c->dist) {
    case GEN_NORMAL:
        return c->mean + gsl_ran_gaussian_ziggurat(r, c->sigma);
    case GEN_UNIFORM:
        return gsl_ran_flat(r, c->low, c->high);
    case GEN_FA3_OUTLIER: {
        double x = gsl_ran_gaussian_ziggurat(r, 1.0);
        if (gsl_rng_uniform(r) < GEN_FA3_OUTLIER_RATE)
            x += gsl_ran_gaussian_ziggurat(r, GEN_FA3_OUTLIER_SIGMA);
        return x;
    }
    default:
        abort();
    }
}

/* One [rows][d] tensor of the MLA-like cache: the last rope_dims columns are RoPE. */
static void gen_fill_mla(double *x, long rows, long d, gsl_rng *r, const gen_cfg_t *c)
{
    const gen_mla_t *m = &c->mla;
    long dc = d > m->rope_dims ? d - m->rope_dims : 0;
    double rs = m->rope_scale * c->sigma;
    for (long t = 0; t < rows; t++) {
        double mag = exp(m->token_spread * gsl_ran_gaussian_ziggurat(r, 1.0));
        for (long j = 0; j < d; j++) {
            double v;
            if (j < dc) {
                v = c->mean + mag * gsl_ran_gaussian_ziggurat(r, c->sigma);
            } else {
                v = gsl_ran_gaussian_ziggurat(r, rs);
                if (gsl_rng_uniform(r) < m->outlier_rate)
                    v += gsl_ran_gaussian_ziggurat(r, m->outlier_scale * rs);
            }
            x[t * d + j] = fmt_round(fmt_fp32(v), c->in_format, FMT_RNE, 0, NULL);
        }
    }
}

static void gen_fill(double *x, long n, gsl_rng *r, const gen_cfg_t *c)
{
    for (long i = 0; i < n; i++)
        x[i] = fmt_round(fmt_fp32(gen_draw(r, c)), c->in_format, FMT_RNE, 0, NULL);
}

/* V = the first dv columns of K, per KV head. */
static void gen_shared_v(attn_input_t *in)
{
    const attn_shape_t *s = &in->s;
    for (long i = 0; i < s->hkv * s->sk; i++)
        memcpy(in->v + i * s->dv, in->k + i * s->dk, sizeof(double) * (size_t)s->dv);
}

static double *gen_alloc(long n)
{
    return err_malloc((size_t)(n > 0 ? n : 1), sizeof(double));
}

static long gen_first_nonfinite(const double *x, long n);

int gen_sample(attn_input_t *in, const gen_cfg_t *cfg, uint64_t seed, long sample, err_t *e)
{
    const attn_shape_t *s = &in->s;
    long nq = s->hq * s->sq * s->dk, nk = s->hkv * s->sk * s->dk, nv = s->hkv * s->sk * s->dv;
    in->q = gen_alloc(nq);
    in->k = gen_alloc(nk);
    in->v = gen_alloc(nv);
    if (!in->q || !in->k || !in->v) {
        attn_input_free(in);
        return err_set(e, ERR_USAGE, "inputs of %ld values do not fit in memory", nq + nk + nv);
    }
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, (unsigned long)gen_stream_seed(seed, sample));
    if (cfg->dist == GEN_MLA) {
        gen_fill_mla(in->q, s->hq * s->sq, s->dk, r, cfg);
        gen_fill_mla(in->k, s->hkv * s->sk, s->dk, r, cfg);
    } else {
        gen_fill(in->q, nq, r, cfg);
        gen_fill(in->k, nk, r, cfg);
    }
    in->v_of_k = !cfg->kv_separate && s->dv <= s->dk;
    if (cfg->kv_separate && cfg->dist == GEN_MLA) { /* V as the cache's content: no RoPE columns */
        gen_cfg_t vc = *cfg;
        vc.mla.rope_dims = 0;
        gen_fill_mla(in->v, s->hkv * s->sk, s->dv, r, &vc);
    } else if (cfg->kv_separate) {
        gen_fill(in->v, nv, r, cfg);
    } else {
        gen_shared_v(in);
    }
    gsl_rng_free(r);
    /* a parameter can overflow the input format (--sigma 1e308, bounds of 1e39 in bf16): such
     * inputs are refused, not turned into NaN metrics */
    const double *arr[3] = {in->q, in->k, in->v};
    long n[3] = {nq, nk, nv};
    for (int i = 0; i < 3; i++) {
        long bad = gen_first_nonfinite(arr[i], n[i]);
        if (bad >= 0) {
            attn_input_free(in);
            return err_set(e, ERR_USAGE,
                           "the %s distribution's parameters overflow %s: element %ld of %c is not finite "
                           "(lower --mean, --sigma, --low/--high or the MLA scales)",
                           gen_table[cfg->dist].name, fmt_table[cfg->in_format].name, bad, "qkv"[i]);
        }
    }
    return ERR_OK;
}

/* Accept [H, S, D] or [S, D] (H = 1). */
static int gen_dims3(const io_npy_t *a, const char *path, long *h, long *s, long *d, err_t *e)
{
    if (a->ndim == 3) {
        *h = a->shape[0];
        *s = a->shape[1];
        *d = a->shape[2];
    } else if (a->ndim == 2) {
        *h = 1;
        *s = a->shape[0];
        *d = a->shape[1];
    } else {
        return err_set(e, ERR_USAGE, "%s: expected 2 or 3 dimensions, got %d", path, a->ndim);
    }
    if (*h <= 0 || *s <= 0 || *d <= 0)
        return err_set(e, ERR_USAGE, "%s: empty dimension in shape", path);
    return ERR_OK;
}

static int gen_check_finite(const io_npy_t *a, const char *path, err_t *e)
{
    for (long i = 0; i < a->n; i++)
        if (!isfinite(a->data[i]))
            return err_set(e, ERR_USAGE, "%s: element %ld is not finite", path, i);
    return ERR_OK;
}

/* The first element of x that is not finite, or -1. */
static long gen_first_nonfinite(const double *x, long n)
{
    for (long i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return i;
    return -1;
}

int gen_from_arrays(attn_input_t *in, io_npy_t a[3], const char *const path[3], int have_v, const fmt_id_t fmt[3],
                    long dv_req, err_t *e)
{
    int rc = gen_decode_inputs(a, path, have_v, fmt, e);
    for (int i = 0; i < 3 && !rc; i++)
        if (i < 2 || have_v)
            rc = gen_check_finite(&a[i], path[i], e);

    long hq = 0, sq = 0, dq = 0, hk = 0, sk = 0, dk = 0, hv = 0, sv = 0, dv = 0;
    if (!rc) {
        if (a[0].ndim == 2) { /* [Hq, Dk]: one query token per head */
            hq = a[0].shape[0];
            sq = 1;
            dq = a[0].shape[1];
            if (hq <= 0 || dq <= 0)
                rc = err_set(e, ERR_USAGE, "%s: empty dimension in shape", path[0]);
        } else {
            rc = gen_dims3(&a[0], path[0], &hq, &sq, &dq, e);
        }
    }
    if (!rc)
        rc = gen_dims3(&a[1], path[1], &hk, &sk, &dk, e);
    if (!rc && dq != dk)
        rc = err_set(e, ERR_USAGE, "%s: head dim %ld differs from %s's %ld", path[0], dq, path[1], dk);
    if (!rc && hq % hk != 0)
        rc = err_set(e, ERR_USAGE, "%s: %ld query heads is not a multiple of %ld KV heads", path[0], hq, hk);
    if (!rc && have_v) {
        rc = gen_dims3(&a[2], path[2], &hv, &sv, &dv, e);
        if (!rc && (hv != hk || sv != sk))
            rc = err_set(e, ERR_USAGE, "%s: shape [%ld, %ld, %ld] does not match k.npy's [%ld, %ld, .]",
                         path[2], hv, sv, dv, hk, sk);
    } else if (!rc) {
        dv = dv_req;
        if (dv <= 0 || dv > dk)
            rc = err_set(e, ERR_USAGE, "no v.npy, so V = K[..., :dv]: --dv %ld must be 1 to k.npy's head dim %ld",
                         dv, dk);
    }
    if (rc)
        return rc;
    in->s.hq = hq;
    in->s.hkv = hk;
    in->s.sq = sq;
    in->s.sk = sk;
    in->s.dk = dk;
    in->s.dv = dv;
    double *arr[3] = {a[0].data, a[1].data, have_v ? a[2].data : NULL};
    for (int i = 0; i < 3 && !rc; i++) {
        if (!arr[i])
            continue;
        fmt_round_array(arr[i], a[i].n, fmt[i]);
        long bad = gen_first_nonfinite(arr[i], a[i].n);
        if (bad >= 0)
            rc = err_set(e, ERR_USAGE, "%s: element %ld is not finite in %s (it lies beyond %g, the largest value)",
                         path[i], bad, fmt_table[fmt[i]].name, fmt_table[fmt[i]].max_finite);
    }
    if (rc)
        return rc;
    /* the arrays move into the input */
    in->q = a[0].data;
    in->k = a[1].data;
    a[0].data = a[1].data = NULL;
    if (have_v) {
        in->v = a[2].data;
        a[2].data = NULL;
    } else {
        in->v = gen_alloc(hk * sk * dv);
        gen_shared_v(in);
    }
    return ERR_OK;
}

/* The shape [B, S, H, D] of a batched array (H = 1 when it has 3 dimensions). */
static int gen_dims4(const io_npy_t *a, const char *path, long dim[4], int allow3, err_t *e)
{
    char sh[128];
    io_npy_shape_text(sh, sizeof sh, a);
    if (a->ndim == 4)
        memcpy(dim, a->shape, 4 * sizeof(long));
    else if (a->ndim == 3 && allow3)
        dim[0] = a->shape[0], dim[1] = a->shape[1], dim[2] = 1, dim[3] = a->shape[2];
    else
        return err_set(e, ERR_USAGE, "%s: shape %s, but with seqlens.npy it must be [B, %s, H, D]%s", path, sh,
                       allow3 ? "Smax" : "Sq", allow3 ? " or [B, Smax, D]" : "");
    for (int i = 0; i < 4; i++)
        if (dim[i] <= 0)
            return err_set(e, ERR_USAGE, "%s: empty dimension in shape %s", path, sh);
    return ERR_OK;
}

/* The batch in FlashMLA's layout: a = q, k, v (v only if have_v), sl = seqlens. */
static int gen_batch_from_arrays(attn_batch_t *bt, io_npy_t a[3], const io_npy_t *sl, const char *const path[4],
                                 int have_v, const fmt_id_t fmt[3], long dv_req, err_t *e)
{
    int rc = gen_decode_inputs(a, path, have_v, fmt, e);
    long q[4], k[4], v[4] = {0, 0, 0, 0};
    if (!rc)
        rc = gen_dims4(&a[0], path[0], q, 0, e);
    if (!rc)
        rc = gen_dims4(&a[1], path[1], k, 1, e);
    if (!rc && have_v)
        rc = gen_dims4(&a[2], path[2], v, 1, e);
    if (rc)
        return rc;
    long B = q[0], sq = q[1], hq = q[2], dk = q[3], smax = k[1], hkv = k[2], dv = have_v ? v[3] : dv_req;
    char sh[128];
    io_npy_shape_text(sh, sizeof sh, sl);
    if (sl->ndim != 1 || sl->shape[0] != B || !sl->integer)
        return err_set(e, ERR_USAGE, "%s: shape %s %s, but it must be int32 [%ld] (q.npy's batch)", path[3], sh,
                       sl->integer ? "of integers" : "of floats", B);
    if (k[0] != B)
        return err_set(e, ERR_USAGE, "%s: batch %ld differs from q.npy's %ld", path[1], k[0], B);
    if (k[3] != dk)
        return err_set(e, ERR_USAGE, "%s: head dim %ld differs from %s's %ld", path[0], dk, path[1], k[3]);
    if (hq % hkv != 0)
        return err_set(e, ERR_USAGE, "%s: %ld query heads is not a multiple of %ld KV heads", path[0], hq, hkv);
    if (have_v && (v[0] != B || v[1] != smax || v[2] != hkv))
        return err_set(e, ERR_USAGE, "%s: shape [%ld, %ld, %ld, %ld] does not match k.npy's [%ld, %ld, %ld, .]",
                       path[2], v[0], v[1], v[2], v[3], B, smax, hkv);
    if (!have_v && (dv <= 0 || dv > dk))
        return err_set(e, ERR_USAGE, "no v.npy, so V = K[..., :dv]: --dv %ld must be 1 to k.npy's head dim %ld", dv,
                       dk);
    for (long b = 0; b < B; b++)
        if (sl->data[b] < 0 || sl->data[b] > smax)
            return err_set(e, ERR_USAGE, "%s: seqlens[%ld] = %.0f is not 0 to k.npy's %ld key rows", path[3], b,
                           sl->data[b], smax);
    bt->n = B;
    bt->smax = smax;
    bt->flashmla_layout = 1;
    bt->entry = err_calloc((size_t)B, sizeof(attn_input_t));
    bt->seqlens = err_malloc((size_t)B, sizeof(long));
    for (long b = 0; b < B && !rc; b++) {
        long sk = (long)sl->data[b];
        attn_input_t *in = &bt->entry[b];
        in->s = (attn_shape_t){hq, hkv, sq, sk, dk, dv, 0};
        bt->seqlens[b] = sk;
        in->q = gen_alloc(hq * sq * dk);
        in->k = gen_alloc(hkv * sk * dk);
        in->v = gen_alloc(hkv * sk * dv);
        rc = gen_take_rows(in->q, &a[0], b, b * sq, sq, hq, dk, dk, fmt[0], path[0], e);
        if (!rc)
            rc = gen_take_rows(in->k, &a[1], b, b * smax, sk, hkv, dk, dk, fmt[1], path[1], e);
        if (!rc && have_v)
            rc = gen_take_rows(in->v, &a[2], b, b * smax, sk, hkv, dv, dv, fmt[2], path[2], e);
        else if (!rc)
            gen_shared_v(in);
    }
    if (rc)
        attn_batch_free(bt);
    return rc;
}

int gen_load(attn_batch_t *bt, const char *dir, fmt_id_t in_format, long dv_req, err_t *e)
{
    memset(bt, 0, sizeof *bt);
    char path[4][4096];
    io_npy_t a[3], sl;
    memset(a, 0, sizeof a);
    memset(&sl, 0, sizeof sl);
    const char *names[4] = {"q.npy", "k.npy", "v.npy", "seqlens.npy"};
    for (int i = 0; i < 4; i++)
        snprintf(path[i], sizeof path[i], "%s/%s", dir, names[i]);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return err_set(e, ERR_USAGE, "--load %s: %s", dir, stat(dir, &st) != 0 ? strerror(errno) : "not a directory");
    char cache[4096];
    snprintf(cache, sizeof cache, "%s/kcache.npy", dir);
    if (lstat(cache, &st) == 0) { /* FlashMLA's FP8 sparse-decode cache: its keys are the cache's, none other */
        for (int i = 1; i < 4; i++)
            if (lstat(path[i], &st) == 0)
                return err_set(e, ERR_USAGE, "--load %s: %s beside kcache.npy: a sparse FP8 case takes its keys from "
                               "the cache alone (one case a folder)", dir, names[i]);
        static const char *const scale_files[] = {"q_scale.npy", "q_descale.npy", "k_scale.npy", "k_descale.npy",
                                                  "v_scale.npy", "v_descale.npy"};
        for (size_t i = 0; i < sizeof scale_files / sizeof scale_files[0]; i++) {
            snprintf(path[1], sizeof path[1], "%s/%s", dir, scale_files[i]);
            if (lstat(path[1], &st) == 0)
                return err_set(e, ERR_USAGE, "--load %s: %s beside kcache.npy: a sparse FP8 cache holds its own "
                               "scales (and q.npy is bf16)", dir, scale_files[i]);
        }
        return gen_load_sparse(bt, dir, in_format, e);
    }
    snprintf(cache, sizeof cache, "%s/kv.npy", dir);
    if (lstat(cache, &st) == 0) { /* FlashMLA's sparse prefill: its keys are kv.npy's rows the indices name */
        for (int i = 1; i < 4; i++)
            if (lstat(path[i], &st) == 0)
                return err_set(e, ERR_USAGE, "--load %s: %s beside kv.npy: a sparse prefill case takes its keys and "
                               "values from kv.npy alone (one case a folder)", dir, names[i]);
        return gen_load_prefill(bt, dir, in_format, e);
    }
    char cu[2][4096];
    snprintf(cu[0], sizeof cu[0], "%s/cu_seqlens_q.npy", dir);
    snprintf(cu[1], sizeof cu[1], "%s/cu_seqlens_k.npy", dir);
    if (lstat(cu[0], &st) == 0) /* FlashAttention's varlen layout */
        return gen_load_varlen(bt, dir, in_format, e);
    if (lstat(cu[1], &st) == 0)
        return err_set(e, ERR_USAGE, "--load %s: cu_seqlens_k.npy without cu_seqlens_q.npy: FlashAttention's varlen "
                       "layout needs both", dir);
    int rc = io_npy_read(&a[0], path[0], e);
    if (!rc)
        rc = io_npy_read(&a[1], path[1], e);
    /* v.npy and seqlens.npy are optional: absent means V = K[..., :dv] and one entry in the lab's
     * layout; anything else under the name is read (and refused there if it is not a .npy file) */
    int have_v = lstat(path[2], &st) == 0, batched = lstat(path[3], &st) == 0;
    if (!rc && have_v)
        rc = io_npy_read(&a[2], path[2], e);
    if (!rc && batched)
        rc = io_npy_read(&sl, path[3], e);
    const char *const paths[4] = {path[0], path[1], path[2], path[3]};
    fmt_id_t fmt[3] = {in_format, in_format, in_format};
    if (!rc)
        rc = gen_scales_decode(a, fmt, dir, have_v, e);
    if (!rc && batched) {
        rc = gen_batch_from_arrays(bt, a, &sl, paths, have_v, fmt, dv_req, e);
    } else if (!rc) {
        bt->n = 1;
        bt->entry = err_calloc(1, sizeof(attn_input_t));
        bt->seqlens = err_malloc(1, sizeof(long));
        rc = gen_from_arrays(&bt->entry[0], a, paths, have_v, fmt, dv_req, e);
        if (rc) {
            attn_batch_free(bt);
        } else {
            bt->seqlens[0] = bt->smax = bt->entry[0].s.sk;
        }
    }
    if (!rc) {
        rc = gen_scales_apply(bt, dir, have_v, e);
        if (rc)
            attn_batch_free(bt);
    }
    for (int i = 0; i < 3; i++)
        io_npy_free(&a[i]);
    io_npy_free(&sl);
    return rc;
}
