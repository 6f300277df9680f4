/* ozaki_u8 -- one Ozaki slice product (integers below 2^53) exactly through byte digit planes */
#ifndef AMLA_OZAKI_U8_H
#define AMLA_OZAKI_U8_H

#include <stdint.h>

/* A slice: integers |x| <= 2^b held as doubles (ozaki_one's q). Offset by c = 2^b, u = x + c lies
 * in 0 .. 2^(b+1) and is cut into d = ceil((b + 2) / 8) bytes, u = sum_i u_i 2^(8 i), one plane
 * per byte; a slice of integers 0 <= x < 2^b (nonneg) takes no offset, c = 0, and d = ceil(b / 8)
 * bytes. For slices A [M][K] (offset a) and B [N][K] (offset b):
 *     A B^T = sum_s 2^(8 s) sum_{i + j = s} UA_i UB_j^T - b ra - a rb + K a b,
 * ra and rb the row sums of UA and UB; each inner sum is exact in int32 (gemm_u8), the rest in
 * 64-bit integers (modulo 2^64: exact where each entry of A B^T is below 2^53 in magnitude,
 * ozaki_one's plan), whatever the order of the sums: the same doubles as the binary64 GEMM of
 * the slices gives. */
typedef struct {
    int nd;          /* bytes per value */
    int b;           /* the slice's bits */
    int64_t c;       /* its offset: 2^b, or 0 for a nonnegative slice */
    long rows, k;    /* the slice's size */
    uint8_t *packed; /* nd planes, each as gemm_u8 packs it (A's or B's layout) */
    long plane;      /* bytes per packed plane */
    int64_t *rsum;   /* row sums of u */
} ozaki_u8_t;

/* 1 (default): the planes cut and summed by AVX-512 loops where the processor has them; 0: the plain
 * loops (tests run both). */
extern int ozaki_u8_simd;

/* Whether the product of slices of ba and bb bits with K terms runs here through AMX (the plain
 * loops are for tests): the processor has it, gemm_u8_amx allows it, the int32 sums fit. */
int ozaki_u8_usable(int ba, int bb, long K);

/* The byte planes of a slice x [rows][k] (row stride k), packed as the product's A or B, or of
 * a slice given as its transpose x [k][rows] (row stride rows), packed as B; nonneg: 0 <= x < 2^b. */
typedef enum { OZAKI_U8_A, OZAKI_U8_B, OZAKI_U8_BT } ozaki_u8_side_t;
void ozaki_u8_planes(ozaki_u8_t *z, const double *x, long rows, long k, int b, int nonneg, ozaki_u8_side_t side);
void ozaki_u8_free(ozaki_u8_t *z);

/* G [M][N] (row stride ldg) = A B^T exactly, A and B as ozaki_u8_planes made them (same k);
 * every entry must be below 2^53 in magnitude and A->nd + B->nd - 2 below 8 (as ozaki_u8_usable
 * checks). acc: M N words of work. */
void ozaki_u8_product(double *G, long ldg, const ozaki_u8_t *A, const ozaki_u8_t *B, uint64_t *acc);

#endif
