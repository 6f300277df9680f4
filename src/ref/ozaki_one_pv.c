/* ozaki_one_pv -- P V exactly through one FP64 GEMM and a sparse list of V's remainders (ozaki_one_int.h) */
#include "ref/ozaki_one.h"

#include <cblas.h>
#include <stdlib.h>

#include "base/err.h"
#include "base/progress.h"
#include "num/vec/cpu.h"
#include "ref/ozaki_one_int.h"
#include "ref/ozaki_slices.h"
#include "ref/ozaki_u8.h"

/* (nh, nl) += P V2 for the remainders ts of V (keys j0 + r of this chunk), nh and nl [R][dv]: row by row, each term
 * taking P at its key from the row's part of the chunk's stack [p1; pr] (n keys per row; the row's keys are near one
 * another, where a key's column over the rows is a page a row) into the row's entry of its column. P = p1 fp + pr,
 * with p1 fp exact (TwoProd of it with v2) and pr's product plain (pr is below 2^-bp of P's grid). Each entry takes
 * its terms in their order, whatever the rows' order. */
static inline __attribute__((always_inline)) void oz1_pv_terms_body(double *nh, double *nl, const oz1_terms_t *ts,
                                                                    const double *pall, const double *fp, long R,
                                                                    long n, long j0, long dv)
{
    for (long i = 0; i < R; i++) {
        const double *p1 = pall + i * n, *pr = pall + (R + i) * n;
        double *h = nh + i * dv, *l = nl + i * dv, f = fp[i];
        for (long t = 0; t < ts->n; t++) {
            const oz1_term_t *e = &ts->t[t];
            long jj = e->r - j0;
            double c1 = p1[jj] * f, v = e->v, p = c1 * v, err = fma(c1, v, -p);
            dd_t a = dd_two_sum(h[e->c], p);
            h[e->c] = a.hi;
            l[e->c] += a.lo + (err + pr[jj] * v);
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The same with the FMA instruction inlined (the generic build calls libm's fma). */
__attribute__((target("avx2,fma"))) static void oz1_pv_terms_fma(double *nh, double *nl, const oz1_terms_t *ts,
                                                                  const double *pall, const double *fp, long R,
                                                                  long n, long j0, long dv)
{
    oz1_pv_terms_body(nh, nl, ts, pall, fp, R, n, j0, dv);
}
#endif

static void oz1_pv_terms(double *nh, double *nl, const oz1_terms_t *ts, const double *pall, const double *fp, long R,
                         long n, long j0, long dv)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (cpu_has_avx2_fma()) {
        oz1_pv_terms_fma(nh, nl, ts, pall, fp, R, n, j0, dv);
        return;
    }
#endif
    oz1_pv_terms_body(nh, nl, ts, pall, fp, R, n, j0, dv);
}

/* cb [R][dv] = p1 V1 exactly through byte digit planes, the same integers as the binary64 GEMM: p1 [R][n]
 * (nonnegative, at most 2^bp) takes no offset and the planes for values below 2^(bp - 1), P's range where its
 * row maximum is 1 (3 planes, not 4, for BF16 MLA inputs); the few above (that maximum) are capped there while
 * the planes are cut, and their excess e times V1's row added after, e v exactly (integers whose partial sums
 * are no larger than the whole's: below 2^53). More than 2 R of them (ties at the maximum): no cap, the planes for
 * all of p1. V1 = vs [n][dv], bv bits. w: R dv words of work. */
static void pv_u8(double *cb, double *p1, const double *vs, long R, long n, long dv, int bp, int bv, uint64_t *w)
{
    int nd = (bp - 1 + 7) / 8;
    double cap = ldexp(1.0, 8 * nd) - 1.0;
    long ne = 0, most = 2 * R, *at = err_malloc((size_t)most, sizeof(long));
    double *ex = err_malloc((size_t)most, sizeof(double));
    for (long x = 0; x < R * n && ne <= most; x++)
        if (p1[x] > cap) {
            if (ne < most) {
                at[ne] = x;
                ex[ne] = p1[x] - cap;
                p1[x] = cap;
            }
            ne++;
        }
    if (ne > most) /* back to P's values, all of them in the planes */
        for (long e = 0; e < most; e++)
            p1[at[e]] += ex[e];
    ozaki_u8_t pz, vz;
    ozaki_u8_planes(&pz, p1, R, n, ne > most ? bp + 1 : 8 * nd, 1, OZAKI_U8_A);
    ozaki_u8_planes(&vz, vs, dv, n, bv, 0, OZAKI_U8_BT);
    ozaki_u8_product(cb, dv, &pz, &vz, w);
    ozaki_u8_free(&pz);
    ozaki_u8_free(&vz);
    for (long e = 0; e < ne && ne <= most; e++) {
        long i = at[e] / n, j = at[e] % n;
        for (long c = 0; c < dv; c++)
            cb[i * dv + c] += ex[e] * vs[j * dv + c];
        p1[at[e]] += ex[e];
    }
    free(at);
    free(ex);
}

/* N = P V: P = ph + pl (rows scaled so that max P = 1) is cut once on each row's grid to bp
 * bits (p1, exact integers) and a remainder pr = P - p1 (below 2^-bp of the row's grid, with
 * pl); V is cut once per column to bv bits (V1) with its sparse remainders V2:
 *     P V = p1 V1 + pr V1 + P V2.
 * Both first products are one GEMM of the stack [p1; pr] per chunk of OZ1_PV_CHUNK keys: p1 V1's
 * sums are integers below 2^53 when bp + bv + log2(chunk) <= 53 and are added across chunks
 * with TwoSum (integers: exact), so P keeps bp = 53 - log2(chunk) - bv >= OZAKI_MIN_P_BITS
 * bits; pr V1 is plain FP64 (the bound's Z term); P V2 goes term by term (TwoProd of ph, plus
 * pl's product) in double-double. bv is the fewest bits that leave at most 1/OZ1_PV_SPARSE of
 * V's values a remainder (counted on OZ1_SAMPLED keys), P getting the rest: the more
 * bits P keeps exact, the smaller the plain product's rounding errors. */
static inline __attribute__((always_inline)) int pv_one_body(double *nh, double *nl, const double *ph, const double *pl,
                                                             const attn_group_t *g)
{
    long R = g->R, sk = g->sk, dv = g->dv, ch = sk < OZ1_PV_CHUNK ? sk : OZ1_PV_CHUNK;
    int B = 53 - ozaki_ceil_log2(ch), ok = B - OZAKI_MIN_P_BITS >= 1;
    double budget = (double)R * (double)sk * (double)dv / OZ1_SPARSE, work = 0;
    int *hv = err_malloc((size_t)dv, sizeof(int));
    double *mx = err_calloc((size_t)dv, sizeof(double));
    double *fv = err_malloc((size_t)dv, sizeof(double)), *gv = err_malloc((size_t)dv, sizeof(double));
    for (long j = 0; j < sk; j++) { /* V's column grids over all keys (NaN is caught by the cut) */
        const double *vr = g->v + j * dv;
        for (long c = 0; j + 1 < sk && c < dv; c += 8) /* the next row into L2 meanwhile (a pass over all of V: */
            __builtin_prefetch(vr + dv + c, 0, 2);      /* memory-bound; Golden 0.983 of the time with it) */
#pragma omp simd
        for (long c = 0; c < dv; c++) {
            double a = fabs(vr[c]);
            mx[c] = a > mx[c] ? a : mx[c];
        }
    }
    for (long c = 0; c < dv && ok; c++)
        ok = oz1_hi_of(&hv[c], mx[c]);
    long hist[64] = {0}, step = oz1_step(sk);
    for (long j = 0; j < sk && ok; j += step)
        for (long c = 0; c < dv; c++)
            if (hv[c] != OZ1_EMPTY)
                oz1_hist(hist, g->v + j * dv + c, 1, hv[c]);
    int bv = 1;
    while (bv < B - OZAKI_MIN_P_BITS &&
           (double)oz1_above(hist, bv) * (double)step * OZ1_PV_SPARSE > (double)sk * (double)dv)
        bv++;
    int bp = B - bv > 50 ? 50 : B - bv;
    for (long c = 0; c < dv; c++) {
        fv[c] = hv[c] == OZ1_EMPTY ? 0.0 : ldexp(1.0, bv - hv[c]);
        gv[c] = hv[c] == OZ1_EMPTY ? 0.0 : ldexp(1.0, hv[c] - bv);
    }
    double *pall = err_malloc64((size_t)(2 * R * ch), sizeof(double)); /* on cache lines, as P (golden.c) */
    double *vs = err_malloc64((size_t)(ch * dv), sizeof(double));
    double *cb = err_malloc((size_t)(2 * R * dv), sizeof(double)), *ah = err_calloc((size_t)(R * dv), sizeof(double));
    double *al = err_calloc((size_t)(R * dv), sizeof(double)), *tail = err_calloc((size_t)(R * dv), sizeof(double));
    double *fp = err_malloc((size_t)R, sizeof(double)), *sp = err_malloc((size_t)R, sizeof(double));
    double *ch_h = err_calloc((size_t)(R * dv), sizeof(double)), *ch_l = err_calloc((size_t)(R * dv), sizeof(double));
    oz1_terms_t tv = {err_malloc((size_t)(ch * dv), sizeof(oz1_term_t)), 0, ch * dv};
    const double C = 0x1.8p52;
    long nterms = 0;
    int u8 = ok && ozaki_u8_usable(bp, bv, ch);
    uint64_t *u8w = u8 ? err_malloc((size_t)(R * dv), sizeof(uint64_t)) : NULL;
    for (long i = 0; i < R && ok; i++) { /* P's row grid (its maximum is 1 where the row sees a key) */
        double m = vec_absmax(ph + i * sk, sk, 0.0);
        int hp = m > 0 ? ilogb(m) + 1 : OZ1_EMPTY;
        sp[i] = hp == OZ1_EMPTY ? 0.0 : ldexp(1.0, bp - hp);
        fp[i] = hp == OZ1_EMPTY ? 0.0 : ldexp(1.0, hp - bp);
    }
    for (long j0 = 0; j0 < sk && ok; j0 += ch) {
        long n = sk - j0 < ch ? sk - j0 : ch;
        for (long i = 0; i < R; i++) {
            double f = sp[i], back = fp[i], *p1 = pall + i * n, *pr = pall + (R + i) * n;
            const double *hr = ph + i * sk + j0, *lr = pl + i * sk + j0;
#pragma omp simd
            for (long j = 0; j < n; j++) {
                double t = hr[j] * f, q = (t + C) - C;
                p1[j] = q;
                pr[j] = (t - q) * back + lr[j];
            }
        }
        tv.n = 0;
        for (long j = 0; j < n && ok; j++)
            ok = oz1_cut_cols(vs + j * dv, &tv, g->v + (j0 + j) * dv, dv, fv, gv, j0 + j);
        work += (double)tv.n * (double)R;
        nterms += tv.n;
        if (!ok || work > budget) {
            ok = 0;
            break;
        }
        if (u8) /* p1 V1 through byte digit planes (the same exact sums), pr V1 alone in binary64 */
            pv_u8(cb, pall, vs, R, n, dv, bp, bv, u8w);
        double t0 = progress_now();
        if (u8)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)R, (int)dv, (int)n, 1.0, pall + R * n, (int)n,
                        vs, (int)dv, 0.0, cb + R * dv, (int)dv);
        else
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(2 * R), (int)dv, (int)n, 1.0, pall, (int)n,
                        vs, (int)dv, 0.0, cb, (int)dv);
        oz1_timed_fp64(progress_now() - t0);
        const double *ce = cb + R * dv;
#pragma omp simd
        for (long x = 0; x < R * dv; x++) {
            dd_t t = dd_two_sum(ah[x], cb[x]);
            ah[x] = t.hi;
            al[x] += t.lo;
            tail[x] += ce[x];
        }
        oz1_pv_terms(ch_h, ch_l, &tv, pall, fp, R, n, j0, dv);
    }
    if (ok) {
        oz1_counted(nterms);
        for (long i = 0; i < R; i++)
            for (long c = 0; c < dv; c++) {
                long x = i * dv + c;
                double f = fp[i] * gv[c];
                dd_t s = dd_two_sum(ah[x] * f, tail[x] * gv[c]);
                s = dd_add(s, (dd_t){al[x] * f, 0.0});
                s = dd_add(s, (dd_t){ch_h[x], ch_l[x]});
                nh[x] = s.hi;
                nl[x] = s.lo;
            }
    }
    free(hv);
    free(mx);
    free(fv);
    free(gv);
    free(pall);
    free(vs);
    free(cb);
    free(ah);
    free(al);
    free(tail);
    free(fp);
    free(sp);
    free(ch_h);
    free(ch_l);
    free(tv.t);
    free(u8w);
    return ok;
}

/* Compiled twice, as ozaki_scores_one (ozaki_one.c) */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma"))) static int
pv_one_x16(double *nh, double *nl, const double *ph, const double *pl, const attn_group_t *g)
{
    return pv_one_body(nh, nl, ph, pl, g);
}
#endif

int ozaki_pv_one(double *nh, double *nl, const double *ph, const double *pl, const attn_group_t *g)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (cpu_has_avx512())
        return pv_one_x16(nh, nl, ph, pl, g);
#endif
    return pv_one_body(nh, nl, ph, pl, g);
}
