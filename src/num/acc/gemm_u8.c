/* gemm_u8 -- exact 8-bit integer products: AMX tiles (TDPBUUD: sums of products of unsigned bytes in
 * int32) where the processor has them, else plain loops; the same integers either way */
#define _DEFAULT_SOURCE /* syscall(), for Linux's arch_prctl */
#include "num/acc/gemm_u8.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "num/acc/acc_tc_int.h"
#include "num/vec/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define GEMM_U8_X86 1
/* Linux's request for the tile data state (arch_prctl; asm/prctl.h, not in every libc's headers) */
#define GEMM_U8_REQ_XCOMP_PERM 0x1023
#define GEMM_U8_XTILEDATA 18
#endif

int gemm_u8_amx = 1;
static int gemm_u8_amx_here;
static pthread_once_t gemm_u8_once = PTHREAD_ONCE_INIT;

static void gemm_u8_probe(void)
{
#ifdef GEMM_U8_X86
    unsigned a, b, c, d;
    if (!cpu_has_avx512() || !__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d >> 24 & 1) || !(d >> 25 & 1))
        return;
    /* the OS saves the tile state (XCR0 bits 17 and 18), and lets this process use it */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo >> 17 & 3) != 3)
        return;
    gemm_u8_amx_here = syscall(SYS_arch_prctl, GEMM_U8_REQ_XCOMP_PERM, GEMM_U8_XTILEDATA) == 0;
#endif
}

int gemm_u8_has_amx(void)
{
    pthread_once(&gemm_u8_once, gemm_u8_probe);
    return gemm_u8_amx_here;
}

static long gemm_u8_round_up(long x, long m)
{
    return (x + m - 1) / m * m;
}

long gemm_u8_kpad(long K)
{
    return gemm_u8_round_up(K, GEMM_U8_K);
}

long gemm_u8_mpad(long M)
{
    return gemm_u8_round_up(M, GEMM_U8_MN);
}

long gemm_u8_packed_size(long N, long K)
{
    return gemm_u8_mpad(N) * gemm_u8_kpad(K);
}

int gemm_u8_fits(long np, long K)
{
    return (double)np * (double)gemm_u8_kpad(K) * 255.0 * 255.0 < 0x1p31;
}

void gemm_u8_pack_a(uint8_t *ap, const uint8_t *A, long lda, long M, long K)
{
    long kp = gemm_u8_kpad(K), mp = gemm_u8_mpad(M);
    memset(ap, 0, (size_t)(mp * kp));
    for (long i = 0; i < M; i++)
        memcpy(ap + i * kp, A + i * lda, (size_t)K);
}

/* Block nb of 16 rows of B: its rows as 32-bit words (four k each), transposed: word t of
 * line c at t * 16 + c, so that k-block kb's tile is the 16 lines from word kb * 16 * 16. */
void gemm_u8_pack_b16(uint8_t *dst, const uint8_t *rows, long kp)
{
    long kw = kp / 4;
#ifdef GEMM_U8_X86
    if (cpu_has_avx512()) {
        acc_tcf16_transpose(dst, rows, kw);
        return;
    }
#endif
    for (long t = 0; t < kw; t++)
        for (int c = 0; c < 16; c++)
            memcpy(dst + (t * 16 + c) * 4, rows + c * kp + t * 4, 4);
}

void gemm_u8_pack_b(uint8_t *bp, const uint8_t *B, long ldb, long N, long K)
{
    long kp = gemm_u8_kpad(K), np = gemm_u8_mpad(N), kw = kp / 4;
    uint8_t rows[16 * 4096];
    uint8_t *tmp = kp <= 4096 ? rows : NULL;
    for (long nb = 0; nb < np; nb += 16) {
        uint8_t *dst = bp + nb * kp;
        if (tmp) { /* the 16 rows padded, then one transpose of 32-bit words */
            memset(tmp, 0, (size_t)(16 * kp));
            for (long r = 0; r < 16 && nb + r < N; r++)
                memcpy(tmp + r * kp, B + (nb + r) * ldb, (size_t)K);
            gemm_u8_pack_b16(dst, tmp, kp);
            continue;
        }
        for (long t = 0; t < kw; t++) /* K beyond the buffer: byte by byte */
            for (int c = 0; c < 16; c++)
                for (int u = 0; u < 4; u++) {
                    long n = nb + c, k = t * 4 + u;
                    dst[(t * 16 + c) * 4 + u] = n < N && k < K ? B[n * ldb + k] : 0;
                }
    }
}

/* B given as its transpose Bt [K][N] (row stride ldt): each line of a tile is four rows of Bt
 * interleaved byte by byte (sixteen columns of four k). */
