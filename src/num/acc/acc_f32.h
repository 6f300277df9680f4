/* acc_f32 -- the FP32 models' GEMM and the operand it holds converted for many products */
#ifndef AMLA_ACC_F32_H
#define AMLA_ACC_F32_H

/* acc_gemm under fp32-fma (fused) or fp32-mul-add: C[i][j] the sequential binary32 chain over
 * k of A[i][k] op(B)[k][j], operands taken as binary32 values (acc_f32.c; acc_gemm calls it). */
void acc_gemm32(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                long N, long K, int fused);

/* The product T of acc_gemm32 added into C as an online softmax rescales its output: C[i][j] =
 * f32(f32(C[i][j] rs[i]) + T[i][j]), or f32(f32(C[i][j] rs[i]) + f32(T[i][j] ts)) where ts != 0 (f32:
 * to binary32, RNE; vec_rescale_add32's expression), T's values going into C as they leave the
 * kernel's panels (no T written). */
void acc_gemm32_rescale(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans,
                        long M, long N, long K, int fused, const double *rs, double ts);

/* A [M][K] (row stride lda) converted to binary32 once and used by every FP32-model product of
 * this thread whose A lies inside it (its rows and columns, the same lda) until
 * acc_release_f32 or the next hold; A must not change meanwhile. Bits are the same with or
 * without it (an attention's Q against tile after tile of K: converted once, not per tile). */
void acc_hold_f32(const double *A, long lda, long M, long K);
void acc_release_f32(void);

/* Rows 0 .. M - 1 of A (row stride lda), columns 0 .. K - 1, as the GEMM kernels take them (acc.c,
 * acc_f32.c): tiles of h rows, each K runs of h values (tile t's row r at k: ap[(t K + k) h + r]),
 * zero past M; as binary32 (the C conversion) and as binary64. */
void acc_pack_a32(float *ap, const double *A, long lda, long M, long K, long h);
void acc_pack_a64(double *ap, const double *A, long lda, long M, long K, long h);

#endif
