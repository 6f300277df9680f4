/* ozaki_u8 -- a slice product exactly through byte digit planes and AMX (ozaki_u8.h) */
#include "ref/ozaki_u8.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "num/vec/cpu.h"
#include "num/acc/gemm_u8.h"

#define OZ8_MAX_DIGITS 7 /* u below 2^56 */

int ozaki_u8_simd = 1;

static int oz8_digits(int b, int nonneg)
{
    return nonneg ? (b + 7) / 8 : (b + 2 + 7) / 8;
}

int ozaki_u8_usable(int ba, int bb, long K)
{
    int na = oz8_digits(ba, 0), nb = oz8_digits(bb, 0);
    /* the largest weight 2^(8 (na + nb - 2)) below 2^64: the 64-bit sums' shifts stay defined */
    return gemm_u8_amx && gemm_u8_has_amx() && na <= OZ8_MAX_DIGITS && nb <= OZ8_MAX_DIGITS && na + nb - 2 < 8 &&
           gemm_u8_fits(na < nb ? na : nb, K);
}

/* One row of n integers (doubles, |x| <= 2^b): u = x + 2^b, its nd bytes into planes d + i ld,
 * and the row's sum of u; nd a constant where the caller's switch makes it one. */
static inline __attribute__((always_inline)) int64_t oz8_split_nd(uint8_t *d, long ld, const double *x, long n,
                                                                  const int nd, int64_t c)
{
    int64_t sum = 0;
    for (long j = 0; j < n; j++) {
        uint64_t u = (uint64_t)((int64_t)x[j] + c);
        sum += (int64_t)u;
        for (int i = 0; i < nd; i++)
            d[i * ld + j] = (uint8_t)(u >> (8 * i));
    }
    return sum;
}

static inline __attribute__((always_inline)) int64_t oz8_split_body(uint8_t *d, long ld, const double *x, long n,
                                                                    int nd, int64_t c)
{
    switch (nd) {
    case 1: return oz8_split_nd(d, ld, x, n, 1, c);
    case 2: return oz8_split_nd(d, ld, x, n, 2, c);
    case 3: return oz8_split_nd(d, ld, x, n, 3, c);
    case 4: return oz8_split_nd(d, ld, x, n, 4, c);
    default: return oz8_split_nd(d, ld, x, n, nd, c);
    }
}

