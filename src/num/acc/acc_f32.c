/* acc_f32 -- the FP32 models' GEMM (fp32-fma, fp32-mul-add): every element of C one sequential
 * binary32 chain over k, register tiles of ACC_MR32 rows (AVX-512: acc_x16's twelve) against
 * packed panels of ACC_NR32 columns, and the held binary32 A (acc_hold_f32) */
#include "num/acc/acc_f32.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "num/acc/acc_model.h"
#include "num/acc/acc_x16.h"
#include "num/vec/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ACC_HAVE_X86 1
#endif

/* Register tile: ACC_MR32 rows of A against a packed panel of ACC_NR32 columns of op(B). The
 * tiling only chooses which accumulations run side by side, never their order. */
#define ACC_MR32 6
#define ACC_NR32 16

/* c [ACC_MR32][ACC_NR32] continues each element's chain over K more terms from the value it
 * holds (0 to start): the same sequential chain whichever way K is cut into chunks. The rows'
 * operands come packed, k-major: ap[k ACC_MR32 + r] is row r's k-th (acc_pack32_a). */
static void kern32_generic(float *c, const float *ap, const float *bp, long K, int fused)
{
    for (int r = 0; r < ACC_MR32; r++)
        for (int j = 0; j < ACC_NR32; j++) {
            float s = c[r * ACC_NR32 + j];
            for (long k = 0; k < K; k++)
                s = fused ? fmaf(ap[k * ACC_MR32 + r], bp[k * ACC_NR32 + j], s)
                          : s + ap[k * ACC_MR32 + r] * bp[k * ACC_NR32 + j];
            c[r * ACC_NR32 + j] = s;
        }
}

#ifdef ACC_HAVE_X86
/* The register tile with its accumulators in registers: the row loops are unrolled (GCC
 * keeps an array of vectors in memory otherwise) and `fused` is a constant in each copy. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
kern32_tile(float *c, const float *ap, const float *bp, long K, const int fused)
{
    __m256 acc[ACC_MR32][2];
    _Pragma("GCC unroll 8")
    for (int r = 0; r < ACC_MR32; r++) {
        acc[r][0] = _mm256_loadu_ps(c + r * ACC_NR32);
        acc[r][1] = _mm256_loadu_ps(c + r * ACC_NR32 + 8);
    }
    for (long k = 0; k < K; k++) {
        __m256 b0 = _mm256_loadu_ps(bp + k * ACC_NR32);
        __m256 b1 = _mm256_loadu_ps(bp + k * ACC_NR32 + 8);
        _Pragma("GCC unroll 8")
        for (int r = 0; r < ACC_MR32; r++) {
            __m256 av = _mm256_set1_ps(ap[k * ACC_MR32 + r]);
            if (fused) {
                acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
                acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
            } else {
                acc[r][0] = _mm256_add_ps(acc[r][0], _mm256_mul_ps(av, b0));
                acc[r][1] = _mm256_add_ps(acc[r][1], _mm256_mul_ps(av, b1));
            }
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < ACC_MR32; r++) {
        _mm256_storeu_ps(c + r * ACC_NR32, acc[r][0]);
        _mm256_storeu_ps(c + r * ACC_NR32 + 8, acc[r][1]);
    }
}

__attribute__((target("avx2,fma"))) static void kern32_avx2(float *c, const float *ap, const float *bp, long K,
                                                             int fused)
{
    if (fused)
        kern32_tile(c, ap, bp, K, 1);
    else
        kern32_tile(c, ap, bp, K, 0);
}

#endif

#ifdef ACC_HAVE_X86
/* Four rows of B (B[t][k], t < 4) into four consecutive columns of a k-major layout w floats a k
 * (a packed panel of op(B), w = ACC_NR32; a tile of A, w its rows): 4 x 4 blocks converted to
 * binary32 and transposed in registers. */
__attribute__((target("avx2,fma"))) static void acc_pack32_t4(float *bp, const double *B, long ldb, long K, long w)
{
    long k = 0;
    for (; k + 4 <= K; k += 4) {
        for (int t = 0; t < 4; t++) /* 512 bytes ahead in each row, into L2 (fa3-fp8: 0.983 of the time) */
            _mm_prefetch((const char *)(B + t * ldb + k + 64), _MM_HINT_T1);
        __m128 r0 = _mm256_cvtpd_ps(_mm256_loadu_pd(B + k)), r1 = _mm256_cvtpd_ps(_mm256_loadu_pd(B + ldb + k)),
               r2 = _mm256_cvtpd_ps(_mm256_loadu_pd(B + 2 * ldb + k)),
               r3 = _mm256_cvtpd_ps(_mm256_loadu_pd(B + 3 * ldb + k));
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(bp + k * w, r0);
        _mm_storeu_ps(bp + (k + 1) * w, r1);
        _mm_storeu_ps(bp + (k + 2) * w, r2);
        _mm_storeu_ps(bp + (k + 3) * w, r3);
    }
    for (; k < K; k++)
        for (int t = 0; t < 4; t++)
            bp[k * w + t] = (float)B[t * ldb + k];
    _mm256_zeroupper();
}