void gemm_u8_pack_bt(uint8_t *bp, const uint8_t *Bt, long ldt, long N, long K)
{
    long kp = gemm_u8_kpad(K), np = gemm_u8_mpad(N);
    for (long nb = 0; nb < np; nb += 16) {
        uint8_t *dst = bp + nb * kp;
        for (long t = 0; t < kp / 4; t++) {
            uint8_t *line = dst + t * 64;
#ifdef GEMM_U8_X86
            if (nb + 16 <= N && 4 * t + 4 <= K) { /* SSE2: bytes of rows 0, 1 and 2, 3 paired, then the pairs */
                const uint8_t *r = Bt + 4 * t * ldt + nb;
                __m128i r0 = _mm_loadu_si128((const __m128i *)r), r1 = _mm_loadu_si128((const __m128i *)(r + ldt));
                __m128i r2 = _mm_loadu_si128((const __m128i *)(r + 2 * ldt));
                __m128i r3 = _mm_loadu_si128((const __m128i *)(r + 3 * ldt));
                __m128i a0 = _mm_unpacklo_epi8(r0, r1), a1 = _mm_unpackhi_epi8(r0, r1);
                __m128i b0 = _mm_unpacklo_epi8(r2, r3), b1 = _mm_unpackhi_epi8(r2, r3);
                _mm_storeu_si128((__m128i *)line, _mm_unpacklo_epi16(a0, b0));
                _mm_storeu_si128((__m128i *)(line + 16), _mm_unpackhi_epi16(a0, b0));
                _mm_storeu_si128((__m128i *)(line + 32), _mm_unpacklo_epi16(a1, b1));
                _mm_storeu_si128((__m128i *)(line + 48), _mm_unpackhi_epi16(a1, b1));
                continue;
            }
#endif
            for (int c = 0; c < 16; c++)
                for (int u = 0; u < 4; u++) {
                    long n = nb + c, k = 4 * t + u;
                    line[c * 4 + u] = n < N && k < K ? Bt[k * ldt + n] : 0;
                }
        }
    }
}

/* acc (+)= c << shift, modulo 2^64 (c's sign extended) */
static inline uint64_t gemm_u8_acc(uint64_t acc, int32_t c, int shift, int first)
{
    uint64_t v = (uint64_t)(int64_t)c << shift;
    return first ? v : acc + v;
}

/* The plain loops on the packed operands: row i of A_p at a[p] + i kp, B_p's (n, k) at its
 * block's line k / 4, word n % 16, byte k % 4. */
static void gemm_u8_plain(uint64_t *acc, long ldc, int shift, int first, const uint8_t *const *a,
                          const uint8_t *const *b, int np, long M, long N, long K)
{
    long kp = gemm_u8_kpad(K);
    for (long i = 0; i < M; i++)
        for (long n = 0; n < N; n++) {
            int32_t s = 0;
            for (int p = 0; p < np; p++) {
                const uint8_t *ar = a[p] + i * kp, *bb = b[p] + (n / 16) * 16 * kp + (n % 16) * 4;
                for (long k = 0; k < K; k++)
                    s += (int32_t)ar[k] * (int32_t)bb[(k / 4) * 64 + k % 4];
            }
            acc[i * ldc + n] = gemm_u8_acc(acc[i * ldc + n], s, shift, first);
        }
}

/* The pairs (A_i, B_{s-i}) of weight s: their count */
static int gemm_u8_weight(const uint8_t **pa, const uint8_t **pb, const uint8_t *const *a, int na,
                          const uint8_t *const *b, int nb, int s)
{
    int np = 0;
    for (int i = 0; i < na; i++)
        if (s - i >= 0 && s - i < nb) {
            pa[np] = a[i];
            pb[np++] = b[s - i];
        }
    return np;
}

#ifdef GEMM_U8_X86
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} gemm_u8_tilecfg_t;

#define AMX __attribute__((target("amx-tile,amx-int8,avx512f,avx512vl")))

/* The tiles' shape: 0-3 a 32 x 32 block of C's four 16 x 16 int32 quarters, 4-5 two 16-row strips of A, 6-7
 * two 16-row blocks of B, 64 k at a time */
AMX static void gemm_u8_config(void)
{
    gemm_u8_tilecfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    _tile_loadconfig(&cfg);
}

/* out [32][32] = sum over p < np of A_p B_p^T's block at rows i0, columns j0 (every pair into the same tiles) */
AMX static inline __attribute__((always_inline)) void gemm_u8_block(int32_t *out, const uint8_t *const *a,
                                                                   const uint8_t *const *b, int np, long i0,
                                                                   long j0, long kp)
{
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int p = 0; p < np; p++) {
        const uint8_t *ar = a[p] + i0 * kp, *b0 = b[p] + j0 * kp, *b1 = b0 + 16 * kp;
        for (long k0 = 0; k0 < kp; k0 += 64) {
            _tile_loadd(4, ar + k0, kp);
            _tile_loadd(5, ar + 16 * kp + k0, kp);
            _tile_loadd(6, b0 + k0 * 16, 64);
            _tile_loadd(7, b1 + k0 * 16, 64);
            _tile_dpbuud(0, 4, 6);
            _tile_dpbuud(1, 4, 7);
            _tile_dpbuud(2, 5, 6);
            _tile_dpbuud(3, 5, 7);
        }
    }
    _tile_stored(0, out, 128);
    _tile_stored(1, out + 16, 128);
    _tile_stored(2, out + 16 * 32, 128);
    _tile_stored(3, out + 16 * 32 + 16, 128);
}

