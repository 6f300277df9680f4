/* acc_tc -- the tensor-core block models: per block of B products, the exponent maximum, each
 * product truncated onto the block's grid of F fraction bits, the sum normalized toward zero
 * into the FP32 accumulator (scalar and AVX2 kernels, bit-identical) */
#include "num/acc/acc_tc.h"
#include "num/acc/acc_tc_int.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "num/vec/cpu.h"
#include "num/vec/dd.h"
#include "num/fmt/fmt.h"
#include "num/vec/vec.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ACC_HAVE_X86 1
#endif

const acc_tc_t acc_tc_models[] = {
    [ACC_TC_VOLTA] = {23, 4, 0},         [ACC_TC_AMPERE] = {24, 8, 0},
    [ACC_TC_HOPPER] = {25, 16, 0},       [ACC_TC_HOPPER_K8] = {25, 8, 0},  [ACC_TC_HOPPER_FP8] = {13, 32, 128},
    [ACC_TC_HOPPER_FP8_FAST] = {13, 32, 0},
};

/* Exponent of a nonzero operand as the tensor core sees it: its binade, or for a subnormal of
 * its format the format's minimum exponent (the hidden bit is 0, the exponent field is emin). */
int acc_tc_exp(double x, int emin)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    int e = (int)(u >> 52 & 0x7ff) - 1023; /* the binade of a normal binary64 */
    if (e == -1023) {                      /* binary64 subnormal (never a format's value) */
        frexp(x, &e);
        e--;
    }
    return e < emin ? emin : e;
}

/* ldexp(x, k) by a multiplication where 2^k is a normal binary64 (exact, and rounding as ldexp
 * does where the product leaves the normal range), ldexp itself elsewhere. */
static inline double acc_tc_ldexp(double x, int k)
{
    return k >= -1022 && k <= 1023 ? x * dd_pow2(k) : ldexp(x, k);
}

double acc_tc_block(const double *t, const int *e, int n, int f)
{
    int emax = INT_MIN;
    for (int i = 0; i < n; i++)
        if (t[i] != 0 && e[i] > emax)
            emax = e[i];
    if (emax == INT_MIN)
        return 0.0;
    /* the common grid 2^(emax - f); each term truncated toward zero onto it (no sticky bit).
     * The integers are below 2^(f+2) each and n <= 33: their sum is exact in binary64. */
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += trunc(acc_tc_ldexp(t[i], f - emax));
    double r = acc_tc_ldexp(sum, emax - f);
    /* normalized and truncated to min(24, f + 1) significant bits, in binary32's range */
    if (r != 0 && f + 1 < 24) {
        int er;
        frexp(r, &er);
        double q = ldexp(1.0, er - (f + 1));
        r = trunc(r / q) * q;
    }
    return fmt_round(r, FMT_FP32, FMT_RZ, 0, NULL);
}

/* Block model per element: c = block(c, products of the next B k's); with promotion, the
 * tensor-core value is added (FP32, RNE) into a separate accumulator every `promote` products.
 * A product's exponent is the sum of its operands' exponents (before normalization: a
 * significand product in [2, 4) does not move it); C's is its binade, -126 when subnormal. */
void acc_tc_gemm_model(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                       long N, long K, const acc_tc_t *tc, int emin_a, int emin_b, int acc)
{
    double t[64];
    int e[64];
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++) {
            double c = acc ? C[i * ldc + j] : 0.0, outer = 0.0;
            for (long k0 = 0; k0 < K; k0 += tc->b) {
                int n = 0;
                e[n] = c != 0 ? acc_tc_exp(c, fmt_table[FMT_FP32].emin) : 0;
                t[n++] = c;
                for (long k = k0; k < k0 + tc->b && k < K; k++) {
                    double a = A[i * lda + k], b = acc_b_at(B, ldb, b_trans, k, j);
                    t[n] = a * b;
                    e[n] = t[n] != 0 ? acc_tc_exp(a, emin_a) + acc_tc_exp(b, emin_b) : 0;
                    n++;
                }
                c = acc_tc_block(t, e, n, tc->f);
                if (tc->promote && ((k0 + tc->b) % tc->promote == 0 || k0 + tc->b >= K)) {
                    outer = fmt_fp32(outer + c);
                    c = 0.0;
                }
            }
            C[i * ldc + j] = tc->promote ? outer : c;
        }
}

