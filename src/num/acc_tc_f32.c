/* acc_tc_f32 -- the tensor-core block models in binary32 and int32 lanes, where the operands
 * allow (bit-identical to the scalar block model of acc_tc.c) */
#include "num/acc_tc_int.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "num/acc_model.h"
#include "num/acc_tc.h"
#include "num/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* ---- The block model in binary32 and int32 lanes (eight columns at once) ----
 * Where every operand has at most 12 significant bits (the formats' values: products exact in
 * binary32), exponents keep every product a normal binary32, and results cannot leave binary32's
 * normal range (as tc_rows' safe == 2; a C of zeros and normal binary32 values), each block is: the
 * exponent maximum over binary32 sums of operand exponents; each term |t 2^(f - emax)| < 2^(f+2)
 * scaled exactly in binary32 and truncated to an int32 (cvttps: toward zero, as trunc); the
 * integers summed in two int32 halves of the block (each below 2^31 for B <= 16, f <= 25), the
 * halves joined exactly in binary64; the sum truncated to min(24, f + 1) significant bits
 * (clearing low significand bits of the exact binary64 integer: toward zero) and scaled by
 * 2^(emax - f) exactly: acc_tc_block's result, with half the instructions of tc_rows. */
#define TCF_MR 3
#define TCF_NR 8

__attribute__((target("avx2,fma"), always_inline)) static inline __m256d tcf_join(__m128i h0, __m128i h1, __m256i keep)
{
    __m256d x = _mm256_add_pd(_mm256_cvtepi32_pd(h0), _mm256_cvtepi32_pd(h1)); /* exact: below 2^32 */
    return _mm256_and_pd(x, _mm256_castsi256_pd(keep));
}

__attribute__((target("avx2,fma"), always_inline)) static inline void
tcf_rows(const int mr, double *C, long ldc, long j0, long nr, const float *const a[TCF_MR],
         const float *const ea[TCF_MR], long K, const float *bp, const float *be, int f, int bsz, int acc,
         int promote, int *low)
{
    const __m256 ninf = _mm256_set1_ps(-INFINITY), zero = _mm256_setzero_ps(), emlow = _mm256_set1_ps((float)(f - 126));
    const int p = f + 1 < 24 ? f + 1 : 24;
    const __m256i keep = _mm256_set1_epi64x((long long)(~0ULL << (53 - p))); /* p significant bits of an integer */
    __m256 c[TCF_MR], outer[TCF_MR];
    _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++) {
        outer[r] = zero;
        float in[TCF_NR] = {0};
        for (long j = 0; j < nr && acc; j++)
            in[j] = (float)C[r * ldc + j0 + j]; /* exact: the caller checked */
        c[r] = _mm256_loadu_ps(in);
    }
    for (long k0 = 0; k0 < K; k0 += bsz) {
        long k1 = k0 + bsz < K ? k0 + bsz : K, kh = k0 + (k1 - k0) / 2;
        __m256 em[TCF_MR], up[TCF_MR], live[TCF_MR];
        __m256i s0[TCF_MR], s1[TCF_MR], ei[TCF_MR];
        _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++) { /* C's exponent: its binade (a normal binary32 here) */
            __m256i cb = _mm256_srli_epi32(_mm256_castps_si256(c[r]), 23);
            __m256 ec = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(cb, _mm256_set1_epi32(0xff)),
                                                            _mm256_set1_epi32(127)));
            em[r] = _mm256_blendv_ps(ninf, ec, _mm256_cmp_ps(c[r], zero, _CMP_NEQ_UQ));
        }
        for (long k = k0; k < k1; k++) {
            __m256 bev = _mm256_loadu_ps(be + k * TCF_NR);
            _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++)
                em[r] = _mm256_max_ps(em[r], _mm256_add_ps(_mm256_set1_ps(ea[r][k]), bev));
        }
        _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++) {
            live[r] = _mm256_cmp_ps(em[r], ninf, _CMP_NEQ_UQ);
            /* a block whose maximum is below f - 126 (C alone, tiny): its scales leave binary32 */
            *low |= _mm256_movemask_ps(_mm256_and_ps(live[r], _mm256_cmp_ps(em[r], emlow, _CMP_LT_OQ)));
            ei[r] = _mm256_cvtps_epi32(_mm256_blendv_ps(zero, em[r], live[r])); /* integers: exact */
            up[r] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_sub_epi32(_mm256_set1_epi32(127 + f), ei[r]), 23));
            s0[r] = _mm256_cvttps_epi32(_mm256_mul_ps(c[r], up[r]));
            s1[r] = _mm256_setzero_si256();
        }
        for (long k = k0; k < kh; k++) {
            __m256 bv = _mm256_loadu_ps(bp + k * TCF_NR);
            _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++)
                s0[r] = _mm256_add_epi32(s0[r], _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(a[r][k]), bv), up[r])));
        }
        for (long k = kh; k < k1; k++) {
            __m256 bv = _mm256_loadu_ps(bp + k * TCF_NR);
            _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++)
                s1[r] = _mm256_add_epi32(s1[r], _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(a[r][k]), bv), up[r])));
        }
        _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++) {
            __m256d lo = tcf_join(_mm256_castsi256_si128(s0[r]), _mm256_castsi256_si128(s1[r]), keep);
            __m256d hi = tcf_join(_mm256_extracti128_si256(s0[r], 1), _mm256_extracti128_si256(s1[r], 1), keep);
            /* 2^(emax - f), a normal binary32 here; the product is exact (at most 24 bits, normal) */
            __m256 down = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_set1_epi32(127 - f), ei[r]), 23));
            __m256 x = _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
            c[r] = _mm256_blendv_ps(zero, _mm256_mul_ps(x, down), live[r]);
        }
        /* promotion: the tensor-core value added into the FP32 accumulator (RNE; binary32's
         * own addition is the binary64 sum rounded once, as gemm_tc does it) */
        if (promote && ((k0 + bsz) % promote == 0 || k0 + bsz >= K))
            _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++) {
                outer[r] = _mm256_add_ps(outer[r], c[r]);
                c[r] = zero;
            }
    }
    if (*low) /* C left as it was: the caller recomputes these rows in binary64 lanes */
        return;
    _Pragma("GCC unroll 4") for (int r = 0; r < mr; r++) {
        float out[TCF_NR];
        _mm256_storeu_ps(out, promote ? outer[r] : c[r]);
        for (long j = 0; j < nr; j++)
            C[r * ldc + j0 + j] = out[j];
    }
}

