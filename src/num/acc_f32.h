/* acc_f32 -- the FP32 models' GEMM and the operand it holds converted for many products */
#ifndef AMLA_ACC_F32_H
#define AMLA_ACC_F32_H

/* acc_gemm under fp32-fma (fused) or fp32-mul-add: C[i][j] the sequential binary32 chain over
 * k of A[i][k] op(B)[k][j], operands taken as binary32 values (acc_f32.c; acc_gemm calls it). */
void acc_gemm32(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                long N, long K, int fused);

/* A [M][K] (row stride lda) converted to binary32 once and used by every FP32-model product of
 * this thread whose A lies inside it (its rows and columns, the same lda) until
 * acc_release_f32 or the next hold; A must not change meanwhile. Bits are the same with or
 * without it (an attention's Q against tile after tile of K: converted once, not per tile). */
void acc_hold_f32(const double *A, long lda, long M, long K);
void acc_release_f32(void);

#endif
