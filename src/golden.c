/* golden -- reference attention: Dot2 products, double-double softmax, MPFR cross-check */
#include "golden.h"

#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>

#include "dd.h"

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
    double *bp = malloc(sizeof(double) * (size_t)(K * GOLDEN_NR + 1));
    double *zero = calloc((size_t)K + 1, sizeof(double));
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
    double *ph = malloc(sizeof(double) * (size_t)(R * sk));
    double *pl = malloc(sizeof(double) * (size_t)(R * sk));
    double *nh = malloc(sizeof(double) * (size_t)(R * g->dv));
    double *nl = malloc(sizeof(double) * (size_t)(R * g->dv));
    dd_t *l = malloc(sizeof(dd_t) * (size_t)R);

    /* S = Q K^T as pairs, then P = exp((S - m) scale) in place, m = max hi over the row. */
    dot2_gemm(ph, pl, sk, g->q, NULL, g->dk, g->k, g->dk, 1, R, sk, g->dk);
    for (long r = 0; r < R; r++) {
        double *h = ph + r * sk, *lo = pl + r * sk;
        long lim = g->limit[r];
        double m = -INFINITY;
        for (long j = 0; j <= lim; j++)
            m = h[j] > m ? h[j] : m;
        dd_t sum = {0.0, 0.0};
        for (long j = 0; j < sk; j++) {
            if (j > lim) {
                h[j] = lo[j] = 0.0;
                continue;
            }
            dd_t x = dd_add((dd_t){h[j], lo[j]}, (dd_t){-m, 0.0});
            dd_t p = dd_exp(dd_mul(x, scale));
            h[j] = p.hi;
            lo[j] = p.lo;
            sum = dd_add(sum, p);
        }
        l[r] = sum;
    }
    /* O = (P V) / l */
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

double golden_bound(double o_abs, double w, double a, long sk, long dk)
{
    return 0x1p-53 * (1.0 + 0x1p-50) * o_abs +
           (golden_g(sk) + 2.0 * (golden_g(dk) + 0x1p-100) * a + 0x1p-97) * w;
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
    mpfr_t sc, acc, t, m, l, *s = malloc(sizeof(mpfr_t) * (size_t)g->sk);
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
