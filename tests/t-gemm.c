/* t-gemm -- the exact byte products (num/gemm_u8) and Ozaki slice products through them
 * (ref/ozaki_u8): AMX and the plain loops against integer sums computed here from the unpacked
 * operands */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "num/fmt/fmt.h"
#include "num/acc/gemm_u8.h"
#include "ref/ozaki_u8.h"

__extension__ typedef __int128 i128_t;

static uint64_t rnd(fmt_rng_t *r)
{
    return fmt_rng_next(r);
}

/* acc (+)= (sum_p A_p B_p^T) << shift for np pairs of byte matrices, packed by gemm_u8 (B from
 * B or, with bt, from its transpose), against the same sums in 64-bit integers here. */
static void check_pairs(fmt_rng_t *r, long M, long N, long K, int np, int shift, int first, int bt, int full)
{
    uint8_t *A = malloc((size_t)(np * M * K)), *B = malloc((size_t)(np * N * K)), *Bt = malloc((size_t)(N * K));
    uint8_t *pa[4], *pb[4];
    const uint8_t *ca[4], *cb[4];
    for (long i = 0; i < np * M * K; i++)
        A[i] = full ? 255 : (uint8_t)rnd(r);
    for (long i = 0; i < np * N * K; i++)
        B[i] = full ? 255 : (uint8_t)rnd(r);
    for (int p = 0; p < np; p++) {
        pa[p] = malloc((size_t)(gemm_u8_mpad(M) * gemm_u8_kpad(K)));
        pb[p] = malloc((size_t)gemm_u8_packed_size(N, K));
        gemm_u8_pack_a(pa[p], A + p * M * K, K, M, K);
        if (bt) {
            for (long n = 0; n < N; n++)
                for (long k = 0; k < K; k++)
                    Bt[k * N + n] = B[p * N * K + n * K + k];
            gemm_u8_pack_bt(pb[p], Bt, N, N, K);
        } else
            gemm_u8_pack_b(pb[p], B + p * N * K, K, N, K);
        ca[p] = pa[p];
        cb[p] = pb[p];
    }
    uint64_t *acc = malloc(sizeof(uint64_t) * (size_t)(M * N)), *want = malloc(sizeof(uint64_t) * (size_t)(M * N));
    for (long i = 0; i < M * N; i++)
        acc[i] = want[i] = rnd(r);
    for (long i = 0; i < M; i++)
        for (long n = 0; n < N; n++) {
            int64_t s = 0;
            for (int p = 0; p < np; p++)
                for (long k = 0; k < K; k++)
                    s += (int64_t)A[p * M * K + i * K + k] * B[p * N * K + n * K + k];
            want[i * N + n] = (first ? 0 : want[i * N + n]) + ((uint64_t)s << shift);
        }
    gemm_u8_pairs(acc, N, shift, first, ca, cb, np, M, N, K);
    long bad = 0;
    for (long i = 0; i < M * N; i++)
        if (acc[i] != want[i] && bad++ < 3)
            CHECK(0, "gemm_u8_pairs (amx %d) M %ld N %ld K %ld np %d shift %d first %d bt %d: [%ld] %#llx, want %#llx",
                  gemm_u8_amx && gemm_u8_has_amx(), M, N, K, np, shift, first, bt, i, (unsigned long long)acc[i],
                  (unsigned long long)want[i]);
    CHECK(bad == 0, "gemm_u8_pairs: %ld of %ld sums wrong", bad, M * N);
    for (int p = 0; p < np; p++) {
        free(pa[p]);
        free(pb[p]);
    }
    free(A);
    free(B);
    free(Bt);
    free(acc);
    free(want);
}

/* acc = sum of (A_i B_j^T) << 8 (i + j) over na x nb byte matrices (gemm_u8_digits, one pass over C), against the
 * same sums in 64-bit integers here (modulo 2^64, as the weights' shifts wrap). */
