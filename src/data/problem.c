/* problem -- per-row key limits and the KV-head groups of an attention problem; freeing its inputs */
#include "data/problem.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"

const char *attn_causal_name(int causal)
{
    return causal == ATTN_CAUSAL_TOP_LEFT ? "top-left" : causal ? "yes" : "no";
}

/* a top-left row past the last key sees them all; a bottom-right row above the first key sees none (-1) */
void attn_row_limits(long *limit, const attn_shape_t *s)
{
    long rows = s->hq / s->hkv * s->sq;
    for (long r = 0; r < rows; r++) {
        long t = r % s->sq;
        long br = t + (s->sk - s->sq);
        limit[r] = s->causal == ATTN_CAUSAL_TOP_LEFT ? (t < s->sk - 1 ? t : s->sk - 1)
                   : s->causal                       ? (br < -1 ? -1 : br)
                                                     : s->sk - 1;
    }
}

void attn_for_groups(double *o, const attn_input_t *in,
                     void (*fn)(double *, const attn_group_t *, void *), void *arg)
{
    const attn_shape_t *s = &in->s;
    long rows = s->hq / s->hkv * s->sq;
    long *limit = err_malloc((size_t)rows, sizeof(long));
    attn_row_limits(limit, s);
    for (long h = 0; h < s->hkv; h++) {
        attn_group_t g = {rows, s->sk, s->dk, s->dv, in->q + h * rows * s->dk,
                          in->k + h * s->sk * s->dk, in->v + h * s->sk * s->dv, limit,
                          in->kpos, in->kslots, in->kv_fp8, in->v_of_k, {0, 0, 0},
                          in->sink ? in->sink + h * (s->hq / s->hkv) : NULL, s->sq};
        for (int x = 0; x < 3; x++)
            g.scale[x] = in->scale[x] ? in->scale[x][h] : 0;
        fn(o + h * rows * s->dv, &g, arg);
    }
    free(limit);
}

int attn_v_is_k(const attn_input_t *in)
{
    const attn_shape_t *s = &in->s;
    if (in->v_of_k)
        return 1;
    if (s->dv > s->dk)
        return 0;
    for (long i = 0; i < s->hkv * s->sk; i++)
        if (memcmp(in->v + i * s->dv, in->k + i * s->dk, sizeof(double) * (size_t)s->dv) != 0)
            return 0;
    return 1;
}

void attn_input_free(attn_input_t *in)
{
    free(in->q);
    free(in->k);
    free(in->v);
    free(in->kpos);
    free(in->sink);
    in->sink = NULL;
    for (int x = 0; x < 3; x++) {
        free(in->scale[x]);
        in->scale[x] = NULL;
    }
    in->q = in->k = in->v = NULL;
    in->kpos = NULL;
}

void attn_batch_free(attn_batch_t *bt)
{
    for (long i = 0; i < bt->n && bt->entry; i++)
        attn_input_free(&bt->entry[i]);
    free(bt->entry);
    free(bt->seqlens);
    free(bt->sched_sk);
    free(bt->qoff);
    memset(bt, 0, sizeof *bt);
}

long attn_batch_row(const attn_batch_t *bt, long b)
{
    return bt->qoff ? bt->qoff[b] : b * bt->entry[0].s.sq;
}
