/* dot2 -- products as unrounded double-double pairs (Dot2, Ogita, Rump and Oishi 2005),
 * the reference's fallback where the Ozaki slices do not fit */
#include "ref/dot2.h"

#include <math.h>
#include <stdlib.h>

#include "base/err.h"
#include "num/vec/cpu.h"

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

#endif

/* C = A op(B) with Dot2 per element; A may carry a low part Al (double-double rows).
 * (With al == NULL the generic kernel adds 0.0 * b, which changes nothing: the AVX2 kernel
 * does the same, so both give identical bits.) */
void dot2_gemm(double *Ch, double *Cl, long ldc, const double *Ah, const double *Al,
                      long lda, const double *B, long ldb, int b_trans, long M, long N, long K)
{
    double *bp = err_malloc((size_t)(K * GOLDEN_NR + 1), sizeof(double));
    double *zero = err_calloc((size_t)K + 1, sizeof(double));
    double sh[GOLDEN_MR * GOLDEN_NR], sl[GOLDEN_MR * GOLDEN_NR];
    int avx = cpu_has_avx2_fma();
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