static void check_digits(fmt_rng_t *r, long M, long N, long K, int na, int nb)
{
    uint8_t *A = malloc((size_t)(na * M * K)), *B = malloc((size_t)(nb * N * K)), *pa[8], *pb[8];
    const uint8_t *ca[8], *cb[8];
    for (long i = 0; i < na * M * K; i++)
        A[i] = (uint8_t)rnd(r);
    for (long i = 0; i < nb * N * K; i++)
        B[i] = (uint8_t)rnd(r);
    for (int p = 0; p < na; p++) {
        ca[p] = pa[p] = malloc((size_t)(gemm_u8_mpad(M) * gemm_u8_kpad(K)));
        gemm_u8_pack_a(pa[p], A + p * M * K, K, M, K);
    }
    for (int p = 0; p < nb; p++) {
        cb[p] = pb[p] = malloc((size_t)gemm_u8_packed_size(N, K));
        gemm_u8_pack_b(pb[p], B + p * N * K, K, N, K);
    }
    uint64_t *acc = malloc(sizeof(uint64_t) * (size_t)(M * N));
    for (long i = 0; i < M * N; i++)
        acc[i] = rnd(r); /* overwritten */
    gemm_u8_digits(acc, N, ca, na, cb, nb, M, N, K);
    long bad = 0;
    for (long i = 0; i < M; i++)
        for (long n = 0; n < N; n++) {
            uint64_t want = 0;
            for (int x = 0; x < na; x++)
                for (int y = 0; y < nb; y++) {
                    uint64_t d = 0;
                    for (long k = 0; k < K; k++)
                        d += (uint64_t)A[x * M * K + i * K + k] * B[y * N * K + n * K + k];
                    want += d << (8 * (x + y));
                }
            if (acc[i * N + n] != want && bad++ < 3)
                CHECK(0, "gemm_u8_digits (amx %d) M %ld N %ld K %ld na %d nb %d: [%ld][%ld] %#llx, want %#llx",
                      gemm_u8_amx && gemm_u8_has_amx(), M, N, K, na, nb, i, n, (unsigned long long)acc[i * N + n],
                      (unsigned long long)want);
        }
    CHECK(bad == 0, "gemm_u8_digits: %ld of %ld sums wrong", bad, M * N);
    for (int p = 0; p < na; p++)
        free(pa[p]);
    for (int p = 0; p < nb; p++)
        free(pb[p]);
    free(A);
    free(B);
    free(acc);
}

static void test_pairs(void)
{
    fmt_rng_t r;
    fmt_rng_seed(&r, 20261126);
    static const long shapes[][3] = {{1, 1, 1}, {5, 17, 3}, {33, 40, 65}, {16, 16, 64}, {64, 96, 576}, {37, 100, 130}};
    for (int amx = 1; amx >= 0; amx--) {
        gemm_u8_amx = amx;
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int np = 1; np <= 3; np++)
                check_pairs(&r, shapes[s][0], shapes[s][1], shapes[s][2], np, 8 * (np + (int)s) % 48, np == 2,
                            (int)s % 2, 0);
        /* every byte 255 with K at the bound: 33024 * 255 * 255 = 2147385600 < 2^31 (33088, the next
         * padded K, would not be), the largest sum one pair can make */
        CHECK(gemm_u8_fits(1, 33024) && !gemm_u8_fits(1, 33025) && gemm_u8_fits(2, 16512) && !gemm_u8_fits(2, 16513),
              "gemm_u8_fits at its bound");
        check_pairs(&r, 16, 3, 33024, 1, 0, 1, 0, 1);
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            check_digits(&r, shapes[s][0], shapes[s][1], shapes[s][2], 1 + (int)s % 4, 1 + (int)(s + 2) % 5);
    }
    gemm_u8_amx = 1;
    printf("t-gemm: byte products checked %s\n",
           gemm_u8_has_amx() ? "with AMX and with the plain loops" : "with the plain loops (no AMX here)");
}

/* A random slice [rows][k] of integers |x| <= 2^b (as doubles), ends included. */
static void slice(double *x, long n, int b, fmt_rng_t *r)
{
    for (long i = 0; i < n; i++) {
        uint64_t u = rnd(r);
        int64_t v = (int64_t)(u >> 11) % (((int64_t)1 << b) + 1);
        if (u % 17 == 0)
            v = (int64_t)1 << b; /* the extreme itself */
        x[i] = (double)(u & 1024 ? -v : v);
    }
}

