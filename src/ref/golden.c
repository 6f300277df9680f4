/* golden -- reference attention: Dot2 products, double-double softmax, MPFR cross-check */
#include "base/err.h"
#include "ref/golden.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <mpfr.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "num/dd.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define GOLDEN_HAVE_X86 1
#endif

#define GOLDEN_MR 2
#define GOLDEN_NR 8

/* Dot2 (Ogita, Rump, Oishi 2005) per output element, kept as an unrounded pair (s, c):
 * p = a*b with its error pe = fma(a, b, -p) (TwoProd), s <- TwoSum(s, p) with error e,
 * c += e + pe (+ alo*b when A is a double-double). |s + c - exact| <= g(K) sum |a||b|. */
static void dot2_kern_generic(double *sh, double *sl, const double *const ah[GOLDEN_MR],
                              const double *const al[GOLDEN_MR], const double *bp, long K)
{
    for (int r = 0; r < GOLDEN_MR; r++)
        for (int j = 0; j < GOLDEN_NR; j++) {
            double s = 0.0, c = 0.0;
            for (long k = 0; k < K; k++) {
                double a = ah[r][k], b = bp[k * GOLDEN_NR + j];
                double p = a * b;
                double pe = fma(a, b, -p);
                double t = s + p, z = t - s;
                double e = (s - (t - z)) + (p - z);
                s = t;
                double extra = al ? al[r][k] * b : 0.0;
                c = c + ((e + pe) + extra);
            }
            sh[r * GOLDEN_NR + j] = s;
            sl[r * GOLDEN_NR + j] = c;
        }
}

#ifdef GOLDEN_HAVE_X86
__attribute__((target("avx2,fma"))) static void dot2_kern_avx2(double *sh, double *sl,
                                                                const double *const ah[GOLDEN_MR],
                                                                const double *const al[GOLDEN_MR],
                                                                const double *bp, long K)
{
    __m256d s[GOLDEN_MR][2], c[GOLDEN_MR][2];
    for (int r = 0; r < GOLDEN_MR; r++)
        for (int h = 0; h < 2; h++)
            s[r][h] = c[r][h] = _mm256_setzero_pd();
    for (long k = 0; k < K; k++) {
        __m256d b[2] = {_mm256_loadu_pd(bp + k * GOLDEN_NR), _mm256_loadu_pd(bp + k * GOLDEN_NR + 4)};
        for (int r = 0; r < GOLDEN_MR; r++) {
            __m256d a = _mm256_set1_pd(ah[r][k]);
            __m256d alo = _mm256_set1_pd(al ? al[r][k] : 0.0);
            for (int h = 0; h < 2; h++) {
                __m256d p = _mm256_mul_pd(a, b[h]);
                __m256d pe = _mm256_fmsub_pd(a, b[h], p);
                __m256d t = _mm256_add_pd(s[r][h], p);
                __m256d z = _mm256_sub_pd(t, s[r][h]);
                __m256d e = _mm256_add_pd(_mm256_sub_pd(s[r][h], _mm256_sub_pd(t, z)),
                                          _mm256_sub_pd(p, z));
                s[r][h] = t;
                __m256d extra = _mm256_mul_pd(alo, b[h]);
                c[r][h] = _mm256_add_pd(c[r][h], _mm256_add_pd(_mm256_add_pd(e, pe), extra));
            }
        }
    }
    for (int r = 0; r < GOLDEN_MR; r++)
        for (int h = 0; h < 2; h++) {
            _mm256_storeu_pd(sh + r * GOLDEN_NR + 4 * h, s[r][h]);
            _mm256_storeu_pd(sl + r * GOLDEN_NR + 4 * h, c[r][h]);
        }
}

static int golden_have_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#else
static int golden_have_avx2(void) { return 0; }
#endif

/* C = A op(B) with Dot2 per element; A may carry a low part Al (double-double rows).
 * (With al == NULL the generic kernel adds 0.0 * b, which changes nothing: the AVX2 kernel
 * does the same, so both give identical bits.) */
static void dot2_gemm(double *Ch, double *Cl, long ldc, const double *Ah, const double *Al,
                      long lda, const double *B, long ldb, int b_trans, long M, long N, long K)
{
    double *bp = err_malloc((size_t)(K * GOLDEN_NR + 1), sizeof(double));
    double *zero = err_calloc((size_t)K + 1, sizeof(double));
    double sh[GOLDEN_MR * GOLDEN_NR], sl[GOLDEN_MR * GOLDEN_NR];
    int avx = golden_have_avx2();
    for (long j0 = 0; j0 < N; j0 += GOLDEN_NR) {
        long nr = N - j0 < GOLDEN_NR ? N - j0 : GOLDEN_NR;
        for (long k = 0; k < K; k++)
            for (long j = 0; j < GOLDEN_NR; j++)
                bp[k * GOLDEN_NR + j] =
                    j >= nr ? 0.0 : (b_trans ? B[(j0 + j) * ldb + k] : B[k * ldb + j0 + j]);
        for (long i0 = 0; i0 < M; i0 += GOLDEN_MR) {
            long mr = M - i0 < GOLDEN_MR ? M - i0 : GOLDEN_MR;
            const double *ah[GOLDEN_MR], *al[GOLDEN_MR];
            for (long r = 0; r < GOLDEN_MR; r++) {
                ah[r] = r < mr ? Ah + (i0 + r) * lda : zero;
                al[r] = (r < mr && Al) ? Al + (i0 + r) * lda : zero;
            }
#ifdef GOLDEN_HAVE_X86
            if (avx)
                dot2_kern_avx2(sh, sl, ah, Al ? al : NULL, bp, K);
            else
#endif
                dot2_kern_generic(sh, sl, ah, Al ? al : NULL, bp, K);
            for (long r = 0; r < mr; r++)
                for (long j = 0; j < nr; j++) {
                    Ch[(i0 + r) * ldc + j0 + j] = sh[r * GOLDEN_NR + j];
                    Cl[(i0 + r) * ldc + j0 + j] = sl[r * GOLDEN_NR + j];
                }
        }
    }
    (void)avx;
    free(bp);
    free(zero);
}