/* tcf_rows with its row count a constant, so that the accumulators stay in registers */
__attribute__((target("avx2,fma"))) static void tcf_rows_n(int mr, double *C, long ldc, long j0, long nr,
                                                           const float *const a[TCF_MR], const float *const ea[TCF_MR],
                                                           long K, const float *bp, const float *be, int f, int bsz,
                                                           int acc, int promote, int *low)
{
    if (mr == 3)
        tcf_rows(3, C, ldc, j0, nr, a, ea, K, bp, be, f, bsz, acc, promote, low);
    else if (mr == 2)
        tcf_rows(2, C, ldc, j0, nr, a, ea, K, bp, be, f, bsz, acc, promote, low);
    else
        tcf_rows(1, C, ldc, j0, nr, a, ea, K, bp, be, f, bsz, acc, promote, low);
}

/* One operand for the binary32 lanes (acc_tcf16_convert's contract, one element). */
static inline void tcf_operand(float *v, float *e, double x, int emin, acc_tcf_range_t *g)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    int ef = (int)(u >> 52 & 0x7ff), ex = ef - 1023;
    ex = ex < emin ? emin : ex;
    int zero = (u << 1) == 0;
    g->ok &= zero || ((u & ((1ULL << 41) - 1)) == 0 && ef != 0x7ff && ef - 1023 >= -126);
    *v = (float)x;
    *e = zero ? -INFINITY : (float)ex;
    if (!zero) {
        g->emx = (float)ex > g->emx ? (float)ex : g->emx;
        g->emn = (float)ex < g->emn ? (float)ex : g->emn;
    }
}

void acc_tcf_convert1(float *v, float *e, const double *x, long n, int emin, acc_tcf_range_t *g)
{
    for (long i = 0; i < n; i++)
        tcf_operand(v + i, e + i, x[i], emin, g);
}

int acc_tcf_check_c1(const double *C, long ldc, long M, long N, double *cmax)
{
    int cok = 1;
    for (long i = 0; i < M && cok; i++)
        for (long j = 0; j < N; j++) {
            double c = C[i * ldc + j], ac = fabs(c);
            cok &= c == 0 || (ac >= 0x1p-126 && ac < 0x1p127 && (double)(float)c == c);
            *cmax = ac > *cmax ? ac : *cmax;
        }
    return cok;
}