#ifdef ACC_HAVE_X86
/* Operand exponents as the tensor core sees them (acc_tc_exp), as doubles; -infinity for a
 * zero, so that a product with a zero operand (and only such a product is zero: the formats'
 * products never underflow binary64) drops out of the block's maximum by itself. */
static void acc_tc_exps(double *e, const double *x, long n, int emin)
{
    for (long i = 0; i < n; i++)
        e[i] = x[i] != 0 ? (double)acc_tc_exp(x[i], emin) : -INFINITY;
}

/* The block model of acc_tc_gemm_model on four output columns at once: the same operations as
 * acc_tc_block on each lane (exact products, emax over the nonzero terms, truncation onto the
 * grid 2^(emax - f), integer sum, normalization to f + 1 bits, RZ to binary32). The integer
 * sum is exact, so its order is free; it starts from +0 as the scalar one does. A lane whose
 * block result leaves binary32's normal range (or whose scale would) is redone by
 * acc_tc_block, so every element equals the scalar model's. Rows go mr at a time so that
 * independent chains hide the latencies. With acc, C's own values are the first block's C
 * (the caller checked them: finite binary32 magnitudes). */
#define TC_MR 4
__attribute__((target("avx2,fma"), always_inline)) static inline void
tc_rows(int mr, double *C, long ldc, long j0, long nr, const double *const a[TC_MR], const double *const ea[TC_MR],
        long K, const double *bp, const double *be, const acc_tc_t *tc, int safe, int acc)
{
    const __m256d ninf = _mm256_set1_pd(-INFINITY), zero = _mm256_setzero_pd();
    const __m256d lomask = _mm256_castsi256_pd(_mm256_set1_epi64x(~((1LL << 29) - 1)));
    const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    const int f = tc->f, norm = f + 1 < 24;
    __m256d c[TC_MR], outer[TC_MR], emax[TC_MR], up[TC_MR], down[TC_MR], live[TC_MR], sum[TC_MR];
    _Pragma("GCC unroll 4")
    for (int r = 0; r < mr; r++) {
        c[r] = outer[r] = zero;
        if (acc) {
            double in[4] = {0, 0, 0, 0};
            for (long j = 0; j < nr; j++)
                in[j] = C[r * ldc + j0 + j];
            c[r] = _mm256_loadu_pd(in);
        }
    }
    for (long k0 = 0; k0 < K; k0 += tc->b) {
        long k1 = k0 + tc->b < K ? k0 + tc->b : K;
        _Pragma("GCC unroll 4")
        for (int r = 0; r < mr; r++) { /* C's exponent: its binade, at least binary32's emin */
            /* the exponent field as a double: its bits OR 2^52's, minus 2^52 + 1023 */
            __m256i fld = _mm256_srli_epi64(_mm256_castpd_si256(_mm256_and_pd(c[r], absmask)), 52);
            __m256d ef = _mm256_castsi256_pd(_mm256_or_si256(fld, _mm256_set1_epi64x(0x4330000000000000LL)));
            __m256d ec = _mm256_max_pd(_mm256_sub_pd(ef, _mm256_set1_pd(0x1p52 + 1023.0)), _mm256_set1_pd(-126.0));
            emax[r] = _mm256_blendv_pd(ninf, ec, _mm256_cmp_pd(c[r], zero, _CMP_NEQ_UQ));
        }
        for (long k = k0; k < k1; k++) {
            __m256d bev = _mm256_loadu_pd(be + k * 4);
            _Pragma("GCC unroll 4")
            for (int r = 0; r < mr; r++) /* a zero operand's exponent is -inf */
                emax[r] = _mm256_max_pd(emax[r], _mm256_add_pd(_mm256_set1_pd(ea[r][k]), bev));
        }
        _Pragma("GCC unroll 4")
        for (int r = 0; r < mr; r++) {
            live[r] = _mm256_cmp_pd(emax[r], ninf, _CMP_NEQ_UQ);
            emax[r] = _mm256_blendv_pd(zero, emax[r], live[r]);
            __m256i e64 = _mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(emax[r]));
            up[r] = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_sub_epi64(_mm256_set1_epi64x(1023 + f), e64), 52));
            down[r] = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(_mm256_set1_epi64x(1023 - f), e64), 52));
            sum[r] = _mm256_add_pd(zero, _mm256_round_pd(_mm256_mul_pd(c[r], up[r]), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC));
        }
        for (long k = k0; k < k1; k++) {
            __m256d bv = _mm256_loadu_pd(bp + k * 4);
            _Pragma("GCC unroll 4")
            for (int r = 0; r < mr; r++) {
                __m256d t = _mm256_mul_pd(_mm256_set1_pd(a[r][k]), bv);
                sum[r] = _mm256_add_pd(sum[r], _mm256_round_pd(_mm256_mul_pd(t, up[r]), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC));
            }
        }
        _Pragma("GCC unroll 4")
        for (int r = 0; r < mr; r++) {
            __m256d x = _mm256_mul_pd(sum[r], down[r]);
            if (norm) /* keep f + 1 significant bits, toward zero */
                x = _mm256_castsi256_pd(_mm256_and_si256(_mm256_castpd_si256(x), _mm256_slli_epi64(_mm256_set1_epi64x(-1), 52 - f)));
            x = _mm256_blendv_pd(zero, _mm256_and_pd(x, lomask), live[r]); /* RZ to binary32 (normal range) */
            int om = 0;
            if (safe < 2) { /* results that may leave binary32's normal range */
                __m256d ax = _mm256_and_pd(x, absmask);
                __m256d odd = _mm256_or_pd(_mm256_cmp_pd(ax, _mm256_set1_pd(0x1p128), _CMP_GE_OQ),
                                           _mm256_and_pd(_mm256_cmp_pd(ax, _mm256_set1_pd(0x1p-126), _CMP_LT_OQ),
                                                         _mm256_cmp_pd(ax, zero, _CMP_NEQ_UQ)));
                if (!safe) /* a block scale 2^(f - emax) out of binary64's range */
                    odd = _mm256_or_pd(odd, _mm256_and_pd(live[r], _mm256_or_pd(_mm256_cmp_pd(emax[r], _mm256_set1_pd(900.0 - f), _CMP_GT_OQ),
                                                                                _mm256_cmp_pd(emax[r], _mm256_set1_pd(f - 900.0), _CMP_LT_OQ))));
                om = _mm256_movemask_pd(odd);
            }
            if (om) {
                double cl[4], xl[4];
                _mm256_storeu_pd(cl, c[r]);
                _mm256_storeu_pd(xl, x);
                for (int l = 0; l < 4; l++)
                    if (om >> l & 1) {
                        double t[64];
                        int e[64], n = 0;
                        e[n] = cl[l] != 0 ? acc_tc_exp(cl[l], fmt_table[FMT_FP32].emin) : 0;
                        t[n++] = cl[l];
                        for (long k = k0; k < k1; k++) {
                            t[n] = a[r][k] * bp[k * 4 + l];
                            e[n] = t[n] != 0 ? (int)(ea[r][k] + be[k * 4 + l]) : 0;
                            n++;
                        }
                        xl[l] = acc_tc_block(t, e, n, f);
                    }
                x = _mm256_loadu_pd(xl);
            }
            c[r] = x;
            if (tc->promote && ((k0 + tc->b) % tc->promote == 0 || k0 + tc->b >= K)) {
                outer[r] = _mm256_cvtps_pd(_mm256_cvtpd_ps(_mm256_add_pd(outer[r], c[r])));
                c[r] = zero;
            }
        }
    }
    _Pragma("GCC unroll 4")
    for (int r = 0; r < mr; r++) {
        double out[4];
        _mm256_storeu_pd(out, tc->promote ? outer[r] : c[r]);
        for (long j = 0; j < nr; j++)
            C[r * ldc + j0 + j] = out[j];
    }
}

