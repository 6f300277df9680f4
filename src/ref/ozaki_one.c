/* ozaki_one -- exact products through one FP64 GEMM and a sparse list of remainders */
#include "ref/ozaki.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "num/cpu.h"
#include "num/dd.h"
#include "num/vec.h"
#include "ref/ozaki_u8.h"

/* ---- One slice and its remainders ----
 * Every row (or column) of an operand is cut once, on its own grid: x = x1 + x2 with
 * x1 = q 2^(hi - beta), q = x 2^(beta - hi) rounded to an integer (|q| <= 2^beta; |x| < 2^hi for
 * the whole row) and x2 = x - x1 exactly. With beta_a + beta_b + ceil(log2 K) <= 53 the one GEMM
 * of the slices is exact (ozaki.c says why), and
 *     A B^T = A1 B1^T + A2 B1^T + A B2^T.
 * x2 is zero unless x has bits below 2^(hi - beta): for inputs rounded to BF16 or FP16 only the
 * few values far below their row's maximum. The two last products are summed term by term from
 * a list of the nonzero x2, each product exact (TwoProd) and added with TwoSum into the
 * double-double result. Inputs whose remainders are not sparse (more than 1/OZ1_SPARSE of the
 * GEMM's work) take the multi-slice path instead. Against the multi-slice path this does one
 * GEMM of Q K^T instead of two for BF16 MLA inputs, and for P V one GEMM of a (2R x n) stack
 * [P's leading bits; P's remainder] instead of three of (R x n). */
#define OZ1_SPARSE 64     /* remainder terms allowed: their work at most 1/64 of the GEMM's */
#define OZ1_SAMPLED 512   /* keys whose K and V estimate the remainders when choosing widths */
#define OZ1_EMPTY INT_MIN /* hi of a group that is all zeros */
#define OZ1_PV_SPARSE 1024 /* V's remainders aimed at: 1/1024 of its values */
#define OZ1_PV_CHUNK 512  /* keys per P V GEMM: fewer bits of growth, more of P kept exact */

static long oz1_count[2]; /* products done here, remainder terms summed (since the process started) */

static void oz1_counted(long terms)
{
#pragma omp atomic
    oz1_count[0]++;
#pragma omp atomic
    oz1_count[1] += terms;
}

void ozaki_one_stats(long *products, long *terms)
{
    long a, b;
#pragma omp atomic read
    a = oz1_count[0];
#pragma omp atomic read
    b = oz1_count[1];
    *products = a;
    *terms = b;
}

typedef struct {
    long r, c;
    double v; /* x2 at row r, column c */
} oz1_term_t;

typedef struct {
    oz1_term_t *t;
    long n, cap;
} oz1_terms_t;

/* hi with |x| < 2^hi for every |x| <= mx (OZ1_EMPTY when mx = 0); 0 when mx is Inf or hi is
 * beyond +-900 (no exact power-of-two scaling). */
static int oz1_hi_of(int *hi, double mx)
{
    if (!(mx <= 0x1p900))
        return 0;
    *hi = mx == 0.0 ? OZ1_EMPTY : ilogb(mx) + 1;
    return mx == 0.0 || *hi >= -900;
}

/* The same for the n values x (NaN is skipped here and caught by the cut). */
static int oz1_hi(int *hi, const double *x, long n)
{
    return oz1_hi_of(hi, vec_absmax(x, n, 0.0));
}

/* Exponent of x's lowest set bit (x finite, nonzero). */
static int oz1_lo(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    int be = (int)(b >> 52 & 0x7ff);
    uint64_t m = b & 0xfffffffffffffULL;
    return be == 0 ? -1074 + __builtin_ctzll(m) : be - 1075 + __builtin_ctzll(m | 1ULL << 52);
}

/* hist[d] += the values of x (n values) that need d bits below 2^hi (d capped at 63). */
static void oz1_hist(long *hist, const double *x, long n, int hi)
{
    for (long j = 0; j < n; j++)
        if (x[j] != 0.0) {
            int d = hi - oz1_lo(x[j]);
            hist[d < 63 ? d : 63]++;
        }
}

