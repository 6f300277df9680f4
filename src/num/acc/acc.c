/* acc -- matrix products under an accumulation model (sequential k order, vectorized over j) */
#include "base/err.h"
#include "num/acc/acc.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "num/acc/acc_f32.h"
#include "num/acc/acc_tc.h"
#include "num/acc/acc_x16.h"
#include "num/vec/cpu.h"
#include "num/fmt/fmt.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ACC_HAVE_X86 1
#endif

/* Register tile: ACC_MR rows of A against a packed panel of NR columns of op(B) (the FP32
 * models' GEMM: acc_f32.c). Every
 * element of C is one independent sequential accumulation over k = 0..K-1; the tiling
 * only chooses which accumulations run side by side, never their order. */
#define ACC_MR 6
#define ACC_NR64 8
#define ACC_MR16 4 /* rows of the FP16-accumulator tile (its rounding needs the registers) */

/* The kernels continue each element's chain in c [rows][cols] over K more terms (c zero to
 * start); the rows' operands come packed k-major, row r's k-th at ap[k as + r] (acc_pack_a64). */
static void kern64_generic(double *c, const double *ap, long as, const double *bp, long K)
{
    for (int r = 0; r < ACC_MR; r++)
        for (int j = 0; j < ACC_NR64; j++) {
            double s = c[r * ACC_NR64 + j];
            for (long k = 0; k < K; k++)
                s = fma(ap[k * as + r], bp[k * ACC_NR64 + j], s);
            c[r * ACC_NR64 + j] = s;
        }
}

