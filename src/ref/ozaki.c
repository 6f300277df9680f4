/* ozaki -- exact products through FP64 GEMMs of Ozaki slices (the reference's fast path) */
#include "ref/ozaki.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "num/vec/dd.h"
#include "ref/ozaki_one.h"
#include "ref/ozaki_slices.h"

/* ---- Ozaki scheme: exact products through FP64 GEMM ----
 * Each row (or column) of an operand is cut into s slices of beta bits on the group's own grid:
 * x = sum_a q_a 2^(hi - a beta) with integers |q_a| <= 2^beta. A GEMM of two slices multiplies
 * integers below 2^(beta_a + beta_b) and adds K of them: with beta_a + beta_b + ceil(log2 K)
 * <= 53 every partial sum is an integer below 2^53, so any BLAS, in any order, with any
 * number of threads, returns the exact result. Inputs rounded to BF16/FP16/FP8 have few bits
 * per row, so Q K^T is exact in 1-4 GEMMs; P (a double-double) is cut once and its remainder
 * multiplied in plain FP64 (error 2^-20 smaller than P's; see golden_bound). Inputs whose rows
 * need more slices (FP64 inputs, huge exponent spans) take the Dot2 path above instead. */
#define OZ_MAX_PAIRS 4     /* slice GEMMs allowed for Q K^T before falling back to Dot2 */
#define OZ_MAX_V_SLICES 3  /* slices of V allowed for P V */
#define OZ_BAD (INT_MAX / 4)


/* Grid of one group of values: every |x| < 2^hi, every x a multiple of 2^lo (empty: hi < lo). */
typedef struct {
    int hi, lo;
} oz_grid_t;

static void oz_grid_init(oz_grid_t *g, long n)
{
    for (long i = 0; i < n; i++)
        g[i] = (oz_grid_t){-OZ_BAD, OZ_BAD};
}

static inline void oz_grid_add(oz_grid_t *g, double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    int be = (int)(b >> 52 & 0x7ff), hi, lo;
    uint64_t m = b & 0xfffffffffffffULL;
    if (be == 0x7ff) {
        g->hi = OZ_BAD; /* Inf or NaN: never sliceable */
        g->lo = -OZ_BAD;
        return;
    }
    if (be == 0) {
        if (m == 0)
            return;
        hi = -1074 + 64 - __builtin_clzll(m);
        lo = -1074 + __builtin_ctzll(m);
    } else {
        hi = be - 1022;
        lo = be - 1075 + __builtin_ctzll(m | 1ULL << 52);
    }
    g->hi = hi > g->hi ? hi : g->hi;
    g->lo = lo < g->lo ? lo : g->lo;
}

/* The grid of every row (by_col: every column) of x [rows][cols], malloc'ed. */
static oz_grid_t *oz_grids(const double *x, long rows, long cols, int by_col)
{
    long ng = by_col ? cols : rows;
    oz_grid_t *g = err_malloc((size_t)ng, sizeof(oz_grid_t));
    oz_grid_init(g, ng);
    for (long i = 0; i < rows; i++)
        for (long j = 0; j < cols; j++)
            oz_grid_add(&g[by_col ? j : i], x[i * cols + j]);
    return g;
}

/* Bits the widest group needs; OZ_BAD when a group is non-finite or too far out of range for
 * exact power-of-two scaling. */
static int oz_bits(const oz_grid_t *g, long n)
{
    int bits = 0;
    for (long i = 0; i < n; i++) {
        if (g[i].hi < g[i].lo)
            continue;
        if (g[i].hi > 900 || g[i].lo < -900)
            return OZ_BAD;
        bits = g[i].hi - g[i].lo > bits ? g[i].hi - g[i].lo : bits;
    }
    return bits;
}

/* Slices x[i][j] (n x m, leading dimension ld) into s integer-valued matrices out[a] (n x m,
 * leading dimension ldo)
 * of width beta; the group of (i, j) is j when by_col, else i. Rounding to nearest with the
 * 1.5 2^52 constant: |t| < 2^beta <= 2^50, so t + C - C is t rounded to an integer. */
static void oz_split(double *const *out, long ldo, int s, int beta, const double *x, long n, long m, long ld,
                     const oz_grid_t *g, int by_col)
{
    const double C = 0x1.8p52, step = ldexp(1.0, beta);
    long ng = by_col ? m : n;
    double *f = err_malloc((size_t)ng, sizeof(double));
    for (long i = 0; i < ng; i++)
        f[i] = g[i].hi < g[i].lo ? 0.0 : ldexp(1.0, beta - g[i].hi);
    double *t = err_malloc((size_t)(m > 0 ? m : 1), sizeof(double));
    for (long i = 0; i < n; i++) {
        const double *xr = x + i * ld;
        if (by_col) {
#pragma omp simd
            for (long j = 0; j < m; j++)
                t[j] = xr[j] * f[j];
        } else {
            double fi = f[i];
#pragma omp simd
            for (long j = 0; j < m; j++)
                t[j] = xr[j] * fi;
        }
        for (int a = 0; a < s; a++) {
            double *o = out[a] + i * ldo;
#pragma omp simd
            for (long j = 0; j < m; j++) {
                double q = (t[j] + C) - C;
                o[j] = q;
                t[j] = (t[j] - q) * step;
            }
        }
    }
    free(t);
    free(f);
}