/* x[0:ACC_NR32] (a panel's row) to binary32 (RNE, as the C conversion). The conversion reads 256
 * bits into a 128-bit register, which GCC does not count as using the upper halves, so it emits no
 * VZEROUPPER; the processor does count it (XINUSE bit 2 stays set), and legacy SSE code that then
 * calls libm's VEX code pays a state transition per call (about 200 ns instead of 5 on an Emerald
 * Rapids guest): cleared here. */
__attribute__((target("avx2,fma"))) static void acc_row_f32_avx2(float *d, const double *x)
{
    for (int i = 0; i < ACC_NR32; i += 4)
        _mm_storeu_ps(d + i, _mm256_cvtpd_ps(_mm256_loadu_pd(x + i)));
    _mm256_zeroupper();
}

/* A panel of C's M rows (x: ACC_NR32 a row) into C's columns (row stride ldc) as binary64 (exact):
 * the first nr of each row, nr = ACC_NR32 in vectors. */
__attribute__((target("avx2,fma"))) static void acc_panel_f64_avx2(double *C, long ldc, const float *x, long M, long nr)
{
    for (long i = 0; i < M; i++, C += ldc, x += ACC_NR32)
        if (nr == ACC_NR32)
            for (int j = 0; j < ACC_NR32; j += 4)
                _mm256_storeu_pd(C + j, _mm256_cvtps_pd(_mm_loadu_ps(x + j)));
        else
            for (long j = 0; j < nr; j++)
                C[j] = x[j];
}

/* The same two in AVX-512 (eight lanes) */
__attribute__((target("avx512f,avx512vl,avx2,fma"))) static void acc_row_f32_x16(float *d, const double *x)
{
    for (int i = 0; i < ACC_NR32; i += 8)
        _mm256_storeu_ps(d + i, _mm512_cvtpd_ps(_mm512_loadu_pd(x + i)));
}

__attribute__((target("avx512f,avx512vl,avx2,fma"))) static void acc_panel_f64_x16(double *C, long ldc, const float *x,
                                                                                 long M, long nr)
{
    for (long i = 0; i < M; i++, C += ldc, x += ACC_NR32)
        if (nr == ACC_NR32)
            for (int j = 0; j < ACC_NR32; j += 8)
                _mm512_storeu_pd(C + j, _mm512_cvtps_pd(_mm256_loadu_ps(x + j)));
        else
            for (long j = 0; j < nr; j++)
                C[j] = x[j];
}

/* acc_panel_rescale's rows of sixteen in AVX-512: each product in binary64 rounded to binary32, as
 * written; the sum of the two binary32 values in binary32 (one rounding of the exact sum, which is the
 * binary64 sum's rounding to binary32: 53 >= 2 x 24 + 2 bits, so rounding twice changes nothing) */
__attribute__((target("avx512f,avx512vl,avx2,fma"))) static void acc_panel_rescale_x16(double *C, long ldc,
                                                                                      const float *x, long M,
                                                                                      const double *rs, double ts)
{
    const __m512d tv = _mm512_set1_pd(ts);
    for (long i = 0; i < M; i++, C += ldc, x += ACC_NR32) {
        const __m512d av = _mm512_set1_pd(rs[i]);
        for (int j = 0; j < ACC_NR32; j += 8) {
            __m256 t = _mm256_loadu_ps(x + j);
            if (ts != 0)
                t = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_cvtps_pd(t), tv));
            __m256 o = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_loadu_pd(C + j), av));
            _mm512_storeu_pd(C + j, _mm512_cvtps_pd(_mm256_add_ps(o, t)));
        }
    }
}
#endif

/* A panel of the product (x: ACC_NR32 a row, M rows) added into C's columns as an online softmax's
 * rescale (vec_rescale_add32): C[i][j] = f32(f32(C[i][j] rs[i]) + t), t the product's value, or
 * f32(t ts) where ts != 0; the first nr of each row. */
