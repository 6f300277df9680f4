/* scales -- FP8 codes with their descales in a --load folder: q_scale.npy (or q_descale.npy), likewise k and v,
 * float32 [1] (a per-tensor scale: vLLM's FP8 KV cache, FlashMLA's dense FP8 decode) or [B, Hkv] (per batch
 * entry and KV head: FlashAttention-3's descales). The arrays beside them are e4m3 codes whatever --in-format
 * says of the others; their values are multiplied by the scale (exact in binary64), so that Golden and every
 * variant see the true inputs, and the scales stay with the input for the kernels that compute on the codes. */
#include "data/gen.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mem.h"

static const char *const gen_scale_x[3] = {"q", "k", "v"};

int gen_scale_path(char *path, size_t n, const char *dir, int x)
{
    struct stat st;
    snprintf(path, n, "%s/%s_scale.npy", dir, gen_scale_x[x]);
    if (lstat(path, &st) == 0)
        return 1;
    snprintf(path, n, "%s/%s_descale.npy", dir, gen_scale_x[x]);
    return lstat(path, &st) == 0;
}

int gen_scales_decode(io_npy_t a[3], const char *dir, err_t *e)
{
    char path[4096];
    int rc = ERR_OK;
    for (int x = 0; x < 3 && !rc; x++)
        if (a[x].data && gen_scale_path(path, sizeof path, dir, x) && a[x].codes && a[x].elsize == 1)
            rc = io_npy_decode(&a[x], FMT_E4M3, path, "--in-format", e);
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
    char path[4096];
    const double *kscale_for_v = NULL;
    for (int x = 0; x < 3; x++) {
        int found = gen_scale_path(path, sizeof path, dir, x);
        if (!found && !(x == 2 && !have_v && kscale_for_v))
            continue;
        io_npy_t s;
        memset(&s, 0, sizeof s);
        long hkv = bt->entry[0].s.hkv, B = bt->n;
        if (found) {
            int rc = io_npy_read(&s, path, e);
            if (rc)
                return rc;
            int per_tensor = s.ndim == 1 && s.shape[0] == 1, per_head = s.ndim == 2 && s.shape[0] == B && s.shape[1] == hkv;
            if (s.codes || s.integer || !(per_tensor || per_head)) {
                char sh[64];
                io_npy_shape_text(sh, sizeof sh, &s);
                io_npy_free(&s);
                return err_set(e, ERR_USAGE, "%s: shape %s%s: a scale is float [1] (per tensor) or [%ld, %ld] (per batch "
                               "entry and KV head)", path, sh, s.codes || s.integer ? " of codes or integers" : "", B, hkv);
            }
            for (long i = 0; i < s.n; i++)
                if (!(s.data[i] > 0) || !isfinite(s.data[i])) {
                    double bad = s.data[i];
                    io_npy_free(&s);
                    return err_set(e, ERR_USAGE, "%s: element %ld is %g: a scale must be finite and positive", path, i, bad);
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