/* Powers of two that turn slice a (0-based) of each of n groups back into values. */
static double *oz_back(const oz_grid_t *g, long n, int a, int beta)
{
    double *f = err_malloc((size_t)n, sizeof(double));
    for (long i = 0; i < n; i++)
        f[i] = g[i].hi < g[i].lo ? 0.0 : ldexp(1.0, g[i].hi - (a + 1) * beta);
    return f;
}

typedef struct {
    int sa, sb, ba, bb;
} oz_plan_t;

/* Fewest slice GEMMs (sa * sb <= max_pairs) that make an exact product of operands needing na
 * and nb bits per group, K terms per sum. */
static int oz_plan(oz_plan_t *p, int na, int nb, long K, int max_pairs)
{
    int B = 53 - ozaki_ceil_log2(K), best = 0;
    if (B > 50)
        B = 50;
    if (na == OZ_BAD || nb == OZ_BAD)
        return 0;
    for (int sb = 1; sb <= max_pairs; sb++) /* ties: fewer slices of b (K, the larger operand) */
        for (int sa = 1; sa * sb <= max_pairs; sa++) {
            int ba = na > 0 ? (na + sa - 1) / sa : 1, bb = nb > 0 ? (nb + sb - 1) / sb : 1;
            if (ba + bb <= B && (!best || sa * sb < best)) {
                *p = (oz_plan_t){sa, sb, ba, bb};
                best = sa * sb;
            }
        }
    return best > 0;
}

static void oz_set_blas_threads(void)
{
    openblas_set_num_threads(1); /* samples run in parallel; each product is exact anyway */
}

static pthread_once_t oz_blas_once = PTHREAD_ONCE_INIT;

void ozaki_init(void)
{
    pthread_once(&oz_blas_once, oz_set_blas_threads);
}

/* S = Q K^T exactly, as unevaluated pairs (h + l), when the plan allows; returns 0 if not. */
int ozaki_scores(double *h, double *l, const attn_group_t *g)
{
    if (ozaki_scores_one(h, l, g))
        return 1;
    long R = g->R, sk = g->sk, dk = g->dk;
    oz_grid_t *gq = oz_grids(g->q, R, dk, 0), *gk = oz_grids(g->k, sk, dk, 0);
    oz_plan_t p = {0, 0, 0, 0};
    int ok = oz_plan(&p, oz_bits(gq, R), oz_bits(gk, sk), dk, OZ_MAX_PAIRS);
    if (ok) {
        /* Q's slices stacked as one (sa R) x dk matrix: one GEMM per slice of K */
        long ch = sk < OZAKI_CHUNK ? sk : OZAKI_CHUNK, M = p.sa * R;
        double *qall = err_malloc((size_t)(M * dk), sizeof(double)), *qs[OZ_MAX_PAIRS] = {NULL},
               *ks[OZ_MAX_PAIRS] = {NULL};
        double *gm = err_malloc((size_t)(M * ch), sizeof(double));
        for (int a = 0; a < p.sa; a++)
            qs[a] = qall + a * R * dk;
        for (int b = 0; b < p.sb; b++)
            ks[b] = err_malloc((size_t)(ch * dk), sizeof(double));
        double *fq[OZ_MAX_PAIRS] = {NULL}, *fk[OZ_MAX_PAIRS] = {NULL};
        for (int a = 0; a < p.sa; a++)
            fq[a] = oz_back(gq, R, a, p.ba);
        for (int b = 0; b < p.sb; b++)
            fk[b] = oz_back(gk, sk, b, p.bb);
        oz_split(qs, dk, p.sa, p.ba, g->q, R, dk, dk, gq, 0);
        for (long j0 = 0; j0 < sk; j0 += ch) {
            long n = sk - j0 < ch ? sk - j0 : ch;
            oz_split(ks, dk, p.sb, p.bb, g->k + j0 * dk, n, dk, dk, gk + j0, 0);
            for (long i = 0; i < R; i++)
                for (long j = 0; j < n; j++)
                    h[i * sk + j0 + j] = l[i * sk + j0 + j] = 0.0;
            for (int b = 0; b < p.sb; b++) {
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)n, (int)dk, 1.0, qall, (int)dk,
                            ks[b], (int)dk, 0.0, gm, (int)n);
                for (int a = 0; a < p.sa; a++)
                    for (long i = 0; i < R; i++) {
                        double fa = fq[a][i];
                        const double *fb = fk[b] + j0, *gr = gm + (a * R + i) * n;
#pragma omp simd
                        for (long j = 0; j < n; j++) {
                            long x = i * sk + j0 + j;
                            dd_t t = dd_two_sum(h[x], gr[j] * fa * fb[j]);
                            h[x] = t.hi;
                            l[x] += t.lo;
                        }
                    }
            }
        }
        for (int a = 0; a < p.sa; a++)
            free(fq[a]);
        for (int b = 0; b < p.sb; b++) {
            free(ks[b]);
            free(fk[b]);
        }
        free(qall);
        free(gm);
    }
    free(gq);
    free(gk);
    return ok;
}

