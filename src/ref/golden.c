/* golden -- the reference attention: exact Q K^T (Ozaki, or Dot2), double-double softmax,
 * P V through exact slices, one final rounding; its stated bound */
#include "ref/golden.h"

#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/progress.h"
#include "num/vec/dd.h"
#include "ref/dot2.h"
#include "ref/ozaki.h"
#include "ref/ozaki_one.h"

static long golden_count[2]; /* [0] Ozaki GEMMs used, [1] Dot2 used (per product) */

void golden_paths(long *ozaki, long *dot2)
{
    long a, b;
#pragma omp atomic read
    a = golden_count[0];
#pragma omp atomic read
    b = golden_count[1];
    *ozaki = a;
    *dot2 = b;
}

static double golden_secs[GOLDEN_T_N]; /* golden_times, but for GOLDEN_T_PV_FP64 (ozaki's) */

void golden_times(double t[GOLDEN_T_N])
{
    for (int i = 0; i < GOLDEN_T_N; i++) {
#pragma omp atomic read
        t[i] = golden_secs[i];
    }
    t[GOLDEN_T_PV_FP64] = ozaki_pv_fp64_seconds();
}

/* Adds the time since *t0 to phase p, and restarts *t0. */
static void golden_timed(golden_phase_t p, double *t0)
{
    double t = progress_now();
#pragma omp atomic
    golden_secs[p] += t - *t0;
    *t0 = t;
}

static void golden_count_path(int dot2)
{
#pragma omp atomic
    golden_count[dot2]++;
}

/* 1/sqrt(dk) as a double-double, correctly rounded through MPFR. */
static dd_t golden_scale(double scale, long dk)
{
    if (scale > 0)
        return (dd_t){scale, 0.0};
    mpfr_t t;
    mpfr_init2(t, 128);
    mpfr_set_si(t, dk, MPFR_RNDN);
    mpfr_rec_sqrt(t, t, MPFR_RNDN);
    dd_t r;
    r.hi = mpfr_get_d(t, MPFR_RNDN);
    mpfr_sub_d(t, t, r.hi, MPFR_RNDN);
    r.lo = mpfr_get_d(t, MPFR_RNDN);
    mpfr_clear(t);
    mpfr_free_cache(); /* the calling thread's MPFR caches (Golden's parts run on worker threads) */
    return r;
}

/* Group g's rows (row r its group's row row0 + r): O, and unless NULL the log-sum-exp and the largest scaled score
 * (max_logits). A sink (g->sink) adds exp(sink) to each row's denominator: exp(sink - m scale) beside the row's terms
 * exp((s - m) scale), in double-double; +inf makes O zero, -inf is no sink. */
static void golden_group(double *o, double *lse, double *mlog, const attn_group_t *g, long row0, dd_t scale)
{
    long R = g->R, sk = g->sk;
    /* P on cache lines: P V's pass cutting it took 0.7-0.8 of the time of P at malloc's 16-byte boundaries */
    double *ph = err_malloc64((size_t)(R * sk), sizeof(double));
    double *pl = err_malloc64((size_t)(R * sk), sizeof(double));
    double *nh = err_malloc((size_t)(R * g->dv), sizeof(double));
    double *nl = err_malloc((size_t)(R * g->dv), sizeof(double));
    dd_t *l = err_malloc((size_t)R, sizeof(dd_t));
    dd_t *mx = err_malloc((size_t)R, sizeof(dd_t));

    /* S = Q K^T as pairs, then P = exp((S - m) scale) in place, m the row's largest score as a pair: m.hi the
     * largest hi, m.lo the largest lo beside it. The exp's arguments are then <= 0; with m.hi alone the largest
     * reaches m.lo scale, which passes exp's range (overflow, or every term 0) once a score's exact value needs
     * more than a double by a margin that scale makes large (scores near 2^63 at scale 1: m.lo ~ 1e3). m.lo is
     * taken out of the row's lo parts (each error < ulp(lo) / 2, below the pair's precision) only then, so that
     * ordinary rows are computed as they always were. */
    double t0 = progress_now();
    ozaki_init();
    int exact = ozaki_scores(ph, pl, g);
    golden_count_path(!exact);
    if (!exact)
        dot2_gemm(ph, pl, sk, g->q, NULL, g->dk, g->k, g->dk, 1, R, sk, g->dk);
    golden_timed(GOLDEN_T_SCORES, &t0);
    for (long r0 = 0; r0 < R; r0 += 8) { /* eight rows' exps, then their sums together while in cache */
        long nb = R - r0 < 8 ? R - r0 : 8, n[8];
        for (long r = r0; r < r0 + nb; r++) {
            double *h = ph + r * sk, *lo = pl + r * sk;
            long lim = g->limit[r] < 0 ? -1 : g->limit[r];
            double m = -INFINITY, ml = -INFINITY;
#pragma omp simd reduction(max : m)
            for (long j = 0; j <= lim; j++)
                m = h[j] > m ? h[j] : m;
            for (long j = 0; j <= lim; j++)
                ml = h[j] == m && lo[j] > ml ? lo[j] : ml;
            ml = lim >= 0 ? ml : 0.0;
            if (fabs(ml * scale.hi) > GOLDEN_SHIFT_LO_MAX)
                for (long j = 0; j <= lim; j++)
                    lo[j] -= ml;
            else
                ml = 0.0;
            dd_exp_array(h, lo, lim + 1, m, scale);
            for (long j = lim + 1; j < sk; j++)
                h[j] = lo[j] = 0.0;
            n[r - r0] = lim + 1;
            mx[r] = (dd_t){m, ml};
        }
        dd_sum_rows(l + r0, ph + r0 * sk, pl + r0 * sk, sk, n, nb);
    }
    /* log-sum-exp of the scaled scores: m scale + ln(l), in double-double to the last step */
    for (long r = 0; lse && r < R; r++) {
        dd_t ms = dd_mul(scale, mx[r]), sum = l[r];
        lse[r] = sum.hi > 0 ? (ms.hi + (ms.lo + (log(sum.hi) + sum.lo / sum.hi))) : -INFINITY;
    }
    for (long r = 0; mlog && r < R; r++) {
        dd_t ms = dd_mul(scale, mx[r]);
        mlog[r] = l[r].hi > 0 ? ms.hi + ms.lo : -INFINITY;
    }
    for (long r = 0; g->sink && r < R; r++) { /* the sink's term joins the denominator, after the log-sum-exp */
        double sink = g->sink[(row0 + r) / g->sq];
        if (sink == INFINITY)
            l[r] = (dd_t){INFINITY, 0.0};
        else if (sink > -INFINITY && l[r].hi > 0) {
            dd_t ms = dd_mul(scale, mx[r]);
            l[r] = dd_add(l[r], dd_exp(dd_add((dd_t){sink, 0.0}, (dd_t){-ms.hi, -ms.lo})));
        }
    }
    golden_timed(GOLDEN_T_SOFTMAX, &t0);
    /* O = (P V) / l */
    int sliced = ozaki_pv(nh, nl, ph, pl, g);
    golden_count_path(!sliced);
    if (!sliced)
        dot2_gemm(nh, nl, g->dv, ph, pl, sk, g->v, g->dv, 0, R, g->dv, sk);
    golden_timed(GOLDEN_T_PV, &t0);
    for (long r = 0; r < R; r++)
        for (long c = 0; c < g->dv; c++) {
            long i = r * g->dv + c;
            dd_t n = dd_fast_two_sum(nh[i], nl[i]);
            dd_t q = l[r].hi == INFINITY ? (dd_t){0.0, 0.0} : l[r].hi > 0 ? dd_div(n, l[r]) : (dd_t){NAN, 0.0};
            o[i] = q.hi + q.lo;
        }
    golden_timed(GOLDEN_T_DIVIDE, &t0);
    free(ph);
    free(pl);
    free(nh);
    free(nl);
    free(l);
    free(mx);
}

