/* screen -- check's screening: every candidate first on a part of the case, the leaders there in full */
#include "run/check_int.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run/run.h"

static int check_cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static int check_cmp_screened(const void *a, const void *b)
{
    const check_screened_t *x = a, *y = b;
    return x->identical != y->identical ? (x->identical > y->identical ? -1 : 1) : x->slot - y->slot;
}


/* Unit u's (entry u / hkv, KV group u % hkv) elements of the case's O: i0 .. i0 + len - 1. */
static void check_unit_span(const attn_batch_t *bt, long u, long *i0, long *len)
{
    const attn_shape_t *s = &bt->entry[0].s;
    long b = u / s->hkv, g = u % s->hkv;
    *len = s->hq / s->hkv * bt->entry[b].s.sq * s->dv;
    *i0 = attn_batch_row(bt, b) * s->hq * s->dv + g * *len;
}

void check_screen_plan(check_screen_t *p, const run_cfg_t *c, int screen)
{
    const attn_batch_t *bt = c->input;
    const attn_shape_t *s = &bt->entry[0].s;
    memset(p, 0, sizeof *p);
    p->units = bt->n * s->hkv;
    if (!screen || p->units < 2 || c->nvariants <= CHECK_LEADERS)
        return;
    p->k = p->units / CHECK_SCREEN_PART > 0 ? p->units / CHECK_SCREEN_PART : 1;
    p->mask = err_calloc((size_t)p->units, 1);
    for (long j = 0; j < p->k; j++) { /* k units spread evenly: the middle of each k-th of the case */
        long u = (2 * j + 1) * p->units / (2 * p->k), i0, len;
        p->mask[u] = 1;
        check_unit_span(bt, u, &i0, &len);
        p->part_n += len;
    }
    p->diff = err_malloc((size_t)c->nvariants, sizeof(long));
    for (int v = 0; v < c->nvariants; v++)
        p->diff[v] = LONG_MAX;
}

/* Candidate slot v on the part: how many of its elements differ from the kernel's. */
int check_screen_one(check_screen_t *p, const run_cfg_t *c, const double *kout, int v, err_t *e)
{
    long n = attn_batch_row(c->input, c->input->n) * c->input->entry[0].s.hq * c->input->entry[0].s.dv;
    /* the whole case's O: the part's rows land where they belong */
    double *o = err_malloc((size_t)n, sizeof(double));
    int rc = run_outputs_units(c, c->input, v, o, NULL, p->mask, NULL, e);
    long d = 0;
    long i0, len;
    for (long u = 0; !rc && u < p->units; u++)
        for (long i = (check_unit_span(c->input, u, &i0, &len), i0); p->mask[u] && i < i0 + len; i++)
            d += !((o[i] == kout[i] && signbit(o[i]) == signbit(kout[i])) || (o[i] != o[i] && kout[i] != kout[i]));
    p->diff[v - 1] = rc ? LONG_MAX : d;
    free(o);
    return rc;
}

/* The leaders: within the margin of the fewest differences, and at least the CHECK_LEADERS best; full[v - 1] = 0
 * for the others, which go to r->screened. */
void check_screen_decide(check_result_t *r, const check_screen_t *p, const run_cfg_t *c, unsigned char *full)
{
    long npart = p->part_n, best = LONG_MAX, slack = (long)(CHECK_SCREEN_SLACK * (double)npart);
    for (int v = 0; v < c->nvariants; v++)
        best = p->diff[v] < best ? p->diff[v] : best;
    long *sorted = err_malloc((size_t)c->nvariants, sizeof(long));
    memcpy(sorted, p->diff, sizeof(long) * (size_t)c->nvariants);
    qsort(sorted, (size_t)c->nvariants, sizeof(long), check_cmp_long);
    long kth = sorted[CHECK_LEADERS - 1];
    free(sorted);
    r->screened = err_calloc((size_t)c->nvariants, sizeof *r->screened);
    for (int v = 0; v < c->nvariants; v++) {
        full[v] = p->diff[v] <= 2 * best + slack || p->diff[v] <= kth;
        if (!full[v]) {
            check_screened_t *q = &r->screened[r->nscreened++];
            q->slot = v + 1;
            q->identical = npart - p->diff[v];
            q->n = npart;
        }
    }
    r->screen_units = p->k;
    r->units = p->units;
    qsort(r->screened, (size_t)r->nscreened, sizeof *r->screened, check_cmp_screened);
}