static void acc_panel_rescale(double *C, long ldc, const float *x, long M, long nr, const double *rs, double ts)
{
#ifdef ACC_HAVE_X86
    if (nr == ACC_NR32 && acc_simd >= 2 && cpu_has_avx512()) {
        acc_panel_rescale_x16(C, ldc, x, M, rs, ts);
        return;
    }
#endif
    for (long i = 0; i < M; i++, C += ldc, x += ACC_NR32)
        for (long j = 0; j < nr; j++) {
            double t = ts != 0 ? (double)(float)(x[j] * ts) : x[j];
            C[j] = (double)(float)((double)(float)(C[j] * rs[i]) + t);
        }
}

static void acc_panel_f64(double *C, long ldc, const float *x, long M, long nr)
{
#ifdef ACC_HAVE_X86
    if (acc_simd >= 2 && cpu_has_avx512()) {
        acc_panel_f64_x16(C, ldc, x, M, nr);
        return;
    }
    if (cpu_has_avx2_fma()) {
        acc_panel_f64_avx2(C, ldc, x, M, nr);
        return;
    }
#endif
    for (long i = 0; i < M; i++, C += ldc, x += ACC_NR32)
        for (long j = 0; j < nr; j++)
            C[j] = x[j];
}

static void acc_row_f32_generic(float *d, const double *x)
{
    for (int i = 0; i < ACC_NR32; i++)
        d[i] = (float)x[i];
}

/* The widest of the three this processor has (chosen once per packing, not per row) */
typedef void acc_row_f32_t(float *d, const double *x);
static acc_row_f32_t *acc_row_f32(void)
{
#ifdef ACC_HAVE_X86
    if (acc_simd >= 2 && cpu_has_avx512())
        return acc_row_f32_x16;
    if (cpu_has_avx2_fma())
        return acc_row_f32_avx2;
#endif
    return acc_row_f32_generic;
}

/* Panel of B^T [0:K][j0:j0+nr] (B [N][K]) as binary32, ACC_NR32 wide, zero beyond nr
 * (branch-free inner loops: the packing costs about as much per element as the kernel does for
 * M = 128). */
static void acc_pack32_t(float *bp, const double *B, long ldb, long j0, long nr, long K)
{
    if (nr < ACC_NR32)
        memset(bp, 0, sizeof(float) * (size_t)(K * ACC_NR32));
    long j = 0;
#ifdef ACC_HAVE_X86
    if (cpu_has_avx2_fma())
        for (; j + 4 <= nr; j += 4)
            acc_pack32_t4(bp + j, B + (j0 + j) * ldb, ldb, K, ACC_NR32);
#endif
    for (; j < nr; j++) {
        const double *b = B + (j0 + j) * ldb;
        for (long k = 0; k < K; k++)
            bp[k * ACC_NR32 + j] = (float)b[k];
    }
}

/* K is cut into chunks so that a packed chunk of op(B) stays in cache; each element's chain
 * resumes from its binary32 value, so the result is the same sequential chain. */
#define ACC_KC32 192
/* Columns of C a pass holds (binary32, all rows): about 384 KB, so that a row-major op(B) is
 * packed for many panels at once from whole rows (an MLA decode's P V: all 512 columns), and A's
 * chunk, read from L2, serves every panel of the pass. */
#define ACC_CF32 98304
#define ACC_PB32 32768 /* floats of a pass's packed chunk of a row-major op(B): kc = ACC_PB32 / w rows */

/* Rows k0 .. k0 + kn - 1 of a row-major op(B) (B [K][N]), columns j0 .. j0 + w - 1, into
 * w / ACC_NR32 panels of kn x ACC_NR32 (zero beyond N): each row read once, in order. */
static void acc_pack32_rows(float *bp, const double *B, long ldb, long j0, long w, long N, long kn)
{
    long np = w / ACC_NR32, full = N - j0 < w ? N - j0 : w;
    acc_row_f32_t *conv = acc_row_f32();
    for (long k = 0; k < kn; k++) {
        const double *row = B + k * ldb + j0;
        long j = 0;
        for (; j + ACC_NR32 <= full; j += ACC_NR32)
            conv(bp + (j / ACC_NR32 * kn + k) * ACC_NR32, row + j);
        for (; j < np * ACC_NR32; j++)
            bp[(j / ACC_NR32 * kn + k) * ACC_NR32 + j % ACC_NR32] = j < full ? (float)row[j] : 0.0f;
    }
}

/* Tile t's rows r0 .. h - 1 for acc_pack_a32 and acc_pack_a64 (acc_f32.h): one definition, T the
 * tiles' type */