/* Values of a histogram that need more than b bits. */
static long oz1_above(const long *hist, int b)
{
    long n = 0;
    for (int d = b + 1; d < 64; d++)
        n += hist[d];
    return n;
}

/* Every step-th key is counted: all of them up to OZ1_SAMPLED keys. */
static long oz1_step(long sk)
{
    return sk > OZ1_SAMPLED ? sk / OZ1_SAMPLED : 1;
}

static int oz1_push(oz1_terms_t *ts, long r, long c, double v)
{
    if (ts->n == ts->cap)
        return 0;
    ts->t[ts->n++] = (oz1_term_t){r, c, v};
    return 1;
}

/* One slice of the n values x with beta bits into o, and their nonzero remainders into ts as
 * (r, c0 + j); 0 when ts is full or a value is NaN. Value j is on the grid f[j fs] = 2^(beta - hi)
 * with g[j fs] = 2^(hi - beta): fs = 0 for a row on one grid, 1 for a row of columns on their own
 * grids (both 0 on an all-zero group, whose values are 0). |t| < 2^beta <= 2^50, so (t + C) - C
 * is t rounded to an integer, t - q is exact, and so is its scaling back (a multiple of x's
 * quantum, no larger than |x|). */
static inline __attribute__((always_inline)) int oz1_cut_body(double *o, oz1_terms_t *ts, const double *x, long n,
                                                              const double *f, const double *g, long fs, long r,
                                                              long c0)
{
    const double C = 0x1.8p52;
    double any = 0;
#pragma omp simd reduction(+ : any)
    for (long j = 0; j < n; j++) {
        double t = x[j] * f[j * fs], q = (t + C) - C;
        o[j] = q;
        any += fabs(t - q);
    }
    if (any != any) /* NaN among the values (t = NaN, also where f = 0) */
        return 0;
    if (any == 0)
        return 1;
    for (long j = 0; j < n; j++) {
        double x2 = x[j] - o[j] * g[j * fs];
        if (x2 != 0 && !oz1_push(ts, r, c0 + j, x2))
            return 0;
    }
    return 1;
}

/* A row on its own grid hi (OZ1_EMPTY: zeros, or NaN, which the maximum skips). */
static inline __attribute__((always_inline)) int oz1_cut(double *o, oz1_terms_t *ts, const double *x, long n, int hi,
                                                         int beta, long r)
{
    double f = hi == OZ1_EMPTY ? 0.0 : ldexp(1.0, beta - hi), g = hi == OZ1_EMPTY ? 0.0 : ldexp(1.0, hi - beta);
    return oz1_cut_body(o, ts, x, n, &f, &g, 0, r, 0);
}

/* A row of n columns, each on its own grid (f[c], g[c]). */
static inline __attribute__((always_inline)) int oz1_cut_cols(double *o, oz1_terms_t *ts, const double *x, long n,
                                                              const double *f, const double *g, long r)
{
    return oz1_cut_body(o, ts, x, n, f, g, 1, r, 0);
}

/* (h, l) += a b, the product exact (TwoProd) and added with TwoSum. */
static inline __attribute__((always_inline)) void oz1_add(double *h, double *l, double a, double b)
{
    double p = a * b, e = fma(a, b, -p);
    dd_t t = dd_two_sum(*h, p);
    *h = t.hi;
    *l += t.lo + e;
}

/* (nh, nl) += P V2 for the remainders ts of V (keys j0 + r of this chunk), accumulated
 * transposed ([dv][R]) so that each term is one contiguous pass over the R rows. P's column is
 * gathered once per key from the chunk's stack [p1; pr] (n keys per row): P = p1 fp + pr, with
 * p1 fp exact (TwoProd of it with v2) and pr's product plain (pr is below 2^-bp of P's grid). */
