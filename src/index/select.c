/* select -- what a top-K of a row's logits keeps, against the top-K of its exact logits (index.h) */
#include "index/index.h"

#include <math.h>
#include <stdlib.h>

#include "base/mem.h"

typedef struct {
    double v;
    long col;
} idx_item_t;

/* larger first; a tie to the lower position */
static int idx_desc(const void *a, const void *b)
{
    const idx_item_t *x = a, *y = b;
    if (x->v != y->v)
        return x->v > y->v ? -1 : 1;
    return x->col < y->col ? -1 : x->col > y->col;
}

void idx_select(const idx_case_t *c, const double *x, const double *g, long i, long K, idx_sel_t *s)
{
    const double *xr = x + i * c->L, *gr = g + i * c->L;
    idx_item_t *it = err_malloc((size_t)(c->L > 0 ? c->L : 1), sizeof *it);
    long *sel = err_malloc((size_t)(K > 0 ? K : 1), sizeof(long)), n = 0;
    for (long col = 0; col < c->L; col++)
        if (gr[col] == gr[col])
            it[n++] = (idx_item_t){gr[col], col};
    s->K = K < n ? K : n;
    s->hit = s->ties = s->tie_zeros = s->worst = 0;
    if (s->K == 0) {
        free(it), free(sel);
        return;
    }
    qsort(it, (size_t)n, sizeof *it, idx_desc);
    double gk = it[s->K - 1].v, *gs = err_malloc((size_t)n, sizeof(double)); /* Golden's values, largest first */
    long above = 0;
    for (long t = 0; t < n; t++) {
        gs[t] = it[t].v;
        above += it[t].v > gk;
        s->ties += it[t].v == gk;
    }
    s->tie_zeros = gk == 0 ? s->ties : 0;
    /* the kernel's selection: topk.npy's row (its first K entries), or the K largest of its logits */
    long m = 0;
    if (c->topk) {
        for (long t = 0; t < c->K && m < s->K; t++) {
            long col = c->topk[i * c->K + t] - (c->compressed ? c->ks[i] : 0);
            if (col >= 0 && col < c->L && gr[col] == gr[col])
                sel[m++] = col;
        }
    } else {
        long nx = 0;
        for (long col = 0; col < c->L; col++)
            if (gr[col] == gr[col])
                it[nx++] = (idx_item_t){xr[col] == xr[col] ? xr[col] : -INFINITY, col};
        qsort(it, (size_t)nx, sizeof *it, idx_desc);
        for (; m < s->K; m++)
            sel[m] = it[m].col;
    }
    /* a selected key above Golden's K-th value is a hit; one tied with it too, while tied slots remain */
    long tied = 0;
    for (long t = 0; t < m; t++) {
        double v = gr[sel[t]];
        long lo = 0, hi = n; /* rank: 1 + the values above v (gs descending) */
        while (lo < hi) {
            long mid = (lo + hi) / 2;
            if (gs[mid] > v)
                lo = mid + 1;
            else
                hi = mid;
        }
        long rank = lo + 1;
        s->worst = rank > s->worst ? rank : s->worst;
        if (v > gk)
            s->hit++;
        else if (v == gk && tied < s->K - above)
            s->hit++, tied++;
    }
    free(it), free(sel), free(gs);
}