/* x[0:n] for the binary32 lanes: AVX-512 where wide (eight at a time), the rest one by one. */
static void tcf_convert(float *v, float *e, const double *x, long n, int emin, acc_tcf_range_t *g, int wide)
{
    long i = wide ? acc_tcf16_convert(v, e, x, n, emin, g) : 0;
    acc_tcf_convert1(v + i, e + i, x + i, n - i, emin, g);
}

/* Exponents e [m][lde] of rows paired for the AVX-512 kernel: q [(m + 1) / 2][k], rows 2h and
 * 2h + 1 (the last row with itself where m is odd). */
static void tcf_pairs(int32_t *q, const float *e, long lde, long m, long k)
{
    for (long h = 0; h < (m + 1) / 2; h++) {
        const float *lo = e + 2 * h * lde, *hi = 2 * h + 1 < m ? lo + lde : lo;
        acc_tcf16_pairs(q + h * k, lo, hi, k);
    }
}

/* The operand held for this thread's products (acc_tc_hold): A [m][k] converted once (its
 * exponents paired from row 0 by the first product whose kernel takes pairs). */
typedef struct {
    const double *a;
    long lda, m, k;
    int emin;
    float *v, *e;
    int32_t *q;
    acc_tcf_range_t g;
} tcf_held_t;

static _Thread_local tcf_held_t tcf_held;

void acc_tc_hold(const double *A, long lda, long M, long K, int emin)
{
    acc_tc_release();
    if (M < 1 || K < 1)
        return;
    tcf_held_t *h = &tcf_held;
    const int wide = acc_simd >= 2 && cpu_has_avx512();
    *h = (tcf_held_t){A, lda, M, K, emin, err_malloc((size_t)(M * K), sizeof(float)),
                      err_malloc((size_t)(M * K), sizeof(float)), NULL, {-INFINITY, INFINITY, 1}};
    for (long i = 0; i < M; i++)
        tcf_convert(h->v + i * K, h->e + i * K, A + i * lda, K, emin, &h->g, wide);
}

void acc_tc_release(void)
{
    free(tcf_held.v);
    free(tcf_held.e);
    free(tcf_held.q);
    memset(&tcf_held, 0, sizeof tcf_held);
}

/* Whether A [M][K] (stride lda, minimum exponent emin) lies inside the held operand: then its
 * first element's row and column there. */
static int tcf_held_has(const double *A, long lda, long M, long K, int emin, long *row, long *col)
{
    const tcf_held_t *h = &tcf_held;
    /* as integers: A need not point into the held array at all */
    uintptr_t a = (uintptr_t)A, h0 = (uintptr_t)h->a;
    if (!h->v || h->lda != lda || h->emin != emin || a < h0 || (a - h0) % sizeof(double))
        return 0;
    long off = (long)((a - h0) / sizeof(double));
    *row = off / lda;
    *col = off % lda;
    return *row + M <= h->m && *col + K <= h->k;
}

/* gemm_tc (with acc, C's own values as the first block's C) in binary32/int32
 * lanes where its conditions hold (then returns 1), else does nothing and returns 0. */
