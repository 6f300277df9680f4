/* acc_tc -- the tensor-core block models (tc-volta, tc-ampere, tc-hopper, tc-hopper-fp8*) */
#ifndef AMLA_ACC_TC_H
#define AMLA_ACC_TC_H

#include "num/acc/acc_model.h"

/* C = A op(B) under tensor-core model `model`; emin_a, emin_b: the operands' formats' minimum
 * exponents (a subnormal operand's exponent as the hardware sees it). */
void acc_tc_gemm(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                 long N, long K, acc_model_t model, int emin_a, int emin_b);

/* The same accumulating into C: each element's chain starts from C's value (a tensor-core
 * instruction that adds its products to the accumulator registers, D = A B + D). */
void acc_tc_gemm_acc(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                     long N, long K, acc_model_t model, int emin_a, int emin_b);

/* acc_tc_gemm_acc after C's rows are scaled: C[i][j] = ftz(fl32(C[i][j] rs[i])) first, the binary64 product
 * rounded to binary32 and a subnormal result flushed to a zero of its sign, as vec_scale32_ftz does it (a GPU's
 * FMUL.FTZ on an FP32 accumulator: an online softmax's O rescaled before its next P V). Bits are those of the
 * two calls; the binary32 lanes scale C as they load it, sparing a pass over C. */
void acc_tc_gemm_acc_scaled(double *C, long ldc, const double *rs, const double *A, long lda, const double *B, long ldb,
                            int b_trans, long M, long N, long K, acc_model_t model, int emin_a, int emin_b);

/* A [M][K] (row stride lda, values of a format with minimum exponent emin) converted once for
 * the binary32 lanes and used by every product of this thread whose A lies inside it (its rows
 * and columns, the same lda and emin) until acc_tc_release or the next hold; A must not change
 * meanwhile. Bits are the same with or without it: a product's operands are converted either
 * way, this only does it once (an attention's Q against block after block of K). */
void acc_tc_hold(const double *A, long lda, long M, long K, int emin);
void acc_tc_release(void);

/* The same for op(B)'s source B [rows][cols] (row stride ldb): used by every product of this thread whose
 * B lines (op(B)'s columns where b_trans, else its rows) lie inside it, until acc_tc_release_b or the next
 * hold (a block of keys, against which Q K^T reads K and P V reads V = K's first columns). */
void acc_tc_hold_b(const double *B, long ldb, long rows, long cols, int emin);
void acc_tc_release_b(void);

#endif