static inline __attribute__((always_inline)) void oz1_pv_terms_body(double *nh, double *nl, double *col,
                                                                    const oz1_terms_t *ts, const double *pall,
                                                                    const double *fp, long R, long n, long j0)
{
    long last = -1;
    double *c1 = col, *c2 = col + R;
    for (long t = 0; t < ts->n; t++) {
        const oz1_term_t *e = &ts->t[t];
        long jj = e->r - j0;
        if (jj != last) {
            for (long i = 0; i < R; i++) {
                c1[i] = pall[i * n + jj] * fp[i];
                c2[i] = pall[(R + i) * n + jj];
            }
            last = jj;
        }
        double v = e->v, *h = nh + e->c * R, *l = nl + e->c * R;
#pragma omp simd
        for (long i = 0; i < R; i++) {
            double p = c1[i] * v, err = fma(c1[i], v, -p);
            dd_t a = dd_two_sum(h[i], p);
            h[i] = a.hi;
            l[i] += a.lo + (err + c2[i] * v);
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The same with the FMA instruction inlined (the generic build calls libm's fma). */
__attribute__((target("avx2,fma"))) static void oz1_pv_terms_fma(double *nh, double *nl, double *col,
                                                                  const oz1_terms_t *ts, const double *pall,
                                                                  const double *fp, long R, long n, long j0)
{
    oz1_pv_terms_body(nh, nl, col, ts, pall, fp, R, n, j0);
}
#endif

static void oz1_pv_terms(double *nh, double *nl, double *col, const oz1_terms_t *ts, const double *pall,
                         const double *fp, long R, long n, long j0)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (cpu_has_avx2_fma()) {
        oz1_pv_terms_fma(nh, nl, col, ts, pall, fp, R, n, j0);
        return;
    }
#endif
    oz1_pv_terms_body(nh, nl, col, ts, pall, fp, R, n, j0);
}

/* Widths (ba for Q, bb for K, ba + bb = B) with the least remainder work: a Q remainder costs a
 * pass over sk keys, a K remainder one over the R rows. 0 if even the least is not sparse. */
static int oz1_widths(int *ba, int *bb, const double *q, const int *hq, const double *k, long R, long sk, long dk)
{
    long hist_q[64] = {0}, hist_k[64] = {0};
    int B = 53 - ozaki_ceil_log2(dk), have = 0;
    double best = 0;
    for (long i = 0; i < R; i++)
        if (hq[i] != OZ1_EMPTY)
            oz1_hist(hist_q, q + i * dk, dk, hq[i]);
    long step = oz1_step(sk);
    for (long j = 0; j < sk; j += step) {
        int hi;
        if (!oz1_hi(&hi, k + j * dk, dk))
            return 0;
        if (hi != OZ1_EMPTY)
            oz1_hist(hist_k, k + j * dk, dk, hi);
    }
    for (int a = 1; a < B && a <= 50; a++) {
        if (B - a > 50)
            continue;
        double cost = (double)oz1_above(hist_q, a) * (double)sk +
                      (double)oz1_above(hist_k, B - a) * (double)step * (double)R;
        if (!have || cost < best) {
            best = cost;
            *ba = a;
            *bb = B - a;
            have = 1;
        }
    }
    return have && best * OZ1_SPARSE <= (double)R * (double)sk * (double)dk;
}

static inline __attribute__((always_inline)) int scores_one_body(double *h, double *l, const attn_group_t *g)
{
    long R = g->R, sk = g->sk, dk = g->dk, ch = sk < OZAKI_CHUNK ? sk : OZAKI_CHUNK;
    double budget = (double)R * (double)sk * (double)dk / OZ1_SPARSE, work = 0;
    int *hq = err_malloc((size_t)R, sizeof(int)), *hk = err_malloc((size_t)ch, sizeof(int)), ba = 0, bb = 0;
    int ok = 1;
    for (long i = 0; i < R && ok; i++)
        ok = oz1_hi(&hq[i], g->q + i * dk, dk);
    ok = ok && oz1_widths(&ba, &bb, g->q, hq, g->k, R, sk, dk);
    double *qs = err_malloc((size_t)(R * dk), sizeof(double)), *ks = err_malloc((size_t)(ch * dk), sizeof(double));
    double *gm = err_malloc((size_t)(R * ch), sizeof(double)), *fq = err_malloc((size_t)R, sizeof(double));
    double *fk = err_malloc((size_t)ch, sizeof(double));
    oz1_terms_t tq = {err_malloc((size_t)(R * dk), sizeof(oz1_term_t)), 0, R * dk};
    oz1_terms_t tk = {err_malloc((size_t)(ch * dk), sizeof(oz1_term_t)), 0, ch * dk};
    for (long i = 0; i < R && ok; i++) {
        ok = oz1_cut(qs + i * dk, &tq, g->q + i * dk, dk, hq[i], ba, i);
        fq[i] = hq[i] == OZ1_EMPTY ? 0.0 : ldexp(1.0, hq[i] - ba);
    }
    work = (double)tq.n * (double)sk;
    long nterms = tq.n;
    /* Q's slice as byte digit planes, once, where the products go through AMX */
    int u8 = ok && ozaki_u8_usable(ba, bb, dk);
    ozaki_u8_t qz = {0};
    uint64_t *u8w = u8 ? err_malloc((size_t)(R * ch), sizeof(uint64_t)) : NULL;
    if (u8)
        ozaki_u8_planes(&qz, qs, R, dk, ba, OZAKI_U8_A);
    for (long j0 = 0; j0 < sk && ok; j0 += ch) {
        long n = sk - j0 < ch ? sk - j0 : ch;
        tk.n = 0;
        for (long j = 0; j < n && ok; j++) {
            const double *kr = g->k + (j0 + j) * dk;
            ok = oz1_hi(&hk[j], kr, dk) && oz1_cut(ks + j * dk, &tk, kr, dk, hk[j], bb, j);
            fk[j] = hk[j] == OZ1_EMPTY ? 0.0 : ldexp(1.0, hk[j] - bb);
        }
        work += (double)tk.n * (double)R;
        nterms += tk.n;
        if (!ok || work > budget) {
            ok = 0;
            break;
        }
        if (u8) { /* the same exact sums through 8-bit digit planes */
            ozaki_u8_t kz;
            ozaki_u8_planes(&kz, ks, n, dk, bb, OZAKI_U8_B);
            ozaki_u8_product(gm, n, &qz, &kz, u8w);
            ozaki_u8_free(&kz);
        } else
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)R, (int)n, (int)dk, 1.0, qs, (int)dk, ks,
                        (int)dk, 0.0, gm, (int)n);
        for (long i = 0; i < R; i++) {
            double fa = fq[i];
            const double *gr = gm + i * n;
            double *hr = h + i * sk + j0, *lr = l + i * sk + j0;
#pragma omp simd
            for (long j = 0; j < n; j++) {
                hr[j] = gr[j] * fa * fk[j];
                lr[j] = 0.0;
            }
        }
        /* Q K2^T: each K remainder against the whole column of Q */
        for (long t = 0; t < tk.n; t++) {
            const oz1_term_t *e = &tk.t[t];
            for (long i = 0; i < R; i++)
                oz1_add(&h[i * sk + j0 + e->r], &l[i * sk + j0 + e->r], g->q[i * dk + e->c], e->v);
        }
        /* Q2 K1^T: each Q remainder against K1's column (K1 = K - K2, the slice scaled back) */
        for (long t = 0; t < tq.n; t++) {
            const oz1_term_t *e = &tq.t[t];
            for (long j = 0; j < n; j++)
                oz1_add(&h[e->r * sk + j0 + j], &l[e->r * sk + j0 + j], e->v, ks[j * dk + e->c] * fk[j]);
        }
    }
    if (ok)
        oz1_counted(nterms);
    if (u8)
        ozaki_u8_free(&qz);
    free(u8w);
    free(hq);
    free(hk);
    free(qs);
    free(ks);
    free(gm);
    free(fq);
    free(fk);
    free(tq.t);
    free(tk.t);
    return ok;
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
    double *pall = err_malloc((size_t)(2 * R * ch), sizeof(double)), *vs = err_malloc((size_t)(ch * dv), sizeof(double));
    double *cb = err_malloc((size_t)(2 * R * dv), sizeof(double)), *ah = err_calloc((size_t)(R * dv), sizeof(double));
    double *al = err_calloc((size_t)(R * dv), sizeof(double)), *tail = err_calloc((size_t)(R * dv), sizeof(double));
    double *fp = err_malloc((size_t)R, sizeof(double)), *sp = err_malloc((size_t)R, sizeof(double));
    double *ch_h = err_calloc((size_t)(R * dv), sizeof(double)), *ch_l = err_calloc((size_t)(R * dv), sizeof(double));
    oz1_terms_t tv = {err_malloc((size_t)(ch * dv), sizeof(oz1_term_t)), 0, ch * dv};
    double *col = err_malloc((size_t)(2 * R), sizeof(double));
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
        if (u8) { /* p1 V1 through byte digit planes (the same exact sums), pr V1 alone in binary64 */
            ozaki_u8_t pz, vz;
            ozaki_u8_planes(&pz, pall, R, n, bp, OZAKI_U8_A);
            ozaki_u8_planes(&vz, vs, dv, n, bv, OZAKI_U8_BT);
            ozaki_u8_product(cb, dv, &pz, &vz, u8w);
            ozaki_u8_free(&pz);
            ozaki_u8_free(&vz);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)R, (int)dv, (int)n, 1.0, pall + R * n, (int)n,
                        vs, (int)dv, 0.0, cb + R * dv, (int)dv);
        } else
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(2 * R), (int)dv, (int)n, 1.0, pall, (int)n,
                        vs, (int)dv, 0.0, cb, (int)dv);
        const double *ce = cb + R * dv;
