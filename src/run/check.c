/* check -- which emulation reproduces a kernel's output bits, and where the others depart */
#include "run/check.h"
#include "run/check_int.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attn/kernel.h"
#include "run/run.h"

const char *const check_axis_names[CHECK_AXES] = {"batch entries", "heads", "query tokens", "columns"};

/* The k-th smallest of x[0..n) (0-based; x reordered; no NaN): Hoare's selection, expected O(n), where a sort
 * of a large case's distances took as long as a candidate's run. */
static double check_select(double *x, long n, long k)
{
    long lo = 0, hi = n - 1;
    while (lo < hi) {
        double p = x[lo + (hi - lo) / 2];
        long i = lo, j = hi;
        while (i <= j) {
            while (x[i] < p)
                i++;
            while (x[j] > p)
                j--;
            if (i <= j) {
                double t = x[i];
                x[i++] = x[j];
                x[j--] = t;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return x[k];
    }
    return x[k];
}

/* Where the differences are along one axis: cnt[i] of per elements at index i differ. Listed
 * one by one when few indices have any, as ranges when they form few runs, else summarized. */
static void check_where_axis(char *buf, size_t n, const long *cnt, long len, long per)
{
    long hit = 0, top = 0, runs = 0;
    for (long i = 0; i < len; i++) {
        hit += cnt[i] > 0;
        runs += cnt[i] > 0 && (i == 0 || cnt[i - 1] == 0);
        top = cnt[i] > cnt[top] ? i : top;
    }
    buf[0] = 0;
    if (hit == 0 || len == 1) /* nothing differs, or one index: nothing to point at */
        return;
    size_t off = 0;
    if (hit <= 6) { /* a few: each, with its share of its elements */
        for (long i = 0; i < len && off < n; i++)
            if (cnt[i])
                off += (size_t)snprintf(buf + off, n - off, "%s%ld (%ld of %ld)", off ? ", " : "", i, cnt[i], per);
    } else if (runs <= 4 && hit < len) { /* a few runs of consecutive indices */
        for (long i = 0; i < len && off < n; i++) {
            if (!cnt[i] || (i > 0 && cnt[i - 1]))
                continue;
            long j = i;
            while (j + 1 < len && cnt[j + 1])
                j++;
            off += j > i ? (size_t)snprintf(buf + off, n - off, "%s%ld-%ld", off ? ", " : "", i, j)
                         : (size_t)snprintf(buf + off, n - off, "%s%ld", off ? ", " : "", i);
        }
        if (off < n)
            snprintf(buf + off, n - off, " (%ld of %ld; most in %ld: %ld of %ld)", hit, len, top, cnt[top], per);
    } else {
        snprintf(buf, n, "spread over %ld of %ld (most in %ld: %ld of %ld)", hit, len, top, cnt[top], per);
    }
}

/* Element i of a batch's outputs ([B][hq][sq][dv], a varlen batch's entries each of their sq) as {entry, head, query
 * token, column}. */
static void check_index(const attn_batch_t *bt, long i, long idx[CHECK_AXES])
{
    const attn_shape_t *s = &bt->entry[0].s;
    long j = i / s->dv, b = 0, lo = 0, hi = bt->n - 1;
    while (bt->qoff && lo < hi) { /* the entry whose rows hold row j / hq */
        long mid = (lo + hi + 1) / 2;
        if (bt->qoff[mid] * s->hq <= j)
            lo = mid;
        else
            hi = mid - 1;
    }
    b = bt->qoff ? lo : j / (s->hq * s->sq);
    long sq = bt->entry[b].s.sq, local = j - attn_batch_row(bt, b) * s->hq;
    idx[0] = b, idx[1] = local / sq, idx[2] = local % sq, idx[3] = i % s->dv;
}

/* One candidate's output o (and lse, NaN rows: none) against the kernel's. */
static void check_score(check_cand_t *k, const run_cfg_t *c, int slot, const double *o, const double *lse,
                        const double *kout, const double *klse, const double *gout, const double *glse, long nlse)
{
    const attn_shape_t *s = &c->input->entry[0].s;
    long B = c->input->n, nl = attn_batch_row(c->input, B) * s->hq, n = nl * s->dv;
    long dims[CHECK_AXES] = {B, s->hq, c->shape.sq, s->dv};
    fmt_id_t f = c->vcfg[slot - 1].out_format;
    k->slot = slot;
    k->n = n;
    k->identical = 0;
    k->finite_there = 1;
    double *ulp = err_malloc((size_t)n, sizeof(double));
    long *cnt[CHECK_AXES];
    for (int a = 0; a < CHECK_AXES; a++)
        cnt[a] = err_calloc((size_t)dims[a], sizeof(long));
    k->max_ulp = 0;
    for (long i = 0; i < n; i++) {
        int same = (o[i] == kout[i] && signbit(o[i]) == signbit(kout[i])) || (o[i] != o[i] && kout[i] != kout[i]);
        k->identical += same;
        ulp[i] = same ? 0
                 : !isfinite(o[i]) || !isfinite(kout[i]) ? INFINITY
                                                         : fabs((double)(fmt_ordinal(o[i], f) - fmt_ordinal(kout[i], f)));
        if (!isfinite(kout[i]) && !isfinite(o[i]))
            k->finite_there = 0;
        k->max_ulp = ulp[i] > k->max_ulp ? ulp[i] : k->max_ulp;
        if (!same) {
            long idx[CHECK_AXES];
            check_index(c->input, i, idx);
            for (int a = 0; a < CHECK_AXES; a++)
                cnt[a][idx[a]]++;
        }
    }
    k->median_ulp = n % 2 ? check_select(ulp, n, n / 2) : 0.5 * (check_select(ulp, n, n / 2 - 1) + check_select(ulp, n, n / 2));
    free(ulp);
    for (int a = 0; a < CHECK_AXES; a++) {
        check_where_axis(k->where[a], sizeof k->where[a], cnt[a], dims[a], n / dims[a]);
        free(cnt[a]);
    }
    metric_all(k->m, o, gout, n);
    k->lse_identical = k->lse_n = 0;
    k->lse_max_abs = run_lse_max_abs(lse, glse, nlse);
    if (k->lse_max_abs == k->lse_max_abs && klse) {
        for (long i = 0; i < nlse; i++)
            k->lse_identical += lse[i] == klse[i] || (lse[i] != lse[i] && klse[i] != klse[i]);
        k->lse_n = nlse;
    }
    k->mlog_identical = k->mlog_n = 0;
    if (attn_batch_row_planes(c->input) > 1 && klse && klse[nlse] == klse[nlse] && lse[nlse] == lse[nlse]) {
        for (long i = nlse; i < 2 * nlse; i++)
            k->mlog_identical += lse[i] == klse[i];
        k->mlog_n = nlse;
    }
}

static int check_cmp_cand(const void *a, const void *b)
{
    const check_cand_t *x = a, *y = b;
    if (x->identical != y->identical)
        return x->identical > y->identical ? -1 : 1;
    if (x->max_ulp != y->max_ulp)
        return x->max_ulp < y->max_ulp ? -1 : 1;
    if (x->lse_identical != y->lse_identical) /* then the log-sum-exp rows, where the kernel gave them */
        return x->lse_identical > y->lse_identical ? -1 : 1;
    if (x->mlog_identical != y->mlog_identical)
        return x->mlog_identical > y->mlog_identical ? -1 : 1;
    if (x->outside != y->outside) /* a tie goes to the candidate whose real kernel can run the case */
        return x->outside - y->outside;
    return x->slot - y->slot;
}

/* Candidate slot v's full run (o, l, its seconds) scored against the kernel's and Golden's, and marked where its real
 * kernel cannot run the case. */
static void check_finish(check_cand_t *cd, const run_cfg_t *c, int v, const double *o, const double *l, double seconds,
                         const double *kout, const double *klse, const double *gout, const double *glse)
{
    const attn_batch_t *bt = c->input;
    check_score(cd, c, v, o, l, kout, klse, gout, glse, attn_batch_row(bt, bt->n) * bt->entry[0].s.hq);
    cd->seconds = seconds;
    cd->outside = attn_kernel_outside(c->variants[v - 1], &c->vcfg[v - 1], &c->shape, c->gen.kv_separate, bt,
                                      cd->outside_why, sizeof cd->outside_why);
}

/* The candidates slot_of[0..nfull) in full, each one's (entry, KV group) units cut into contiguous chunks that run
 * on the threads side by side (each unit's rows are its own, and a split-KV scheduler sees the whole case: the same
 * bits as one run), then scored. */
static int check_full_split(check_result_t *r, const run_cfg_t *c, const int *slot_of, int nfull, int threads,
                            long units, const double *kout, const double *klse, const double *gout,
                            const double *glse, err_t *e)
{
    const attn_batch_t *bt = c->input;
    const attn_shape_t *s = &bt->entry[0].s;
    long nlse = attn_batch_row(bt, bt->n) * s->hq, n = nlse * s->dv;
    int chunks = (threads + nfull - 1) / nfull;
    chunks = chunks > units ? (int)units : chunks;
    unsigned char *mask = err_calloc((size_t)(chunks * units), 1);
    for (long u = 0; u < units; u++)
        mask[u * chunks / units * units + u] = 1;
    double **o = err_malloc((size_t)nfull, sizeof(double *)), **l = err_malloc((size_t)nfull, sizeof(double *));
    double *secs = err_calloc((size_t)(nfull * chunks), sizeof(double));
    for (int k = 0; k < nfull; k++) {
        o[k] = err_malloc((size_t)n, sizeof(double));
        l[k] = err_malloc((size_t)(nlse * attn_batch_row_planes(bt)), sizeof(double));
    }
    int rc = ERR_OK;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
#endif
    for (int t = 0; t < nfull * chunks; t++) {
        int k = t / chunks;
        if (run_stopped(&rc))
            continue;
        err_t le = {0};
        int lrc = run_outputs_units(c, bt, slot_of[k], o[k], l[k], mask + (t % chunks) * units, &secs[t], &le);
        if (lrc)
            run_keep_first_error(&rc, e, lrc, &le);
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads > nfull ? nfull : threads)
#endif
    for (int k = 0; k < nfull; k++) {
        int v = slot_of[k];
        check_cand_t *cd = &r->cand[k];
        if (rc)
            continue;
        double t = 0;
        for (int ch = 0; ch < chunks; ch++)
            t += secs[k * chunks + ch];
        check_finish(cd, c, v, o[k], l[k], t, kout, klse, gout, glse);
    }
    for (int k = 0; k < nfull; k++) {
        free(o[k]);
        free(l[k]);
    }
    free(o);
    free(l);
    free(secs);
    free(mask);
    return rc;
}

int check_run(check_result_t *r, const run_cfg_t *c, const double *kout, const double *klse, int screen, err_t *e)
{
    memset(r, 0, sizeof *r);
    const attn_batch_t *bt = c->input;
    const attn_shape_t *s = &bt->entry[0].s;
    long nlse = attn_batch_row(bt, bt->n) * s->hq, n = nlse * s->dv;
    r->n = n;
    r->nlse = nlse;
    /* the kernel's non-finite values (a broken kernel's, from finite inputs) and where they are */
    long dims[CHECK_AXES] = {bt->n, s->hq, c->shape.sq, s->dv}, *cnt[CHECK_AXES];
    for (int a = 0; a < CHECK_AXES; a++)
        cnt[a] = err_calloc((size_t)dims[a], sizeof(long));
    for (long i = 0; i < n; i++) {
        if (isfinite(kout[i]))
            continue;
        r->nan += kout[i] != kout[i];
        r->inf += kout[i] == kout[i];
        long idx[CHECK_AXES];
        check_index(bt, i, idx);
        for (int a = 0; a < CHECK_AXES; a++)
            cnt[a][idx[a]]++;
    }
    for (int a = 0; a < CHECK_AXES; a++) {
        check_where_axis(r->nonfinite_where[a], sizeof r->nonfinite_where[a], cnt[a], dims[a], n / dims[a]);
        free(cnt[a]);
    }
    for (long i = 0; klse && i < nlse; i++) /* +inf is an empty row's; NaN no row's */
        r->lse_nan += klse[i] != klse[i];
    int threads = c->threads;
#ifdef _OPENMP
    if (threads == 0)
        threads = omp_get_max_threads();
#endif
    threads = threads < 1 ? 1 : threads;
    /* Golden's parts and the screening runs in one pool of tasks on every thread (each part's rows and each
     * candidate's output its own: the same bits for any count) */
    double *gout = err_malloc((size_t)n, sizeof(double)), *glse = err_malloc((size_t)(nlse * attn_batch_row_planes(bt)), sizeof(double));
    long *first = err_malloc((size_t)bt->n + 1, sizeof(long)), ng = run_golden_parts(bt, first);
    check_screen_t plan;
    check_screen_plan(&plan, c, screen);
    long ntasks = ng + (plan.k ? c->nvariants : 0);
    int rc = ERR_OK;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
#endif
    for (long t = 0; t < ntasks; t++) {
        if (run_stopped(&rc))
            continue;
        if (t < ng) {
            run_golden_part(c, bt, first, t, gout, glse);
            continue;
        }
        err_t le = {0};
        int lrc = check_screen_one(&plan, c, kout, (int)(t - ng) + 1, &le);
        if (lrc)
            run_keep_first_error(&rc, e, lrc, &le);
    }
    free(first);
    if (!rc) {
        metric_all(r->m, kout, gout, n);
        r->lse_max_abs = klse ? run_lse_max_abs(klse, glse, nlse) : NAN;
    }
    /* which candidates run in full: every one, or the leaders of the screening */
    unsigned char *full = err_malloc((size_t)(c->nvariants > 0 ? c->nvariants : 1), 1);
    memset(full, 1, (size_t)(c->nvariants > 0 ? c->nvariants : 1));
    if (!rc && plan.k)
        check_screen_decide(r, &plan, c, full);
    free(plan.mask);
    free(plan.diff);
    int nfull = 0;
    for (int v = 0; v < c->nvariants; v++)
        nfull += full[v];
    if (!rc) {
        r->ncand = nfull;
        r->cand = err_calloc((size_t)(nfull > 0 ? nfull : 1), sizeof(check_cand_t));
    }
    int *slot_of = err_malloc((size_t)(nfull > 0 ? nfull : 1), sizeof(int));
    for (int v = 0, k = 0; v < c->nvariants; v++)
        if (full[v])
            slot_of[k++] = v + 1;
    /* fewer candidates to run in full than threads (the screening's usual end): each one's units are shared out */
    if (!rc && nfull > 0 && nfull < threads && plan.units >= 2) {
        rc = check_full_split(r, c, slot_of, nfull, threads, plan.units, kout, klse, gout, glse, e);
        nfull = 0;
    }
    int tc = threads > nfull ? nfull : threads;
    tc = tc < 1 ? 1 : tc;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(tc)
#endif
    for (int k = 0; k < nfull; k++) {
        int v = slot_of[k];
        if (run_stopped(&rc))
            continue;
        /* the run restricted to variant v: slot 0 (Golden) is not computed again */
        run_cfg_t *one = err_malloc(1, sizeof *one);
        double *o = err_malloc((size_t)n, sizeof(double)), *l = err_malloc((size_t)(nlse * attn_batch_row_planes(bt)), sizeof(double));
        err_t le = {0};
        *one = *c;
        one->nvariants = 1;
        one->variants[0] = c->variants[v - 1];
        one->vcfg[0] = c->vcfg[v - 1];
        double *outs[2] = {NULL, o}, *lses[2] = {NULL, l};
        run_row_t rows[2];
        memset(rows, 0, sizeof rows);
        int lrc = run_outputs(one, bt, 0, outs, lses, NULL, rows, 1, &le);
        if (!lrc) {
            check_finish(&r->cand[k], c, v, o, l, rows[1].seconds, kout, klse, gout, glse);
        }
        free(one);
        free(o);
        free(l);
        if (lrc)
            run_keep_first_error(&rc, e, lrc, &le);
    }
    free(slot_of);
    free(full);
    free(gout);
    free(glse);
    if (rc) {
        check_free(r);
        return rc;
    }
    qsort(r->cand, (size_t)r->ncand, sizeof *r->cand, check_cmp_cand);
    return ERR_OK;
}

void check_free(check_result_t *r)
{
    free(r->cand);
    free(r->screened);
    r->cand = NULL;
    r->screened = NULL;
    r->ncand = r->nscreened = 0;
}

/* Candidate x explains the kernel's answer as well as b: every element, and as many lse and max_logits rows. */
static int check_same_rank(const check_cand_t *x, const check_cand_t *b)
{
    return x->identical == b->n && x->lse_identical == b->lse_identical && x->mlog_identical == b->mlog_identical;
}

void check_verdict(char *buf, size_t n, const run_cfg_t *c, const check_result_t *r)
{
    if (r->ncand == 0) {
        snprintf(buf, n, "no candidate emulation ran");
        return;
    }
    const check_cand_t *b = &r->cand[0];
    double pct = floor(10000.0 * (double)b->identical / (double)b->n) / 100; /* 99.999% is not 100.00% */
    if (b->identical == b->n) {
        const attn_variant_t *bv = &attn_variants[c->variants[b->slot - 1]];
        const char *kernel = attn_kernel_name(c->variants[b->slot - 1], &c->vcfg[b->slot - 1]);
        char lse[320] = "";
        int ml = b->mlog_n && b->mlog_identical == b->mlog_n;
        if (b->lse_n && b->lse_identical == b->lse_n)
            snprintf(lse, sizeof lse, ", and its log-sum-exp%s on every row", ml ? " and max_logits" : "");
        else if (b->lse_n) /* the output's bits without the lse's are not the kernel's whole answer */
            snprintf(lse, sizeof lse, ", but its log-sum-exp on only %ld of %ld rows (lse.npy is read as the natural "
                     "log)", b->lse_identical, b->lse_n);
        size_t lo = strlen(lse);
        if (b->mlog_n && !ml) /* max_logits, the kernel's third output */
            snprintf(lse + lo, sizeof lse - lo, "%s its max_logits on only %ld of %ld rows",
                     b->lse_identical == b->lse_n ? ", but" : ", and", b->mlog_identical, b->mlog_n);
        int off = snprintf(buf, n, "bit-identical to %s on 100.00%% of %ld elements%s", run_slot_name(c, b->slot), b->n,
                           lse);
        /* the others as good: every element, and as many lse and max_logits rows */
        for (int i = 1, k = 0; i < r->ncand && check_same_rank(&r->cand[i], b) && off > 0 && (size_t)off < n; i++, k++)
            off += snprintf(buf + off, n - (size_t)off, "%s%s", k ? ", " : " (equally: ", run_slot_name(c, r->cand[i].slot));
        if (r->ncand > 1 && check_same_rank(&r->cand[1], b) && off > 0 && (size_t)off < n)
            off += snprintf(buf + off, n - (size_t)off, ")");
        const char *built = c->vcfg[b->slot - 1].build == ATTN_BUILD_IEEE ? " built without --use_fast_math" : "";
        if (kernel && !b->outside && off > 0 && (size_t)off < n) /* the real kernel the best candidate is */
            snprintf(buf + off, n - (size_t)off, "; %s is %s%s", bv->name, kernel, built);
        else if (kernel && off > 0 && (size_t)off < n) /* its arithmetic, on a case its kernel cannot take */
            snprintf(buf + off, n - (size_t)off, "; %s models %s, which does not run this case (%s)", bv->name,
                     kernel, b->outside_why);
    } else {
        snprintf(buf, n, "no candidate reproduces the kernel's bits: closest is %s, bit-identical on %.2f%% of %ld "
                 "elements (largest distance %.0f ulp, median %.1f)",
                 run_slot_name(c, b->slot), pct, b->n, b->max_ulp, b->median_ulp);
    }
    size_t off = strlen(buf);
    if (r->nan + r->inf && off < n) {
        int finite = 0;
        for (int i = 0; i < r->ncand; i++)
            finite += r->cand[i].finite_there;
        snprintf(buf + off, n - off, "; the kernel's output has %ld non-finite value%s (NaN %ld, infinite %ld) where %s",
                 r->nan + r->inf, r->nan + r->inf == 1 ? "" : "s", r->nan, r->inf,
                 finite == r->ncand ? "every candidate is finite"
                 : finite ? "some candidates are finite (see the report)"
                          : "no candidate is finite either");
    }
}
