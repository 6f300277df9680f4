/* gemm_u8 -- exact integer products of matrices of bytes (0 .. 255): sums of their products in int32,
 * through AMX where the processor has it, else plain loops (the same integers either way) */
#ifndef AMLA_GEMM_U8_H
#define AMLA_GEMM_U8_H

#include <stdint.h>

/* Padded sizes: rows of A and of B in blocks of GEMM_U8_MN, K in blocks of GEMM_U8_K. */
#define GEMM_U8_MN 32
#define GEMM_U8_K 64

/* 1 when the AMX-INT8 kernel runs here (the processor has AMX-TILE and AMX-INT8 and the kernel
 * granted the process the tile state); asked once. gemm_u8_amx = 0 keeps to the plain loops
 * (for tests; 1 by default). */
int gemm_u8_has_amx(void);
extern int gemm_u8_amx;

/* B [N][K] (row stride ldb, bytes) as gemm_u8_pairs takes it: N rounded up to
 * GEMM_U8_MN and K to GEMM_U8_K with zeros, in AMX's tile layout (for each block of 16 rows and
 * 64 k: 16 lines of 16 rows x 4 consecutive k). bp holds gemm_u8_packed_size(N, K) bytes. */
long gemm_u8_packed_size(long N, long K);
void gemm_u8_pack_b(uint8_t *bp, const uint8_t *B, long ldb, long N, long K);
/* One block of 16 rows of it from the block's rows padded with zeros, rows [16][kpad(K)], into dst = bp + nb kpad(K)
 * (nb the block's first row, a multiple of 16): a B packed block by block. */
void gemm_u8_pack_b16(uint8_t *dst, const uint8_t *rows, long kp);
/* The same from B's transpose Bt [K][N] (row stride ldt). */
void gemm_u8_pack_bt(uint8_t *bp, const uint8_t *Bt, long ldt, long N, long K);

/* A [M][K] padded the same way into ap (row stride gemm_u8_kpad(K), M rounded up to
 * GEMM_U8_MN rows, zeros beyond). */
long gemm_u8_kpad(long K);
long gemm_u8_mpad(long M);
void gemm_u8_pack_a(uint8_t *ap, const uint8_t *A, long lda, long M, long K);

/* acc [M][N] (row stride ldc) = (first) or += (C << shift), shift 0 .. 63, modulo 2^64, where C = sum over
 * p < np of A_p B_p^T as integers (sign-extended from int32): A_p packed by gemm_u8_pack_a (a[p]),
 * B_p by gemm_u8_pack_b (b[p]), all of M x K and N x K. Every sum is exact where
 * np * kpad(K) * 255 * 255 < 2^31 (the caller's bound: gemm_u8_fits). */
int gemm_u8_fits(long np, long K);
void gemm_u8_pairs(uint64_t *acc, long ldc, int shift, int first, const uint8_t *const *a, const uint8_t *const *b,
                   int np, long M, long N, long K);

/* acc [M][N] (row stride ldc) = sum over i < na, j < nb of (A_i B_j^T) << 8 (i + j), modulo 2^64: the products of two
 * numbers' byte digits (A_i, B_j packed as gemm_u8_pairs takes them; at most GEMM_U8_DIGITS of each), as
 * gemm_u8_pairs for each weight s = i + j in turn (first at s = 0) computes it, in one pass over C. Exact where
 * gemm_u8_fits(min(na, nb), K). */
#define GEMM_U8_DIGITS 8
void gemm_u8_digits(uint64_t *acc, long ldc, const uint8_t *const *a, int na, const uint8_t *const *b, int nb, long M,
                    long N, long K);
#endif
