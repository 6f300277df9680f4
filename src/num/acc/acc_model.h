/* acc_model -- the accumulation models: their names, the tensor-core block step, the SIMD switch and the
 * operand access that acc.c's and the tensor-core kernels' files (acc_tc*.c, acc_x16.c) share, so that those
 * depend on this header alone and acc.c on them, one way */
#ifndef AMLA_ACC_MODEL_H
#define AMLA_ACC_MODEL_H

#include <stdint.h>

typedef enum {
    ACC_FP64,        /* binary64, sequential fma in k order: the "exact" stand-in of a site */
    ACC_FP32_FMA,    /* binary32, sequential fused multiply-add in k order */
    ACC_FP32_MULADD, /* binary32, product rounded, then sum rounded, in k order */
    ACC_FP16,        /* binary16 accumulator (Volta m8n8k4 with FP16 C): per group of 4 products,
                        the exact sum of the products and C rounded to binary16 (RNE) */
    ACC_TC_VOLTA,    /* tensor-core block models (docs/REFERENCES.md, "Tensor-core accumulation"): per block of B products  */
    ACC_TC_AMPERE,   /* plus the accumulator, every term aligned to the largest exponent and      */
    ACC_TC_HOPPER,   /* truncated to F fraction bits, summed exactly, rounded toward zero to FP32 */
    ACC_TC_HOPPER_K8,       /* F 25, B 8: Hopper's mma.sync m16n8k8 (fp16/bf16), each instruction a block */
    ACC_TC_HOPPER_FP8,      /* F 13, B 32, the sum moved into an FP32 accumulator every 128 products */
    ACC_TC_HOPPER_FP8_FAST, /* F 13, B 32, no promotion (cuBLAS "fast accumulation") */
    ACC_COUNT
} acc_model_t;

typedef struct {
    const char *name;
    const char *summary;
} acc_info_t;

extern const acc_info_t acc_table[ACC_COUNT];

/* Products per MMA step of the FP16-accumulator model (m8n8k4: k = 4). */
#define ACC_FP16_K 4

int acc_from_name(const char *name);

/* A tensor-core block step: the terms t[0..n) (the accumulator and exact products) with their
 * exponents e[] aligned to the largest, truncated to f fraction bits, summed, and the sum
 * truncated to min(24, f + 1) significant bits in binary32. */
double acc_tc_block(const double *t, const int *e, int n, int f);

/* 2 (default): the widest vector kernels the processor has (AVX-512 where there is a kernel for
 * it, else AVX2); 1: AVX2 at most; 0: the scalar code (tests compare each with the scalar code
 * bit for bit). */
extern int acc_simd;

/* Whether A [M][K] (row stride lda) lies inside the array held at h [hm][hk] (the same row
 * stride): then its first element's row and column there. Compared as integers: A need not
 * point into the held array at all. */
static inline int acc_inside(const double *h, long hlda, long hm, long hk, const double *A, long lda, long M, long K,
                             long *row, long *col)
{
    uintptr_t a = (uintptr_t)A, h0 = (uintptr_t)h;
    if (!h || hlda != lda || a < h0 || (a - h0) % sizeof(double))
        return 0;
    long off = (long)((a - h0) / sizeof(double));
    *row = off / lda;
    *col = off % lda;
    return *row + M <= hm && *col + K <= hk;
}

/* op(B)[k][j]: B [N][K] read transposed when b_trans, else B [K][N]. */
static inline double acc_b_at(const double *B, long ldb, int b_trans, long k, long j)
{
    return b_trans ? B[j * ldb + k] : B[k * ldb + j];
}

#endif