void golden_attention(double *o, const attn_input_t *in, double scale)
{
    golden_attention_lse(o, NULL, in, scale);
}

long golden_parts(const attn_input_t *in)
{
    const attn_shape_t *s = &in->s;
    long rows = s->hq / s->hkv * s->sq, chunk = golden_chunk_rows(s->sk);
    return s->hkv * ((rows + chunk - 1) / chunk);
}

long golden_chunk_rows(long sk)
{
    long c = GOLDEN_CHUNK_SCORES / (sk > 0 ? sk : 1);
    return c < GOLDEN_CHUNK_MIN_ROWS ? GOLDEN_CHUNK_MIN_ROWS : c;
}

void golden_attention_part(double *o, double *lse, double *mlog, const attn_input_t *in, double scale, long part)
{
    const attn_shape_t *s = &in->s;
    long rows = s->hq / s->hkv * s->sq, chunk = golden_chunk_rows(s->sk), per = (rows + chunk - 1) / chunk;
    long h = part / per, r0 = part % per * chunk, r1 = r0 + chunk < rows ? r0 + chunk : rows;
    long *limit = err_malloc((size_t)rows, sizeof(long));
    attn_row_limits(limit, s);
    /* the group's rows r0..r1 alone: every row's scores, softmax and P V are its own */
    attn_group_t g = {r1 - r0, s->sk, s->dk, s->dv, in->q + (h * rows + r0) * s->dk, in->k + h * s->sk * s->dk,
                      in->v + h * s->sk * s->dv, limit + r0, in->kpos, in->kslots, in->kv_fp8, in->v_of_k, {0, 0, 0},
                      in->sink ? in->sink + h * (s->hq / s->hkv) : NULL, s->sq};
    long row = h * rows + r0;
    golden_group(o + row * s->dv, lse ? lse + row : NULL, mlog ? mlog + row : NULL, &g, r0, golden_scale(scale, s->dk));
    free(limit);
}

void golden_attention_lse(double *o, double *lse, const attn_input_t *in, double scale)
{
    for (long p = 0, n = golden_parts(in); p < n; p++)
        golden_attention_part(o, lse, NULL, in, scale, p);
}

static double golden_g(long n)
{
    double nu = (double)n * 0x1p-53;
    double g = nu / (1.0 - nu);
    return g * g;
}

double golden_bound(double o_abs, double w, double z, double a, long sk, long dk)
{
    double nu = (double)sk * 0x1p-53, g1 = nu / (1.0 - nu);
    return 0x1p-53 * (1.0 + 0x1p-50) * o_abs + (golden_g(sk) + 2.0 * (golden_g(dk) + 0x1p-100) * a + 0x1p-97) * w +
           (g1 + 0x1p-52) * 0x1p-19 * z;
}

/* All-MPFR reference: exact-at-prec dot products, exp, sums, division. */