#define ACC_PACK_A_ROWS(name, T)                                                                  \
    static void name(T *ap, const double *A, long lda, long M, long K, long h, long t, long r0) \
    {                                                                                             \
        for (long r = r0; r < h; r++) {                                                           \
            T *d = ap + t * K * h + r;                                                            \
            const double *row = A + (t * h + r) * lda;                                            \
            for (long k = 0; k < K; k++)                                                          \
                d[k * h] = t * h + r < M ? (T)row[k] : (T)0;                                      \
        }                                                                                         \
    }
ACC_PACK_A_ROWS(acc_pack_rows32, float)
ACC_PACK_A_ROWS(acc_pack_rows64, double)

void acc_pack_a64(double *ap, const double *A, long lda, long M, long K, long h)
{
    for (long t = 0; t * h < M; t++)
        acc_pack_rows64(ap, A, lda, M, K, h, t, 0);
}

/* A whole tile's rows four at a time by acc_pack32_t4 (its first h - h % 4), the rest one by one */
void acc_pack_a32(float *ap, const double *A, long lda, long M, long K, long h)
{
    for (long t = 0; t * h < M; t++) {
        long r0 = 0;
#ifdef ACC_HAVE_X86
        if (acc_simd && cpu_has_avx2_fma() && (t + 1) * h <= M)
            for (; r0 + 4 <= h; r0 += 4)
                acc_pack32_t4(ap + t * K * h + r0, A + (t * h + r0) * lda, lda, K, h);
#endif
        acc_pack_rows32(ap, A, lda, M, K, h, t, r0);
    }
}

/* The operand held for this thread's FP32 products (acc_hold_f32), packed as the products ask
 * for it: as A, in tiles of tr rows (tr 0 until then); as a transposed op(B), in panels of
 * ACC_NR32 of its rows, each k-major over all its columns (panels NULL until then). */
static _Thread_local struct {
    const double *a;
    long lda, m, k, tr;
    float *tiles, *panels;
} acc_held32;

void acc_hold_f32(const double *A, long lda, long M, long K)
{
    acc_release_f32();
    if (M < 1 || K < 1)
        return;
    acc_held32.a = A, acc_held32.lda = lda, acc_held32.m = M, acc_held32.k = K;
}

void acc_release_f32(void)
{
    free(acc_held32.tiles);
    free(acc_held32.panels);
    memset(&acc_held32, 0, sizeof acc_held32);
}