/* gemm_u8_pairs on the tiles, a 32 x 32 block of C at a time */
AMX static void gemm_u8_tiles(uint64_t *acc, long ldc, int shift, int first, const uint8_t *const *a,
                              const uint8_t *const *b, int np, long M, long N, long K)
{
    long kp = gemm_u8_kpad(K), mp = gemm_u8_mpad(M), nq = gemm_u8_mpad(N);
    gemm_u8_config();
    int32_t out[32 * 32];
    for (long j0 = 0; j0 < nq; j0 += 32) /* B's 32 rows stay in cache for every strip of A */
        for (long i0 = 0; i0 < mp; i0 += 32) {
            gemm_u8_block(out, a, b, np, i0, j0, kp);
            /* into acc, eight sums at a time: sign-extended, shifted, added (modulo 2^64) */
            long w = N - j0 < 32 ? N - j0 : 32;
            const __m128i sh = _mm_cvtsi32_si128(shift);
            for (long i = 0; i < 32 && i0 + i < M; i++)
                for (long j = 0; j < w; j += 8) {
                    __mmask8 m = (__mmask8)(w - j >= 8 ? 0xff : (1u << (w - j)) - 1);
                    uint64_t *dst = acc + (i0 + i) * ldc + j0 + j;
                    __m256i c = _mm256_loadu_si256((const __m256i *)(out + i * 32 + j));
                    __m512i v = _mm512_sll_epi64(_mm512_cvtepi32_epi64(c), sh);
                    if (!first)
                        v = _mm512_add_epi64(v, _mm512_maskz_loadu_epi64(m, dst));
                    _mm512_mask_storeu_epi64(dst, m, v);
                }
        }
    _tile_release();
}

/* gemm_u8_digits on the tiles: each 32 x 32 block of C through every weight s in turn, each weight's int32 sums
 * stored from the tiles (4 KB a weight, in L1), then shifted and added (modulo 2^64) into acc in one pass: where
 * gemm_u8_pairs per weight stored the tiles and read and wrote all of acc. */
AMX static void gemm_u8_digit_tiles(uint64_t *acc, long ldc, const uint8_t *const *a, int na, const uint8_t *const *b,
                                    int nb, long M, long N, long K)
{
    long kp = gemm_u8_kpad(K), mp = gemm_u8_mpad(M), nq = gemm_u8_mpad(N);
    int nw = na + nb - 1;
    gemm_u8_config();
    int32_t(*out)[32 * 32] = err_malloc((size_t)nw, sizeof *out);
    for (long j0 = 0; j0 < nq; j0 += 32)
        for (long i0 = 0; i0 < mp; i0 += 32) {
            for (int s = 0; s < nw; s++) {
                const uint8_t *pa[GEMM_U8_DIGITS], *pb[GEMM_U8_DIGITS];
                gemm_u8_block(out[s], pa, pb, gemm_u8_weight(pa, pb, a, na, b, nb, s), i0, j0, kp);
            }
            /* eight sums at a time: each weight's sign-extended and shifted by 8 s, added */
            long w = N - j0 < 32 ? N - j0 : 32;
            for (long i = 0; i < 32 && i0 + i < M; i++)
                for (long j = 0; j < w; j += 8) {
                    __mmask8 m = (__mmask8)(w - j >= 8 ? 0xff : (1u << (w - j)) - 1);
                    __m512i v = _mm512_setzero_si512();
                    for (int s = 0; s < nw; s++) {
                        __m256i c = _mm256_loadu_si256((const __m256i *)(out[s] + i * 32 + j));
                        v = _mm512_add_epi64(v, _mm512_sll_epi64(_mm512_cvtepi32_epi64(c), _mm_cvtsi32_si128(8 * s)));
                    }
                    _mm512_mask_storeu_epi64(acc + (i0 + i) * ldc + j0 + j, m, v);
                }
        }
    free(out);
    _tile_release();
}
#endif

void gemm_u8_digits(uint64_t *acc, long ldc, const uint8_t *const *a, int na, const uint8_t *const *b, int nb, long M,
                    long N, long K)
{
#ifdef GEMM_U8_X86
    if (gemm_u8_amx && gemm_u8_has_amx()) {
        gemm_u8_digit_tiles(acc, ldc, a, na, b, nb, M, N, K);
        return;
    }
#endif
    for (int s = 0; s <= na + nb - 2; s++) { /* weight by weight, its pairs at once */
        const uint8_t *pa[GEMM_U8_DIGITS], *pb[GEMM_U8_DIGITS];
        gemm_u8_plain(acc, ldc, 8 * s, s == 0, pa, pb, gemm_u8_weight(pa, pb, a, na, b, nb, s), M, N, K);
    }
}

void gemm_u8_pairs(uint64_t *acc, long ldc, int shift, int first, const uint8_t *const *a, const uint8_t *const *b,
                   int np, long M, long N, long K)
{
#ifdef GEMM_U8_X86
    if (gemm_u8_amx && gemm_u8_has_amx()) {
        gemm_u8_tiles(acc, ldc, shift, first, a, b, np, M, N, K);
        return;
    }
#endif
    gemm_u8_plain(acc, ldc, shift, first, a, b, np, M, N, K);
}