#pragma omp simd
        for (long x = 0; x < R * dv; x++) {
            dd_t t = dd_two_sum(ah[x], cb[x]);
            ah[x] = t.hi;
            al[x] += t.lo;
            tail[x] += ce[x];
        }
        oz1_pv_terms(ch_h, ch_l, col, &tv, pall, fp, R, n, j0);
    }
    if (ok) {
        oz1_counted(nterms);
        for (long i = 0; i < R; i++)
            for (long c = 0; c < dv; c++) {
                long x = i * dv + c;
                double f = fp[i] * gv[c];
                dd_t s = dd_two_sum(ah[x] * f, tail[x] * gv[c]);
                s = dd_add(s, (dd_t){al[x] * f, 0.0});
                s = dd_add(s, (dd_t){ch_h[c * R + i], ch_l[c * R + i]});
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
    free(col);
    free(u8w);
    return ok;
}

/* Both compiled twice, the second for AVX-512 (its loops element by element, eight lanes a vector; the one
 * reduction, the cut's sum of |t - q|, only tested against zero and NaN), chosen at run time. */
#if defined(__x86_64__) && defined(__GNUC__)
#define OZ1_X16 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma")))
OZ1_X16 static int scores_one_x16(double *h, double *l, const attn_group_t *g)
{
    return scores_one_body(h, l, g);
}

OZ1_X16 static int pv_one_x16(double *nh, double *nl, const double *ph, const double *pl, const attn_group_t *g)
{
    return pv_one_body(nh, nl, ph, pl, g);
}
#endif

int ozaki_scores_one(double *h, double *l, const attn_group_t *g)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (cpu_has_avx512())
        return scores_one_x16(h, l, g);
#endif
    return scores_one_body(h, l, g);
}

int ozaki_pv_one(double *nh, double *nl, const double *ph, const double *pl, const attn_group_t *g)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (cpu_has_avx512())
        return pv_one_x16(nh, nl, ph, pl, g);
#endif
    return pv_one_body(nh, nl, ph, pl, g);
}