/* ---- Ozaki scheme: exact products through FP64 GEMM ----
 * Each row (or column) of an operand is cut into s slices of beta bits on the group's own grid:
 * x = sum_a q_a 2^(hi - a beta) with integers |q_a| <= 2^beta. A GEMM of two slices multiplies
 * integers below 2^(beta_a + beta_b) and adds K of them: with beta_a + beta_b + ceil(log2 K)
 * <= 53 every partial sum is an integer below 2^53, so any BLAS, in any order, with any
 * number of threads, returns the exact result. Inputs rounded to BF16/FP16/FP8 have few bits
 * per row, so Q K^T is exact in 1-4 GEMMs; P (a double-double) is cut once and its remainder
 * multiplied in plain FP64 (error 2^-20 smaller than P's; see golden_bound). Inputs whose rows
 * need more slices (FP64 inputs, huge exponent spans) take the Dot2 path above instead. */
#define OZ_CHUNK 1024      /* keys per slice buffer: bounds the working set */
#define OZ_MAX_PAIRS 4     /* slice GEMMs allowed for Q K^T before falling back to Dot2 */
#define OZ_MAX_V_SLICES 3  /* slices of V allowed for P V */
#define OZ_MIN_P_BITS 20   /* bits of P kept exact; the rest goes through plain FP64 */
#define OZ_BAD (INT_MAX / 4)

static long golden_count[2]; /* [0] Ozaki GEMMs used, [1] Dot2 used (per product) */

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