/* A random nonnegative slice of integers 0 <= x < 2^b, the largest included. */
static void slice_nonneg(double *x, long n, int b, fmt_rng_t *r)
{
    for (long i = 0; i < n; i++) {
        uint64_t u = rnd(r);
        x[i] = (double)(u % 13 == 0 ? ((int64_t)1 << b) - 1 : (int64_t)((u >> 11) & (((uint64_t)1 << b) - 1)));
    }
}

/* G = A B^T through ozaki_u8 against 128-bit sums, for slices of ba and bb bits and K terms
 * (ba + bb + log2 K <= 53: every entry exact in binary64), B given directly or transposed; A
 * also as a nonnegative slice below 2^(ba + 1), its planes without an offset. */
static void check_product(fmt_rng_t *r, long M, long N, long K, int ba, int bb)
{
    double *A = malloc(sizeof(double) * (size_t)(M * K)), *B = malloc(sizeof(double) * (size_t)(N * K));
    double *Bt = malloc(sizeof(double) * (size_t)(N * K)), *G = malloc(sizeof(double) * (size_t)(M * (N + 3)));
    uint64_t *work = malloc(sizeof(uint64_t) * (size_t)(M * N));
    slice(B, N * K, bb, r);
    for (long n = 0; n < N; n++)
        for (long k = 0; k < K; k++)
            Bt[k * N + n] = B[n * K + k];
    for (int bt = 0; bt < 4; bt++) {
        int nonneg = bt / 2;
        if (bt % 2 == 0) {
            if (nonneg)
                slice_nonneg(A, M * K, ba + 1, r);
            else
                slice(A, M * K, ba, r);
        }
        ozaki_u8_t za, zb;
        ozaki_u8_planes(&za, A, M, K, nonneg ? ba + 1 : ba, nonneg, OZAKI_U8_A);
        ozaki_u8_planes(&zb, bt % 2 ? Bt : B, N, K, bb, 0, bt % 2 ? OZAKI_U8_BT : OZAKI_U8_B);
        ozaki_u8_product(G, N + 3, &za, &zb, work); /* a row stride other than N */
        long bad = 0;
        for (long i = 0; i < M; i++)
            for (long n = 0; n < N; n++) {
                i128_t s = 0;
                for (long k = 0; k < K; k++)
                    s += (i128_t)(int64_t)A[i * K + k] * (i128_t)(int64_t)B[n * K + k];
                double want = (double)(int64_t)s;
                if (memcmp(&want, &G[i * (N + 3) + n], sizeof want) && bad++ < 3)
                    CHECK(0, "ozaki_u8_product (amx %d) M %ld N %ld K %ld ba %d bb %d bt %d nonneg %d: [%ld][%ld] %a, "
                             "want %a",
                          gemm_u8_amx && gemm_u8_has_amx(), M, N, K, ba, bb, bt % 2, nonneg, i, n, G[i * (N + 3) + n],
                          want);
            }
        CHECK(bad == 0, "ozaki_u8_product: %ld of %ld entries wrong", bad, M * N);
        ozaki_u8_free(&za);
        ozaki_u8_free(&zb);
    }
    free(A);
    free(B);
    free(Bt);
    free(G);
    free(work);
}

static void test_product(void)
{
    fmt_rng_t r;
    fmt_rng_seed(&r, 5381);
    /* ozaki_one's widths: bf16 Q K^T (43 bits over 576 terms), P V (bp + bv = 44 over 512),
     * lopsided and tiny ones */
    static const int cases[][5] = {{8, 40, 576, 22, 21}, {16, 33, 512, 34, 10}, {3, 5, 7, 1, 1},
                                   {40, 64, 100, 45, 1},  {17, 31, 64, 8, 39},  {32, 32, 2048, 30, 12}};
    for (int amx = 1; amx >= 0; amx--) { /* AMX and the AVX-512 cuts, then the plain loops for both */
        gemm_u8_amx = ozaki_u8_simd = amx;
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
            check_product(&r, cases[c][0], cases[c][1], cases[c][2], cases[c][3], cases[c][4]);
    }
    gemm_u8_amx = ozaki_u8_simd = 1;
    CHECK(!ozaki_u8_usable(22, 21, 576) || gemm_u8_has_amx(), "ozaki_u8_usable without AMX");
}

int main(void)
{
    test_pairs();
    test_product();
    return check_done("t-gemm");
}