/* g = acc - ra - rb[j] (modulo 2^64; the result below 2^53 in magnitude) as doubles: one row */
static inline __attribute__((always_inline)) void oz8_double_body(double *g, const uint64_t *acc, long n, uint64_t ra,
                                                                  const uint64_t *rb)
{
#pragma omp simd
    for (long j = 0; j < n; j++)
        g[j] = (double)(int64_t)(acc[j] - ra - rb[j]);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define OZ8_WIDE __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2")))
#include <immintrin.h>
/* oz8_split_body eight values at a time: the conversion exact (integers below 2^53), each byte
 * plane by a shift and a truncating narrowing (VPMOVQB) */
OZ8_WIDE static int64_t oz8_split_wide(uint8_t *d, long ld, const double *x, long n, int nd, int64_t c)
{
    const __m512i vc = _mm512_set1_epi64(c);
    __m512i vs = _mm512_setzero_si512();
    long j = 0;
    for (; j + 8 <= n; j += 8) {
        _mm_prefetch((const char *)(x + j + 512), _MM_HINT_T1); /* 4 kB ahead (Golden: 0.989 of the time) */
        __m512i u = _mm512_add_epi64(_mm512_cvttpd_epi64(_mm512_loadu_pd(x + j)), vc);
        vs = _mm512_add_epi64(vs, u);
        for (int i = 0; i < nd; i++)
            _mm_storel_epi64((__m128i *)(d + i * ld + j),
                             _mm512_cvtepi64_epi8(_mm512_srli_epi64(u, (unsigned)(8 * i))));
    }
    return _mm512_reduce_add_epi64(vs) + oz8_split_body(d + j, ld, x + j, n - j, nd, c);
}
OZ8_WIDE static void oz8_double_wide(double *g, const uint64_t *acc, long n, uint64_t ra, const uint64_t *rb)
{
    oz8_double_body(g, acc, n, ra, rb);
}
#define OZ8_WIDE_OK (ozaki_u8_simd && cpu_has_avx512())
#else
#define OZ8_WIDE_OK 0
#define oz8_double_wide oz8_double_body
#endif

/* Column sums of u = x + c, x [k][n] (row stride n). */
static inline __attribute__((always_inline)) void oz8_colsum_body(int64_t *sum, const double *x, long k, long n,
                                                                  int64_t c)
{
    for (long j = 0; j < n; j++)
        sum[j] = 0;
    for (long r = 0; r < k; r++)
#pragma omp simd
        for (long j = 0; j < n; j++)
            sum[j] += (int64_t)x[r * n + j] + c;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* u = x + c for the (up to) 16 values at x under mask m, zeros elsewhere: two vectors of eight */
OZ8_WIDE static inline __attribute__((always_inline)) void oz8_u16(__m512i *u, const double *x, __mmask16 m, __m512i vc)
{
    __mmask8 m0 = (__mmask8)m, m1 = (__mmask8)(m >> 8);
    u[0] = _mm512_maskz_add_epi64(m0, _mm512_cvttpd_epi64(_mm512_maskz_loadu_pd(m0, x)), vc);
    u[1] = _mm512_maskz_add_epi64(m1, _mm512_cvttpd_epi64(_mm512_maskz_loadu_pd(m1, x + 8)), vc);
}

/* Byte i of the 16 values in u: 16 bytes */
OZ8_WIDE static inline __attribute__((always_inline)) __m128i oz8_byte16(const __m512i *u, int i)
{
    __m128i lo = _mm512_cvtepi64_epi8(_mm512_srli_epi64(u[0], (unsigned)(8 * i)));
    return _mm_unpacklo_epi64(lo, _mm512_cvtepi64_epi8(_mm512_srli_epi64(u[1], (unsigned)(8 * i))));
}

/* A slice given as its transpose x [k][rows] straight into B's packed planes (gemm_u8_pack_bt's layout): each line
 * of a tile, four k of sixteen columns, from the four rows of x, their bytes interleaved as the pack does (the
 * column sums on the way); beyond x's rows and columns, zeros. One pass over x, no planes in between. */
OZ8_WIDE static void oz8_planes_bt_wide(ozaki_u8_t *z, const double *x)
{
    long rows = z->rows, k = z->k, kp = gemm_u8_kpad(k), np = gemm_u8_mpad(rows);
    const __m512i vc = _mm512_set1_epi64(z->c);
    for (long j = 0; j < rows; j++)
        z->rsum[j] = 0;
    for (long t = 0; t < kp / 4; t++)
        for (long nb = 0; nb < np; nb += 16) {
            __m512i u[4][2];
            long w = rows - nb < 16 ? (rows - nb > 0 ? rows - nb : 0) : 16;
            __mmask16 m = (__mmask16)((1u << w) - 1);
            for (int r = 0; r < 4; r++)
                if (4 * t + r < k)
                    oz8_u16(u[r], x + (4 * t + r) * rows + nb, m, vc);
                else /* a line of zeros beyond the slice's k */
                    u[r][0] = u[r][1] = _mm512_setzero_si512();
            if (w == 16) {
                __m512i s0 = _mm512_add_epi64(_mm512_add_epi64(u[0][0], u[1][0]), _mm512_add_epi64(u[2][0], u[3][0]));
                __m512i s1 = _mm512_add_epi64(_mm512_add_epi64(u[0][1], u[1][1]), _mm512_add_epi64(u[2][1], u[3][1]));
                _mm512_storeu_si512(z->rsum + nb, _mm512_add_epi64(_mm512_loadu_si512(z->rsum + nb), s0));
                _mm512_storeu_si512(z->rsum + nb + 8, _mm512_add_epi64(_mm512_loadu_si512(z->rsum + nb + 8), s1));
            } else
                for (int r = 0; r < 4; r++) {
                    int64_t v[16];
                    _mm512_storeu_si512(v, u[r][0]);
                    _mm512_storeu_si512(v + 8, u[r][1]);
                    for (long c = 0; c < w; c++)
                        z->rsum[nb + c] += v[c];
                }
            for (int i = 0; i < z->nd; i++) {
                __m128i r0 = oz8_byte16(u[0], i), r1 = oz8_byte16(u[1], i), r2 = oz8_byte16(u[2], i);
                __m128i r3 = oz8_byte16(u[3], i);
                __m128i a0 = _mm_unpacklo_epi8(r0, r1), a1 = _mm_unpackhi_epi8(r0, r1);
                __m128i b0 = _mm_unpacklo_epi8(r2, r3), b1 = _mm_unpackhi_epi8(r2, r3);
                uint8_t *line = z->packed + i * z->plane + nb * kp + t * 64;
                _mm_storeu_si128((__m128i *)line, _mm_unpacklo_epi16(a0, b0));
                _mm_storeu_si128((__m128i *)(line + 16), _mm_unpackhi_epi16(a0, b0));
                _mm_storeu_si128((__m128i *)(line + 32), _mm_unpacklo_epi16(a1, b1));
                _mm_storeu_si128((__m128i *)(line + 48), _mm_unpackhi_epi16(a1, b1));
            }
        }
}

/* A or B slice x [rows][k] straight into its packed planes: A's rows split in place (its planes are padded rows),
 * B's sixteen rows at a time into a padded buffer, then transposed into their block. */
OZ8_WIDE static void oz8_planes_rows_wide(ozaki_u8_t *z, const double *x, ozaki_u8_side_t side)
{
    long rows = z->rows, k = z->k, kp = gemm_u8_kpad(k);
    if (side == OZAKI_U8_A) {
        if (z->plane != rows * k) /* the padding's zeros */
            memset(z->packed, 0, (size_t)(z->plane * z->nd));
        for (long r = 0; r < rows; r++)
            z->rsum[r] = oz8_split_wide(z->packed + r * kp, z->plane, x + r * k, k, z->nd, z->c);
        return;
    }
    uint8_t *buf = err_calloc((size_t)(16 * kp * z->nd), 1); /* [nd][16][kp], the padding zero */
    for (long nb = 0; nb < gemm_u8_mpad(rows); nb += 16) {
        for (long r = 0; r < 16; r++) {
            if (nb + r < rows)
                z->rsum[nb + r] = oz8_split_wide(buf + r * kp, 16 * kp, x + (nb + r) * k, k, z->nd, z->c);
            else
                for (int i = 0; i < z->nd; i++)
                    memset(buf + i * 16 * kp + r * kp, 0, (size_t)kp);
        }
        for (int i = 0; i < z->nd; i++)
            gemm_u8_pack_b16(z->packed + i * z->plane + nb * kp, buf + i * 16 * kp, kp);
    }
    free(buf);
}
#endif

void ozaki_u8_planes(ozaki_u8_t *z, const double *x, long rows, long k, int b, int nonneg, ozaki_u8_side_t side)
{
    z->nd = oz8_digits(b, nonneg);
    z->b = b;
    z->c = nonneg ? 0 : (int64_t)1 << b;
    z->rows = rows;
    z->k = k;
    z->plane = side == OZAKI_U8_A ? gemm_u8_mpad(rows) * gemm_u8_kpad(k) : gemm_u8_packed_size(rows, k);
    z->packed = err_malloc64((size_t)(z->plane * z->nd), 1);
    z->rsum = err_malloc((size_t)rows, sizeof(int64_t));
#if defined(__x86_64__) && defined(__GNUC__)
    if (OZ8_WIDE_OK) { /* AVX-512: straight into the packed planes */
        if (side == OZAKI_U8_BT)
            oz8_planes_bt_wide(z, x);
        else
            oz8_planes_rows_wide(z, x, side);
        return;
    }
#endif
    uint8_t *d = err_malloc((size_t)(rows * k * z->nd), 1);
    int64_t c = z->c;
    if (side == OZAKI_U8_BT) { /* x [k][rows]: planes in its layout, the sums down its columns */
        oz8_split_body(d, rows * k, x, rows * k, z->nd, c);
        oz8_colsum_body(z->rsum, x, k, rows, c);
    } else
        for (long r = 0; r < rows; r++)
            z->rsum[r] = oz8_split_body(d + r * k, rows * k, x + r * k, k, z->nd, c);
    for (int i = 0; i < z->nd; i++) {
        uint8_t *pl = z->packed + i * z->plane, *di = d + i * rows * k;
        if (side == OZAKI_U8_A)
            gemm_u8_pack_a(pl, di, k, rows, k);
        else if (side == OZAKI_U8_B)
            gemm_u8_pack_b(pl, di, k, rows, k);
        else
            gemm_u8_pack_bt(pl, di, rows, rows, k);
    }
    free(d);
}

void ozaki_u8_free(ozaki_u8_t *z)
{
    free(z->packed);
    free(z->rsum);
    z->packed = NULL;
    z->rsum = NULL;
}

void ozaki_u8_product(double *G, long ldg, const ozaki_u8_t *A, const ozaki_u8_t *B, uint64_t *acc)
{
    long M = A->rows, N = B->rows;
    const uint8_t *pa[OZ8_MAX_DIGITS], *pb[OZ8_MAX_DIGITS];
    for (int i = 0; i < A->nd; i++)
        pa[i] = A->packed + i * A->plane;
    for (int j = 0; j < B->nd; j++)
        pb[j] = B->packed + j * B->plane;
    gemm_u8_digits(acc, N, pa, A->nd, pb, B->nd, M, N, A->k);
    int wide = OZ8_WIDE_OK;
    /* the offsets a and b: - b ra[i] - a rb[j] + K a b, modulo 2^64 */
    uint64_t *rb = err_malloc((size_t)N, sizeof(uint64_t)), ca = (uint64_t)A->c, cb = (uint64_t)B->c;
    uint64_t kab = (uint64_t)A->k * ca * cb;
    for (long j = 0; j < N; j++)
        rb[j] = (uint64_t)B->rsum[j] * ca - kab;
    for (long i = 0; i < M; i++) {
        uint64_t ra = (uint64_t)A->rsum[i] * cb;
        if (wide)
            oz8_double_wide(G + i * ldg, acc + i * N, N, ra, rb);
        else
            oz8_double_body(G + i * ldg, acc + i * N, N, ra, rb);
    }
    free(rb);
}