#ifdef ACC_HAVE_X86
__attribute__((target("avx2,fma"))) static void kern64_avx2(double *c, const double *ap, long as, const double *bp,
                                                             long K)
{
    __m256d acc[ACC_MR][2];
    _Pragma("GCC unroll 8")
    for (int r = 0; r < ACC_MR; r++) {
        acc[r][0] = _mm256_loadu_pd(c + r * ACC_NR64);
        acc[r][1] = _mm256_loadu_pd(c + r * ACC_NR64 + 4);
    }
    for (long k = 0; k < K; k++) {
        __m256d b0 = _mm256_loadu_pd(bp + k * ACC_NR64);
        __m256d b1 = _mm256_loadu_pd(bp + k * ACC_NR64 + 4);
        _Pragma("GCC unroll 8")
        for (int r = 0; r < ACC_MR; r++) {
            __m256d av = _mm256_set1_pd(ap[k * as + r]);
            acc[r][0] = _mm256_fmadd_pd(av, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_pd(av, b1, acc[r][1]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < ACC_MR; r++) {
        _mm256_storeu_pd(c + r * ACC_NR64, acc[r][0]);
        _mm256_storeu_pd(c + r * ACC_NR64 + 4, acc[r][1]);
    }
}

#endif

/* A kernel on one register tile: tile rows of A (a[r], K long) against a packed panel bp of
 * `cols` columns, into c [rows][cols]; with the tile's shape. */
typedef void acc_kern64_t(double *c, const double *ap, long as, const double *bp, long K);
typedef struct {
    acc_kern64_t *kern;
    long rows, cols;
    acc_kern64_t *exact; /* the same bits, where A and the panel hold binary32 values (AVX-512 only) */
    long exact_rows;
    acc_kern64_t *bounded; /* exact's, where max_i sum_k |A[i][k]| * max |panel| <= limit */
    double limit;
} acc_tile64_t;

/* Panel of op(B)[0:K][j0:j0+nr], cols wide, zero beyond nr; B read along its rows. */
static void acc_pack64(double *bp, const double *B, long ldb, int b_trans, long j0, long nr, long cols, long K)
{
    if (nr < cols)
        memset(bp, 0, sizeof(double) * (size_t)(K * cols));
    if (b_trans)
        for (long j = 0; j < nr; j++) {
            const double *b = B + (j0 + j) * ldb;
            for (long k = 0; k < K; k++)
                bp[k * cols + j] = b[k];
        }
    else if (nr == ACC_NR64 && cols == ACC_NR64) /* a whole AVX2 panel: copies of constant size, not calls */
        for (long k = 0; k < K; k++)
            memcpy(bp + k * ACC_NR64, B + k * ldb + j0, sizeof(double) * ACC_NR64);
    else
        for (long k = 0; k < K; k++)
            memcpy(bp + k * cols, B + k * ldb + j0, sizeof(double) * (size_t)nr);
}

/* Doubles of C a pass holds (its panels' partial sums, all rows): 512 KB, so that a row-major op(B)
 * is packed for many panels at once and A's chunk, from L2, serves them all; a pass's packed chunk
 * of a row-major op(B) (ACC_PB64 doubles: kc = ACC_PB64 / w rows); the chunk of K of a transposed
 * one's (its panel's chunk in L1). Chunks are whole groups of ACC_FP16_K products, so the FP16
 * accumulator rounds where it would over the whole K. */
#define ACC_CF64 65536
#define ACC_PB64 16384
#define ACC_KC64 192

/* C = A op(B) through a binary64 kernel, as acc_gemm32 cuts it: passes of w columns (panels of
 * t->cols, zero beyond N), each over chunks of K (every kernel continuing its chains from C's
 * buffer), A packed once in tiles of the larger kernel height (a zero row beyond M), each kernel
 * called on its rows of them. */
static void acc_panels64(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans,
                         long M, long N, long K, const acc_tile64_t *t)
{
    const long cols = t->cols, h = t->exact_rows > t->rows ? t->exact_rows : t->rows;
    long mpad = (M + h - 1) / h * h, npan = (N + cols - 1) / cols;
    long wp = b_trans ? 1 : ACC_CF64 / (mpad * cols);
    wp = wp < 1 ? 1 : wp > npan ? npan : wp;
    long w = wp * cols;
    long kc = b_trans || wp == 1 ? ACC_KC64 : ACC_PB64 / w;
    kc = kc < 16 ? 16 : kc > ACC_KC64 ? ACC_KC64 : kc;
    kc = K < kc ? K : kc / ACC_FP16_K * ACC_FP16_K;
    /* A packed whole where passes come back to it, else (one pass: a row-major op(B)) a chunk at a time */
    const int whole = w < N;
    long ak = whole ? K : kc;
    double *bp = err_malloc((size_t)(kc * w + 1), sizeof(double)), *ap = err_malloc((size_t)(mpad * ak + 1), sizeof(double));
    double *cb = err_malloc((size_t)(mpad * w), sizeof(double)), *bmax = err_malloc((size_t)wp, sizeof(double));
    int *f32 = err_malloc((size_t)wp, sizeof(int));
    double asum = 0;
    const int a_f32 = t->exact && acc_f32_values_x16(A, lda, M, K, &asum);
    if (whole)
        acc_pack_a64(ap, A, lda, M, K, h);
    for (long j0 = 0; j0 < N; j0 += w) {
        long np = N - j0 < w ? (N - j0 + cols - 1) / cols : wp;
        memset(cb, 0, sizeof(double) * (size_t)(mpad * np * cols));
        for (long p = 0; p < np; p++)
            bmax[p] = 0;
        for (long k0 = 0; k0 < K; k0 += kc) {
            long kn = K - k0 < kc ? K - k0 : kc;
            const double *bk = b_trans ? B + k0 : B + k0 * ldb;
            if (!whole)
                acc_pack_a64(ap, A + k0, lda, M, kn, h);
            for (long p = 0; p < np; p++) {
                long jp = j0 + p * cols, nr = N - jp < cols ? N - jp : cols;
                double m = 0;
                /* the AVX-512 tile's panels by acc_pack64_x16 (transposed in registers), which also
                 * tells whether they hold binary32 values */
                if (cols == ACC_X16_NR)
                    f32[p] = acc_pack64_x16(bp + p * kn * cols, bk, ldb, b_trans, jp, nr, kn, a_f32 ? &m : NULL) && a_f32;
                else
                    f32[p] = 0, acc_pack64(bp + p * kn * cols, bk, ldb, b_trans, jp, nr, cols, kn);
                /* the largest |op(B)| of the panel's chunks so far bounds every partial sum so far */
                bmax[p] = m > bmax[p] ? m : bmax[p];
            }
            for (long p = 0; p < np; p++) {
                acc_kern64_t *kern = t->kern;
                long rows = t->rows;
                if (f32[p]) {
                    kern = t->bounded && asum * bmax[p] <= t->limit ? t->bounded : t->exact;
                    rows = t->exact_rows;
                }
                for (long i0 = 0; i0 < M; i0 += rows)
                    kern(cb + (p * mpad + i0) * cols, ap + (i0 / h * (whole ? K : kn) + (whole ? k0 : 0)) * h + i0 % h, h,
                         bp + p * kn * cols, kn);
            }
        }
        for (long p = 0; p < np; p++) {
            long jp = j0 + p * cols, nr = N - jp < cols ? N - jp : cols;
            for (long i = 0; i < M; i++)
                memcpy(C + i * ldc + jp, cb + (p * mpad + i) * cols, sizeof(double) * (size_t)nr);
        }
    }
    free(bp);
    free(ap);
    free(cb);
    free(bmax);
    free(f32);
}

/* The tile for a model's kernels: AVX-512 (sixteen columns) where acc_simd allows and the
 * processor has it, else AVX2, else the generic kernel (eight columns each). */
static acc_tile64_t acc_tile64(long rows, acc_kern64_t *x16, acc_kern64_t *avx2, acc_kern64_t *generic)
{
    if (acc_simd >= 2 && cpu_has_avx512())
        return (acc_tile64_t){x16, rows, ACC_X16_NR, NULL, 0, NULL, 0};
    if (avx2 && acc_simd && cpu_has_avx2_fma())
        return (acc_tile64_t){avx2, rows, ACC_NR64, NULL, 0, NULL, 0};
    return (acc_tile64_t){generic, rows, ACC_NR64, NULL, 0, NULL, 0};
}

static void gemm64(double *C, long ldc, const double *A, long lda, const double *B, long ldb,
                   int b_trans, long M, long N, long K)
{
#ifdef ACC_HAVE_X86
    acc_tile64_t t = acc_tile64(ACC_MR, acc_kern64_x16, kern64_avx2, kern64_generic);
    if (t.kern == acc_kern64_x16)
        t.rows = ACC_X16_MR64;
#else
    acc_tile64_t t = acc_tile64(ACC_MR, NULL, NULL, kern64_generic);
#endif
    acc_panels64(C, ldc, A, lda, B, ldb, b_trans, M, N, K, &t);
}

/* The FP16-accumulator model. Per group of ACC_FP16_K products of fp16 (or narrower)
 * operands, C and the products are summed in binary64 in k order (22-bit products within a
 * few binades: no rounding in practice; a wider spread rounds once, far below fp16's
 * precision), then the sum is rounded to binary16; overflow gives infinity as the hardware's
 * fp16 result would. The vector kernel below does the same operations per lane. */
static void kern16_generic(double *c, const double *ap, long as, const double *bp, long K)
{
    for (int r = 0; r < ACC_MR16; r++)
        for (int j = 0; j < ACC_NR64; j++) {
            double acc = c[r * ACC_NR64 + j];
            for (long k0 = 0; k0 < K; k0 += ACC_FP16_K) {
                double s = acc;
                for (long k = k0; k < k0 + ACC_FP16_K && k < K; k++)
                    s += ap[k * as + r] * bp[k * ACC_NR64 + j];
                acc = fmt_round(s, FMT_FP16, FMT_RNE, 0, NULL); /* overflow: inf, as the hardware's fp16 */
            }
            c[r * ACC_NR64 + j] = acc;
        }
}

#ifdef ACC_HAVE_X86
/* binary64 to binary16 (RNE, overflow to infinity, fp16 subnormals) and back, per lane:
 * r = (|x| + c) - c with c = 1.5 * 2^(E + 42) for |x| in [2^E, 2^(E+1)), E >= -14, rounds |x|
 * to a multiple of 2^(E - 10), i.e. to 11 significant bits (fp16's quantum below 2^-14: 2^-24),
 * by one binary64 addition in RNE (|x| + c stays in c's binade, whose ulp is that quantum; c's
 * own bits there are zero, so ties go to the even fp16 significand). |x| >= 65520 (the tie
 * above 65504 rounds to 65536) is infinity; NaN stays NaN; the sign is put back last. */
__attribute__((target("avx2,fma"), always_inline)) static inline __m256d acc_round16_pd(__m256d x)
{
    const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    const __m256i expmask = _mm256_set1_epi64x(0x7ff0000000000000LL);
    const __m256i to_c = _mm256_set1_epi64x((42LL << 52) | (1LL << 51));
    const __m256d cmin = _mm256_castsi256_pd(_mm256_set1_epi64x(((1023LL - 14 + 42) << 52) | (1LL << 51)));
    const __m256d big = _mm256_set1_pd(65520.0), inf = _mm256_set1_pd(INFINITY);
    __m256d ax = _mm256_and_pd(x, absmask), sign = _mm256_andnot_pd(absmask, x);
    __m256d c = _mm256_castsi256_pd(_mm256_add_epi64(_mm256_and_si256(_mm256_castpd_si256(ax), expmask), to_c));
    c = _mm256_max_pd(c, cmin); /* c's wrapped bits for |x| >= 65520 are replaced below */
    __m256d r = _mm256_sub_pd(_mm256_add_pd(ax, c), c);
    r = _mm256_blendv_pd(r, inf, _mm256_cmp_pd(ax, big, _CMP_GE_OQ));
    return _mm256_or_pd(r, sign);
}

/* kern16_generic with the accumulators in registers (ACC_MR16 rows, two vectors of four). */
__attribute__((target("avx2,fma"))) static void kern16_avx2(double *c, const double *ap, long as, const double *bp,
                                                             long K)
{
    __m256d acc[ACC_MR16][2];
    _Pragma("GCC unroll 8")
    for (int r = 0; r < ACC_MR16; r++) {
        acc[r][0] = _mm256_loadu_pd(c + r * ACC_NR64);
        acc[r][1] = _mm256_loadu_pd(c + r * ACC_NR64 + 4);
    }
    for (long k0 = 0; k0 < K; k0 += ACC_FP16_K) {
        long k1 = k0 + ACC_FP16_K < K ? k0 + ACC_FP16_K : K;
        for (long k = k0; k < k1; k++) {
            __m256d b0 = _mm256_loadu_pd(bp + k * ACC_NR64), b1 = _mm256_loadu_pd(bp + k * ACC_NR64 + 4);
            _Pragma("GCC unroll 8")
            for (int r = 0; r < ACC_MR16; r++) {
                __m256d av = _mm256_set1_pd(ap[k * as + r]);
                acc[r][0] = _mm256_add_pd(acc[r][0], _mm256_mul_pd(av, b0));
                acc[r][1] = _mm256_add_pd(acc[r][1], _mm256_mul_pd(av, b1));
            }
        }
        _Pragma("GCC unroll 8")
        for (int r = 0; r < ACC_MR16; r++) {
            acc[r][0] = acc_round16_pd(acc[r][0]);
            acc[r][1] = acc_round16_pd(acc[r][1]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < ACC_MR16; r++) {
        _mm256_storeu_pd(c + r * ACC_NR64, acc[r][0]);
        _mm256_storeu_pd(c + r * ACC_NR64 + 4, acc[r][1]);
    }
}
#endif

static void gemm16(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                   long N, long K)
{
#ifdef ACC_HAVE_X86
    acc_tile64_t t = acc_tile64(ACC_MR16, acc_kern16_x16, kern16_avx2, kern16_generic);
    if (t.kern == acc_kern16_x16) { /* binary32 operands (a format <= fp32): exact products, fma chains */
        t.exact = acc_kern16f_x16, t.exact_rows = ACC_X16_MR16F;
        /* No partial sum reaches 2^15 (so no rounding overflows) where S = sum_k |a_k b_k| is at
         * most the limit: each of the G = ceil(K/4) roundings multiplies a bound by at most
         * (1 + 2^-11)(1 + 2^-53)^4 <= 1 + 2^-10 and adds at most 2^-25 (binary16's subnormal
         * half-quantum), so every sum is below (S + G 2^-25) exp(G / 1024); the limit keeps that
         * below 2^14, a factor 2 for the binary64 evaluation of S and of this bound. */
        double G = (double)((K + ACC_FP16_K - 1) / ACC_FP16_K);
        t.bounded = acc_kern16b_x16, t.limit = ldexp(1, 14) * exp(-G / 1024) - G * ldexp(1, -25);
    }
#else
    acc_tile64_t t = acc_tile64(ACC_MR16, NULL, NULL, kern16_generic);
#endif
    acc_panels64(C, ldc, A, lda, B, ldb, b_trans, M, N, K, &t);
}

void acc_gemm(double *C, long ldc, const double *A, long lda, const double *B, long ldb,
              int b_trans, long M, long N, long K, acc_model_t model)
{
    acc_gemm_f(C, ldc, A, lda, B, ldb, b_trans, M, N, K, model, FMT_FP32, FMT_FP32);
}

void acc_gemm_f(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                long N, long K, acc_model_t model, fmt_id_t fa, fmt_id_t fb)
{
    if (M <= 0 || N <= 0)
        return;
    switch (model) {
    case ACC_FP64:
        gemm64(C, ldc, A, lda, B, ldb, b_trans, M, N, K);
        break;
    case ACC_FP32_FMA:
        acc_gemm32(C, ldc, A, lda, B, ldb, b_trans, M, N, K, 1);
        break;
    case ACC_FP32_MULADD:
        acc_gemm32(C, ldc, A, lda, B, ldb, b_trans, M, N, K, 0);
        break;
    case ACC_FP16:
        gemm16(C, ldc, A, lda, B, ldb, b_trans, M, N, K);
        break;
    case ACC_TC_VOLTA:
    case ACC_TC_AMPERE:
    case ACC_TC_HOPPER:
    case ACC_TC_HOPPER_K8:
    case ACC_TC_HOPPER_FP8:
    case ACC_TC_HOPPER_FP8_FAST:
        acc_tc_gemm(C, ldc, A, lda, B, ldb, b_trans, M, N, K, model, fmt_table[fa].emin, fmt_table[fb].emin);
        break;
    default:
        abort();
    }
}