/* acc_gemm32, and with rs acc_gemm32_rescale: the product's panels into C as they stand, or added into it */
static void acc_gemm32_to(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans,
                          long M, long N, long K, int fused, const double *rs, double tscale)
{
    /* twelve rows a tile in AVX-512 (sixteen columns in one vector), six in AVX2 */
    const int x16 = acc_simd >= 2 && cpu_has_avx512();
    const long tr = x16 ? ACC_X16_MR32 : ACC_MR32;
    long mpad = (M + tr - 1) / tr * tr;
    /* a pass: w columns of C (panels of ACC_NR32). A transposed op(B) is packed panel by panel
     * from its rows (each K long); a row-major one, for as many panels as C's pass holds, from
     * its rows (each w long), in chunks of kc rows that keep the pass's packed chunk small */
    long npan = (N + ACC_NR32 - 1) / ACC_NR32;
    long wp = b_trans ? 1 : ACC_CF32 / (mpad * ACC_NR32);
    wp = wp < 1 ? 1 : wp > npan ? npan : wp;
    long w = wp * ACC_NR32;
    long kc = b_trans || wp == 1 ? ACC_KC32 : ACC_PB32 / w;
    kc = kc < 16 ? 16 : kc > ACC_KC32 ? ACC_KC32 : kc;
    kc = K < kc ? K : kc;
    float *bp = err_malloc((size_t)(kc * w + 1), sizeof(float));
    /* A as binary32 in tiles of tr rows (acc_pack_a32): the held operand's where A lies inside it from
     * a tile's first row (packed once), else packed here, whole where passes come back to it, else
     * (one pass) a chunk of K at a time; tile t's k-th run at ap + t ts + k tr */
    float *own = NULL;
    const float *ap;
    long ts, hr, hc;
    int chunked = 0;
    if (acc_inside(acc_held32.a, acc_held32.lda, acc_held32.m, acc_held32.k, A, lda, M, K, &hr, &hc) && hr % tr == 0) {
        long hk = acc_held32.k;
        if (acc_held32.tr != tr) {
            free(acc_held32.tiles);
            acc_held32.tiles = err_malloc((size_t)((acc_held32.m + tr - 1) / tr * tr * hk), sizeof(float));
            acc_pack_a32(acc_held32.tiles, acc_held32.a, acc_held32.lda, acc_held32.m, hk, tr);
            acc_held32.tr = tr;
        }
        ts = hk * tr;
        ap = acc_held32.tiles + hr / tr * ts + hc * tr;
    } else {
        chunked = w >= N;
        ts = (chunked ? kc : K) * tr;
        own = err_malloc((size_t)(mpad * (chunked ? kc : K) + 1), sizeof(float));
        if (!chunked)
            acc_pack_a32(own, A, lda, M, K, tr);
        ap = own;
    }
    /* a transposed op(B) inside the held operand from a panel's first row: its panels, packed once
     * (every pass is one panel, and each chunk of K lies in it at hb + (panel hk + k0) ACC_NR32) */
    const float *hb = NULL;
    long hk = acc_held32.k;
    if (b_trans && acc_inside(acc_held32.a, acc_held32.lda, acc_held32.m, hk, B, ldb, N, K, &hr, &hc) &&
        hr % ACC_NR32 == 0) {
        if (!acc_held32.panels) {
            long hm = acc_held32.m;
            acc_held32.panels = err_malloc((size_t)((hm + ACC_NR32 - 1) / ACC_NR32 * ACC_NR32 * hk), sizeof(float));
            for (long j = 0; j < hm; j += ACC_NR32)
                acc_pack32_t(acc_held32.panels + j * hk, acc_held32.a, acc_held32.lda, j,
                             hm - j < ACC_NR32 ? hm - j : ACC_NR32, hk);
        }
        hb = acc_held32.panels + (hr * hk + hc * ACC_NR32);
    }
    float *cf = err_malloc((size_t)(mpad * w), sizeof(float)); /* the pass's panels of C */
    int avx = acc_simd && cpu_has_avx2_fma();
    for (long j0 = 0; j0 < N; j0 += w) {
        long np = N - j0 < w ? (N - j0 + ACC_NR32 - 1) / ACC_NR32 : wp;
        memset(cf, 0, sizeof(float) * (size_t)(mpad * np * ACC_NR32));
        for (long k0 = 0; k0 < K; k0 += kc) {
            long kn = K - k0 < kc ? K - k0 : kc;
            const float *bk = bp;
            if (hb)
                bk = hb + (j0 * hk + k0 * ACC_NR32);
            else if (b_trans)
                acc_pack32_t(bp, B + k0, ldb, j0, N - j0 < ACC_NR32 ? N - j0 : ACC_NR32, kn);
            else
                acc_pack32_rows(bp, B + k0 * ldb, ldb, j0, np * ACC_NR32, N, kn);
            if (chunked)
                acc_pack_a32(own, A + k0, lda, M, kn, tr), ts = kn * tr;
            for (long p = 0; p < np; p++)
                for (long i0 = 0; i0 < M; i0 += tr) {
                    float *c = cf + (p * mpad + i0) * ACC_NR32;
                    const float *b = bk + p * kn * ACC_NR32, *a = ap + i0 / tr * ts + (chunked ? 0 : k0) * tr;
#ifdef ACC_HAVE_X86
                    if (x16)
                        acc_kern32_x16(c, a, b, kn, fused);
                    else if (avx)
                        kern32_avx2(c, a, b, kn, fused);
                    else
#endif
                        kern32_generic(c, a, b, kn, fused);
                }
        }
        for (long p = 0; p < np; p++) {
            long nr = N - j0 - p * ACC_NR32 < ACC_NR32 ? N - j0 - p * ACC_NR32 : ACC_NR32;
            if (rs)
                acc_panel_rescale(C + j0 + p * ACC_NR32, ldc, cf + p * mpad * ACC_NR32, M, nr, rs, tscale);
            else
                acc_panel_f64(C + j0 + p * ACC_NR32, ldc, cf + p * mpad * ACC_NR32, M, nr);
        }
    }
    (void)avx, (void)x16;
    free(bp);
    free(own);
    free(cf);
}

void acc_gemm32(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                long N, long K, int fused)
{
    acc_gemm32_to(C, ldc, A, lda, B, ldb, b_trans, M, N, K, fused, NULL, 0);
}

void acc_gemm32_rescale(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans,
                        long M, long N, long K, int fused, const double *rs, double ts)
{
    acc_gemm32_to(C, ldc, A, lda, B, ldb, b_trans, M, N, K, fused, rs, ts);
}