__attribute__((target("avx2,fma"))) int acc_tc_gemm_f32(double *C, long ldc, const double *A, long lda, const double *B,
                                                          long ldb, int b_trans, long M, long N, long K,
                                                          const acc_tc_t *tc, int emin_a, int emin_b, int acc)
{
    /* each int32 half holds at most b/2 terms below 2^(f+2), and C's below 2^(f+1) */
    if ((double)(tc->b / 2 + 1) * ldexp(1.0, tc->f + 2) >= 0x1p31 || M < 1 || N < 1 || K < 1)
        return 0;
    /* the AVX-512 kernel takes panels of sixteen columns and four rows at a time */
    const int wide = acc_simd >= 2 && cpu_has_avx512(), np = wide ? 16 : TCF_NR, mp = wide ? ACC_TCF16_MR : TCF_MR;
    double cmax = 0;
    if (acc && !(wide ? acc_tcf16_check_c : acc_tcf_check_c1)(C, ldc, M, N, &cmax))
        return 0;
    long nbp = (N + np - 1) / np;
    float *bp = err_malloc((size_t)(nbp * K * np + 1), sizeof(float));
    /* op(B)'s exponents: as binary32 values, or int16 in both halves of a lane where the AVX-512
     * kernel takes pairs */
    const int pairs = wide && tc->b >= ACC_TCF16_PAIRS;
    float *be = pairs ? NULL : err_malloc((size_t)(nbp * K * np + 1), sizeof(float));
    int32_t *bq = pairs ? err_malloc((size_t)(nbp * K * np + 1), sizeof(int32_t)) : NULL;
    acc_tcf_range_t ga = {-INFINITY, INFINITY, 1}, gb = {-INFINITY, INFINITY, 1};
    /* A's operands: the held ones where A lies inside them (their range covers A's: the checks
     * below may only be stricter), else converted here; row i at av + i ak */
    float *af = NULL, *ae = NULL;
    int32_t *aq = NULL;
    const float *av, *aw;
    const int32_t *ap = NULL; /* A's exponents paired (pairs): row pair h at ap + h apk */
    long ak, apk = K, hr, hc;
    if (tcf_held_has(A, lda, M, K, emin_a, &hr, &hc)) {
        ak = tcf_held.k;
        av = tcf_held.v + hr * ak + hc;
        aw = tcf_held.e + hr * ak + hc;
        ga = tcf_held.g;
        if (pairs && hr % 2 == 0) { /* the held pairs line up with A's */
            if (!tcf_held.q) {
                tcf_held.q = err_malloc((size_t)((tcf_held.m + 1) / 2 * ak), sizeof(int32_t));
                tcf_pairs(tcf_held.q, tcf_held.e, ak, tcf_held.m, ak);
            }
            ap = tcf_held.q + hr / 2 * ak + hc, apk = ak;
        }
    } else {
        af = err_malloc((size_t)(M * K + 1), sizeof(float));
        ae = err_malloc((size_t)(M * K + 1), sizeof(float));
        for (long i = 0; i < M; i++)
            tcf_convert(af + i * K, ae + i * K, A + i * lda, K, emin_a, &ga, wide);
        av = af, aw = ae, ak = K;
    }
    if (pairs && !ap) {
        aq = err_malloc((size_t)((M + 1) / 2 * K + 1), sizeof(int32_t));
        tcf_pairs(aq, aw, ak, M, K);
        ap = aq;
    }
    /* op(B) by its contiguous lines (a column of op(B) where b_trans, else a row) into panels
     * of np columns, zero beyond N */
    long nl = b_trans ? N : K, ll = b_trans ? K : N;
    /* where wide and b_trans, sixteen columns at a time (a panel's), transposed into it */
    long lines = wide && b_trans ? 16 : 1;
    float *tv = err_malloc((size_t)(lines * ll) + 1, sizeof(float));
    float *te = err_malloc((size_t)(lines * ll) + 1, sizeof(float));
    int32_t *tq = pairs ? err_malloc((size_t)(lines * ll) + 1, sizeof(int32_t)) : NULL;
    for (long j0 = 0; lines > 1 && j0 < N; j0 += 16) {
        for (long t = 0; t < 16; t++) {
            float *v = tv + t * K, *e = te + t * K;
            int32_t *q = pairs ? tq + t * K : NULL;
            if (j0 + t < N)
                tcf_convert(v, e, B + (j0 + t) * ldb, K, emin_b, &gb, wide);
            for (long k = 0; j0 + t >= N && k < K; k++) /* beyond N: zero operands */
                v[k] = 0.0f, e[k] = -INFINITY;
            if (pairs)
                acc_tcf16_pairs(q, e, e, K);
        }
        acc_tcf16_transpose(bp + j0 * K, tv, K);
        acc_tcf16_transpose(pairs ? (void *)(bq + j0 * K) : (void *)(be + j0 * K), pairs ? (void *)tq : (void *)te, K);
    }
    for (long l = 0; lines == 1 && l < nl; l++) {
        tcf_convert(tv, te, B + l * ldb, ll, emin_b, &gb, wide);
        if (pairs)
            acc_tcf16_pairs(tq, te, te, ll);
        if (b_trans) { /* column l of op(B): stride np in its panel */
            long at = l / np * K * np + l % np;
            for (long k = 0; k < K; k++)
                bp[at + k * np] = tv[k];
            if (pairs)
                for (long k = 0; k < K; k++)
                    bq[at + k * np] = tq[k];
            else
                for (long k = 0; k < K; k++)
                    be[at + k * np] = te[k];
        } else /* row l of op(B): np contiguous values in each panel */
            for (long j0 = 0; j0 < N; j0 += np) {
                long w = N - j0 < np ? N - j0 : np, at = j0 * K + l * np;
                if (w == 16) { /* a whole AVX-512 panel's line: a fixed size, moved as vectors */
                    memcpy(bp + at, tv + j0, 16 * sizeof(float));
                    if (pairs)
                        memcpy(bq + at, tq + j0, 16 * sizeof(int32_t));
                    else
                        memcpy(be + at, te + j0, 16 * sizeof(float));
                    continue;
                }
                for (long t = 0; t < w; t++)
                    bp[at + t] = tv[j0 + t];
                if (pairs)
                    for (long t = 0; t < w; t++)
                        bq[at + t] = tq[j0 + t];
                else
                    for (long t = 0; t < w; t++)
                        be[at + t] = te[j0 + t];
            }
    }
    for (long j = N; j < nbp * np; j++)
        for (long k = 0; k < K; k++) {
            long at = (j / np * K + k) * np + j % np;
            bp[at] = 0.0f;
            if (pairs)
                bq[at] = acc_tcf_pair(-INFINITY, -INFINITY);
            else
                be[at] = -INFINITY;
        }
    free(tv);
    free(te);
    free(tq);
    /* every nonzero operand and product a normal binary32 with its bits; C below 2^128 (as
     * tc_rows' safe == 2: |C| and K terms of at most 2^(amax + bmax + 2)); results on a grid no
     * finer than 2^(amin + bmin - f) >= 2^-126, so 2^(f - emax) and 2^(emax - f) normal too
     * in a block with a nonzero product. A block of C alone takes C's binade as its maximum,
     * and a tiny C (below 2^(f - 126): given, or left by cancellation) would scale out of
     * binary32: the kernels report it (low) and leave their tile of C as it was, and the tile
     * goes to the binary64 lanes (acc_tc_gemm_x64). */
    int ok = ga.ok && gb.ok;
    if (ok && ga.emx != -INFINITY && gb.emx != -INFINITY)
        ok = ga.emx <= 127 && gb.emx <= 127 && ga.emn + gb.emn - tc->f >= -126 &&
             log2(cmax + ((double)K + 1) * ldexp(1.0, (int)(ga.emx + gb.emx) + 2)) + 1 < 128;
    for (long j0 = 0; j0 < N && ok; j0 += np) {
        long nr = N - j0 < np ? N - j0 : np;
        const float *pb = bp + j0 * K;
        for (long i = 0; i < M; i += mp) {
            int mr = M - i < mp ? (int)(M - i) : mp, low = 0;
            const float *a[ACC_TCF16_MR], *ea[ACC_TCF16_MR];
            const int32_t *eq[ACC_TCF16_MR / 2] = {NULL, NULL};
            for (int r = 0; r < mp; r++) {
                a[r] = av + (i + (r < mr ? r : 0)) * ak;
                ea[r] = aw + (i + (r < mr ? r : 0)) * ak;
            }
            for (int h = 0; pairs && h < mp / 2; h++) /* i is even: pairs (i + 2h, i + 2h + 1) */
                eq[h] = ap + (i / 2 + (2 * h < mr ? h : 0)) * apk;
            if (wide)
                acc_tcf16_rows(mr, C + i * ldc, ldc, j0, nr, a, ea, eq, K, pb, be ? be + j0 * K : NULL,
                               bq ? bq + j0 * K : NULL, tc->f, tc->b, acc, tc->promote, &low);
            else
                tcf_rows_n(mr, C + i * ldc, ldc, j0, nr, a, ea, K, pb, be + j0 * K, tc->f, tc->b, acc, tc->promote,
                           &low);
            if (low) /* this tile in binary64 lanes (its C untouched; |C| < 2^127 as they need) */
                acc_tc_gemm_x64(C + i * ldc + j0, ldc, A + i * lda, lda, b_trans ? B + j0 * ldb : B + j0, ldb, b_trans,
                                mr, nr, K, tc, emin_a, emin_b, acc);
        }
    }
    free(af);
    free(ae);
    free(aq);
    free(bp);
    free(be);
    free(bq);
    return ok;
}
#else
int acc_tc_gemm_f32(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                    long N, long K, const acc_tc_t *tc, int emin_a, int emin_b, int acc)
{
    (void)C, (void)ldc, (void)A, (void)lda, (void)B, (void)ldb, (void)b_trans, (void)M, (void)N, (void)K, (void)tc;
    (void)emin_a, (void)emin_b, (void)acc;
    return 0;
}

void acc_tc_hold(const double *A, long lda, long M, long K, int emin)
{
    (void)A, (void)lda, (void)M, (void)K, (void)emin;
}

void acc_tc_release(void)
{
}
#endif