__attribute__((target("avx2,fma"))) void acc_tc_gemm_x64(double *C, long ldc, const double *A, long lda,
                                                          const double *B, long ldb, int b_trans, long M, long N,
                                                          long K, const acc_tc_t *tc, int emin_a, int emin_b, int acc)
{
    double *bp = err_malloc((size_t)(K * 4 + 1), sizeof(double)), *be = err_malloc((size_t)(K * 4 + 1), sizeof(double));
    double *ae = err_malloc((size_t)(M * K + 1), sizeof(double));
    for (long i = 0; i < M; i++)
        acc_tc_exps(ae + i * K, A + i * lda, K, emin_a);
    /* safe (per panel): every product's exponent (and C's, within binary32's) keeps
     * 2^(f - emax) and 2^(emax - f) normal, so the per-block range check can go */
    double amx = -INFINITY, amn = INFINITY;
    for (long i = 0; i < M * K; i++)
        if (ae[i] != -INFINITY) {
            amx = ae[i] > amx ? ae[i] : amx;
            amn = ae[i] < amn ? ae[i] : amn;
        }
    for (long j0 = 0; j0 < N; j0 += 4) {
        long nr = N - j0 < 4 ? N - j0 : 4;
        for (long k = 0; k < K; k++)
            for (long j = 0; j < 4; j++) {
                bp[k * 4 + j] = j < nr ? acc_b_at(B, ldb, b_trans, k, j0 + j) : 0.0;
                be[k * 4 + j] = bp[k * 4 + j] != 0 ? (double)acc_tc_exp(bp[k * 4 + j], emin_b) : -INFINITY;
            }
        double bmx = -INFINITY, bmn = INFINITY;
        for (long i = 0; i < K * 4; i++)
            if (be[i] != -INFINITY) {
                bmx = be[i] > bmx ? be[i] : bmx;
                bmn = be[i] < bmn ? be[i] : bmn;
            }
        double hi = amx + bmx > 128 ? amx + bmx : 128, lo = amn + bmn < -149 ? amn + bmn : -149;
        int safe = amx == -INFINITY || bmx == -INFINITY || (hi < 900.0 - tc->f && lo > tc->f - 900.0);
        /* 2: nor can a result leave binary32's normal range: the accumulator stays below
         * K 2^(amax + bmax + 2) < 2^128, and every nonzero result lies on a grid no finer
         * than 2^(amin + bmin - f) >= 2^-126 (or is C itself, a normal binary32) */
        if (safe && !acc && (amx == -INFINITY || bmx == -INFINITY ||
                     (amx + bmx + 2 + log2((double)K + 1) + 1 < 128 && amn + bmn - tc->f >= -126)))
            safe = 2;
        long i = 0;
        for (; i + TC_MR <= M; i += TC_MR) {
            const double *a[TC_MR], *ea[TC_MR];
            for (int r = 0; r < TC_MR; r++) {
                a[r] = A + (i + r) * lda;
                ea[r] = ae + (i + r) * K;
            }
            tc_rows(TC_MR, C + i * ldc, ldc, j0, nr, a, ea, K, bp, be, tc, safe, acc);
        }
        for (; i < M; i++) {
            const double *a[TC_MR] = {A + i * lda}, *ea[TC_MR] = {ae + i * K};
            tc_rows(1, C + i * ldc, ldc, j0, nr, a, ea, K, bp, be, tc, safe, acc);
        }
    }
    free(bp);
    free(be);
    free(ae);
}

#endif

/* C += A op(B) after the binary32 lanes declined: the binary64 lanes where C suits them (finite binary32
 * magnitudes), else the scalar model, which takes any double */
void acc_tc_gemm_acc64(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                       long N, long K, const acc_tc_t *tc, int emin_a, int emin_b)
{
#ifdef ACC_HAVE_X86
    if (acc_simd && cpu_has_avx2_fma()) {
        int cok = 1;
        for (long i = 0; i < M && cok; i++)
            for (long j = 0; j < N && cok; j++)
                cok = fabs(C[i * ldc + j]) < 0x1p128;
        if (cok) {
            acc_tc_gemm_x64(C, ldc, A, lda, B, ldb, b_trans, M, N, K, tc, emin_a, emin_b, 1);
            return;
        }
    }
#endif
    acc_tc_gemm_model(C, ldc, A, lda, B, ldb, b_trans, M, N, K, tc, emin_a, emin_b, 1);
}
