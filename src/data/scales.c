/* scales -- FP8 codes with their descales in a --load folder: q_scale.npy (or q_descale.npy), likewise k and v,
 * float32 [1] (a per-tensor scale: vLLM's FP8 KV cache, FlashMLA's dense FP8 decode) or [B, Hkv] (per batch
 * entry and KV head: FlashAttention-3's descales). The arrays beside them are e4m3 codes whatever --in-format
 * says of the others; their values are multiplied by the scale (exact in binary64), so that Golden and every
 * variant see the true inputs, and the scales stay with the input for the kernels that compute on the codes. */
#include "data/gen.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mem.h"

static const char *const gen_scale_x[3] = {"q", "k", "v"};

/* The scale files of array x that exist (x_scale.npy, x_descale.npy): their count, the first's path in path. */
static int gen_scale_files(char *path, size_t n, char *other, size_t on, const char *dir, int x)
{
    struct stat st;
    int found = 0;
    snprintf(path, n, "%s/%s_scale.npy", dir, gen_scale_x[x]);
    found += lstat(path, &st) == 0;
    snprintf(other, on, "%s/%s_descale.npy", dir, gen_scale_x[x]);
    if (lstat(other, &st) == 0) {
        if (!found)
            snprintf(path, n, "%s", other);
        found++;
    }
    return found;
}

int gen_scales_decode(io_npy_t a[3], fmt_id_t fmt[3], const char *dir, int have_v, err_t *e)
{
    char path[4096], other[4096];
    int rc = ERR_OK;
    for (int x = 0; x < 3 && !rc; x++) {
        if (!gen_scale_files(path, sizeof path, other, sizeof other, dir, x))
            continue;
        const char *nm = gen_scale_x[x];
        if (x == 2 && !have_v)
            return err_set(e, ERR_USAGE, "%s: no v.npy beside it, so V is K's first dv columns and keeps k's scale; "
                                         "remove it (or add v.npy)", path);
        if (!(a[x].codes && a[x].elsize == 1))
            return err_set(e, ERR_USAGE, "%s beside %s.npy of %s: a scale goes with e4m3 codes (uint8)", path, nm,
                           a[x].codes ? "two-byte codes" : a[x].integer ? "integers" : "floating-point values");
        rc = io_npy_decode(&a[x], FMT_E4M3, path, "--in-format", e);
        fmt[x] = FMT_E4M3;
    }
    return rc;
}

/* Scale file path's array, checked: float [1] or [B, hkv], every element a finite positive normal float32 (what
 * the kernels take; a float64 beyond float32, or one that rounds to another float32, is not the kernel's scale). */
static int gen_scale_read(io_npy_t *s, const char *path, long B, long hkv, err_t *e)
{
    int rc = io_npy_read(s, path, e);
    if (rc)
        return rc;
    int per_tensor = s->ndim == 1 && s->shape[0] == 1, per_head = s->ndim == 2 && s->shape[0] == B && s->shape[1] == hkv;
    if (s->codes || s->integer || !(per_tensor || per_head)) {
        char sh[64];
        io_npy_shape_text(sh, sizeof sh, s);
        rc = err_set(e, ERR_USAGE, "%s: shape %s%s: a scale is float [1] (per tensor) or [%ld, %ld] (per batch entry "
                     "and KV head)", path, sh, s->codes || s->integer ? " of codes or integers" : "", B, hkv);
    }
    for (long i = 0; i < s->n && !rc; i++) {
        double v = s->data[i];
        if (!(v > 0) || !isfinite(v))
            rc = err_set(e, ERR_USAGE, "%s: element %ld is %g: a scale must be finite and positive", path, i, v);
        else if (v > FLT_MAX || (double)(float)v != v)
            rc = err_set(e, ERR_USAGE, "%s: element %ld is %.17g, not a float32 (the kernels take float32 scales)",
                         path, i, v);
        else if (v < FLT_MIN)
            rc = err_set(e, ERR_USAGE, "%s: element %ld is %g, subnormal in float32 (a fast-math kernel flushes it to "
                         "0)", path, i, v);
    }
    if (rc)
        io_npy_free(s);
    return rc;
}

/* one entry's array x ([heads][rows][d], heads = hkv * group) times scale[h] of its KV head */
static void gen_scale_rows(double *a, long heads, long per_head, long group, const double *scale)
{
    for (long h = 0; h < heads; h++)
        for (long i = 0; i < per_head; i++)
            a[h * per_head + i] *= scale[h / group];
}

int gen_scales_apply(attn_batch_t *bt, const char *dir, int have_v, err_t *e)
{
    char path[4096], other[4096];
    const double *kscale_for_v = NULL;
    for (int x = 0; x < 3; x++) {
        int found = gen_scale_files(path, sizeof path, other, sizeof other, dir, x);
        if (!found && !(x == 2 && !have_v && kscale_for_v))
            continue;
        io_npy_t s;
        memset(&s, 0, sizeof s);
        long hkv = bt->entry[0].s.hkv, B = bt->n;
        if (found) {
            int rc = gen_scale_read(&s, path, B, hkv, e);
            if (rc)
                return rc;
        }
        if (found == 2) { /* x_scale.npy and x_descale.npy: one scale, so the same one */
            io_npy_t t;
            int rc = gen_scale_read(&t, other, B, hkv, e);
            if (rc) {
                io_npy_free(&s);
                return rc;
            }
            int same = t.ndim == s.ndim && t.n == s.n;
            for (long i = 0; same && i < s.n; i++)
                same = t.data[i] == s.data[i];
            io_npy_free(&t);
            if (!same) {
                io_npy_free(&s);
                return err_set(e, ERR_USAGE, "%s and %s differ: one array has one scale (keep one of the files)", path,
                               other);
            }
        }
        for (long b = 0; b < B; b++) {
            attn_input_t *in = &bt->entry[b];
            double *sc = err_malloc((size_t)hkv, sizeof(double));
            for (long h = 0; h < hkv; h++)
                sc[h] = found ? s.data[s.n == 1 ? 0 : b * hkv + h] : bt->entry[b].scale[1][h]; /* V read from K */
            const attn_shape_t *sh = &in->s;
            if (x == 0)
                gen_scale_rows(in->q, sh->hq, sh->sq * sh->dk, sh->hq / hkv, sc);
            else if (x == 1)
                gen_scale_rows(in->k, hkv, sh->sk * sh->dk, 1, sc);
            else
                gen_scale_rows(in->v, hkv, sh->sk * sh->dv, 1, sc);
            in->scale[x] = sc;
        }
        if (x == 1)
            kscale_for_v = bt->entry[0].scale[1];
        io_npy_free(&s);
    }
    return ERR_OK;
}