/* N = P V with P = ph + pl (rows scaled so that max P = 1): P's first OZAKI_MIN_P_BITS+ bits
 * times V's exact slices through exact GEMMs, the rest of P times V in plain FP64. Returns
 * N as pairs (nh + nl); 0 if V needs more than OZ_MAX_V_SLICES slices. */
int ozaki_pv(double *nh, double *nl, const double *ph, const double *pl, const attn_group_t *g)
{
    if (ozaki_pv_one(nh, nl, ph, pl, g))
        return 1;
    long R = g->R, sk = g->sk, dv = g->dv;
    oz_grid_t *gv = oz_grids(g->v, sk, dv, 1), *gp = err_malloc((size_t)R, sizeof(oz_grid_t));
    oz_grid_init(gp, R);
    int nv = oz_bits(gv, dv), B = 53 - ozaki_ceil_log2(sk), sv = 0, bv = 0, bp = 0;
    for (int s = 1; s <= OZ_MAX_V_SLICES && !sv && nv != OZ_BAD; s++) {
        int b = nv > 0 ? (nv + s - 1) / s : 1;
        if (B - b >= OZAKI_MIN_P_BITS) {
            sv = s;
            bv = b;
            bp = B - b > 50 ? 50 : B - b;
        }
    }
    if (sv) {
        for (long i = 0; i < R; i++) {
            double mx = 0;
            for (long j = 0; j < sk; j++)
                mx = ph[i * sk + j] > mx ? ph[i * sk + j] : mx;
            oz_grid_add(&gp[i], mx);
            gp[i].lo = gp[i].hi; /* only hi is used: P is cut, not sliced exactly */
        }
        long ch = sk < OZAKI_CHUNK ? sk : OZAKI_CHUNK;
        double *vs[OZ_MAX_V_SLICES] = {NULL}, *acc[OZ_MAX_V_SLICES] = {NULL};
        double *p1 = err_malloc((size_t)(R * ch), sizeof(double)), *pr = err_malloc((size_t)(R * ch), sizeof(double));
        double *tail = err_calloc((size_t)(R * dv), sizeof(double));
        /* V's slices side by side, n x (sv dv): one GEMM per chunk for all of them */
        long W = sv * dv;
        double *vall = err_malloc((size_t)(ch * W), sizeof(double)), *aall = err_calloc((size_t)(R * W), sizeof(double));
        for (int b = 0; b < sv; b++) {
            vs[b] = vall + b * dv;
            acc[b] = aall + b * dv; /* row i of slice b's product at acc[b] + i W */
        }
        const double C = 0x1.8p52;
        double *fp = oz_back(gp, R, 0, bp), *fv[OZ_MAX_V_SLICES] = {NULL};
        for (int b = 0; b < sv; b++)
            fv[b] = oz_back(gv, dv, b, bv);
        for (long j0 = 0; j0 < sk; j0 += ch) {
            long n = sk - j0 < ch ? sk - j0 : ch;
            for (long i = 0; i < R; i++) {
                double f = gp[i].hi < gp[i].lo ? 0.0 : ldexp(1.0, bp - gp[i].hi), back = fp[i];
#pragma omp simd
                for (long j = 0; j < n; j++) {
                    double t = ph[i * sk + j0 + j] * f, q = (t + C) - C;
                    p1[i * n + j] = q;
                    pr[i * n + j] = (t - q) * back + pl[i * sk + j0 + j];
                }
            }
            oz_split(vs, W, sv, bv, g->v + j0 * dv, n, dv, dv, gv, 1);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)R, (int)W, (int)n, 1.0, p1, (int)n, vall,
                        (int)W, 1.0, aall, (int)W);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)R, (int)dv, (int)n, 1.0, pr, (int)n,
                        g->v + j0 * dv, (int)dv, 1.0, tail, (int)dv);
        }
        for (long i = 0; i < R; i++) {
            for (long c = 0; c < dv; c++) {
                long x = i * dv + c;
                dd_t sum = dd_two_sum(acc[0][i * W + c] * fp[i] * fv[0][c], tail[x]);
                for (int b = 1; b < sv; b++)
                    sum = dd_add(sum, (dd_t){acc[b][i * W + c] * fp[i] * fv[b][c], 0.0});
                nh[x] = sum.hi;
                nl[x] = sum.lo;
            }
        }
        for (int b = 0; b < sv; b++)
            free(fv[b]);
        free(vall);
        free(aall);
        free(fp);
        free(p1);
        free(pr);
        free(tail);
    }
    free(gv);
    free(gp);
    return sv > 0;
}