static int oz_ceil_log2(long k)
{
    int b = 0;
    while ((1L << b) < k)
        b++;
    return b;
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
    int B = 53 - oz_ceil_log2(K), best = 0;
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

/* S = Q K^T exactly, as unevaluated pairs (h + l), when the plan allows; returns 0 if not. */
static int oz_scores(double *h, double *l, const attn_group_t *g)
{
    long R = g->R, sk = g->sk, dk = g->dk;
    oz_grid_t *gq = oz_grids(g->q, R, dk, 0), *gk = oz_grids(g->k, sk, dk, 0);
    oz_plan_t p = {0, 0, 0, 0};
    int ok = oz_plan(&p, oz_bits(gq, R), oz_bits(gk, sk), dk, OZ_MAX_PAIRS);
    if (ok) {
        /* Q's slices stacked as one (sa R) x dk matrix: one GEMM per slice of K */
        long ch = sk < OZ_CHUNK ? sk : OZ_CHUNK, M = p.sa * R;
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

/* N = P V with P = ph + pl (rows scaled so that max P = 1): P's first OZ_MIN_P_BITS+ bits
 * times V's exact slices through exact GEMMs, the rest of P times V in plain FP64. Returns
 * N as pairs (nh + nl); 0 if V needs more than OZ_MAX_V_SLICES slices. */
static int oz_pv(double *nh, double *nl, const double *ph, const double *pl, const attn_group_t *g)
{
    long R = g->R, sk = g->sk, dv = g->dv;
    oz_grid_t *gv = oz_grids(g->v, sk, dv, 1), *gp = err_malloc((size_t)R, sizeof(oz_grid_t));
    oz_grid_init(gp, R);
    int nv = oz_bits(gv, dv), B = 53 - oz_ceil_log2(sk), sv = 0, bv = 0, bp = 0;
    for (int s = 1; s <= OZ_MAX_V_SLICES && !sv && nv != OZ_BAD; s++) {
        int b = nv > 0 ? (nv + s - 1) / s : 1;
        if (B - b >= OZ_MIN_P_BITS) {
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
        long ch = sk < OZ_CHUNK ? sk : OZ_CHUNK;
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
    return r;
}

static void golden_group(double *o, const attn_group_t *g, dd_t scale)
{
    long R = g->R, sk = g->sk;
    double *ph = err_malloc((size_t)(R * sk), sizeof(double));
    double *pl = err_malloc((size_t)(R * sk), sizeof(double));
    double *nh = err_malloc((size_t)(R * g->dv), sizeof(double));
    double *nl = err_malloc((size_t)(R * g->dv), sizeof(double));
    dd_t *l = err_malloc((size_t)R, sizeof(dd_t));

    /* S = Q K^T as pairs, then P = exp((S - m) scale) in place, m = max hi over the row. */
    pthread_once(&oz_blas_once, oz_set_blas_threads);
    int exact = oz_scores(ph, pl, g);
    golden_count_path(!exact);
    if (!exact)
        dot2_gemm(ph, pl, sk, g->q, NULL, g->dk, g->k, g->dk, 1, R, sk, g->dk);
    for (long r = 0; r < R; r++) {
        double *h = ph + r * sk, *lo = pl + r * sk;
        long lim = g->limit[r];
        double m = -INFINITY;
        for (long j = 0; j <= lim; j++)
            m = h[j] > m ? h[j] : m;
        dd_t sum = {0.0, 0.0};
        dd_exp_array(h, lo, lim + 1, m, scale);
        for (long j = 0; j < sk; j++) {
            if (j > lim)
                h[j] = lo[j] = 0.0;
            else
                sum = dd_add(sum, (dd_t){h[j], lo[j]});
        }
        l[r] = sum;
    }
    /* O = (P V) / l */
    int sliced = oz_pv(nh, nl, ph, pl, g);
    golden_count_path(!sliced);
    if (!sliced)
        dot2_gemm(nh, nl, g->dv, ph, pl, sk, g->v, g->dv, 0, R, g->dv, sk);
    for (long r = 0; r < R; r++)
        for (long c = 0; c < g->dv; c++) {
            long i = r * g->dv + c;
            dd_t n = dd_fast_two_sum(nh[i], nl[i]);
            dd_t q = l[r].hi > 0 ? dd_div(n, l[r]) : (dd_t){NAN, 0.0};
            o[i] = q.hi + q.lo;
        }
    free(ph);
    free(pl);
    free(nh);
    free(nl);
    free(l);
}

static void golden_group_cb(double *o, const attn_group_t *g, void *arg)
{
    golden_group(o, g, *(const dd_t *)arg);
}

void golden_attention(double *o, const attn_input_t *in, double scale)
{
    dd_t sc = golden_scale(scale, in->s.dk);
    attn_for_groups(o, in, golden_group_cb, &sc);
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
typedef struct {
    double scale;
    long prec;
} golden_mpfr_arg_t;

static void golden_mpfr_group(double *o, const attn_group_t *g, void *varg)
{
    const golden_mpfr_arg_t *arg = varg;
    mpfr_prec_t prec = (mpfr_prec_t)arg->prec;
    mpfr_t sc, acc, t, m, l, *s = err_malloc((size_t)g->sk, sizeof(mpfr_t));
    mpfr_inits2(prec, sc, acc, t, m, l, (mpfr_ptr)0);
    for (long j = 0; j < g->sk; j++)
        mpfr_init2(s[j], prec);
    if (arg->scale > 0) {
        mpfr_set_d(sc, arg->scale, MPFR_RNDN);
    } else {
        mpfr_set_si(sc, g->dk, MPFR_RNDN);
        mpfr_rec_sqrt(sc, sc, MPFR_RNDN);
    }
    for (long r = 0; r < g->R; r++) {
        long lim = g->limit[r];
        for (long j = 0; j <= lim; j++) {
            mpfr_set_zero(s[j], 1);
            for (long k = 0; k < g->dk; k++) {
                mpfr_set_d(t, g->q[r * g->dk + k], MPFR_RNDN);
                mpfr_mul_d(t, t, g->k[j * g->dk + k], MPFR_RNDN);
                mpfr_add(s[j], s[j], t, MPFR_RNDN);
            }
            mpfr_mul(s[j], s[j], sc, MPFR_RNDN);
            if (j == 0 || mpfr_greater_p(s[j], m))
                mpfr_set(m, s[j], MPFR_RNDN);
        }
        mpfr_set_zero(l, 1);
        for (long j = 0; j <= lim; j++) {
            mpfr_sub(s[j], s[j], m, MPFR_RNDN);
            mpfr_exp(s[j], s[j], MPFR_RNDN);
            mpfr_add(l, l, s[j], MPFR_RNDN);
        }
        for (long c = 0; c < g->dv; c++) {
            mpfr_set_zero(acc, 1);
            for (long j = 0; j <= lim; j++) {
                mpfr_mul_d(t, s[j], g->v[j * g->dv + c], MPFR_RNDN);
                mpfr_add(acc, acc, t, MPFR_RNDN);
            }
            mpfr_div(acc, acc, l, MPFR_RNDN);
            o[r * g->dv + c] = mpfr_get_d(acc, MPFR_RNDN);
        }
    }
    for (long j = 0; j < g->sk; j++)
        mpfr_clear(s[j]);
    free(s);
    mpfr_clears(sc, acc, t, m, l, (mpfr_ptr)0);
}

void golden_attention_mpfr(double *o, const attn_input_t *in, double scale, long prec)
{
    golden_mpfr_arg_t arg = {scale, prec};
    attn_for_groups(o, in, golden_mpfr_group, &arg);
}
