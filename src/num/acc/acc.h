/* acc -- matrix products under an accumulation model (the models themselves: num/acc_model.h) */
#ifndef AMLA_ACC_H
#define AMLA_ACC_H

#include "num/fmt/fmt.h"

#include "num/acc/acc_model.h"

/* As acc_gemm, with the formats of A's and B's values (the tensor-core models take a
 * subnormal operand's exponent as its format's minimum); acc_gemm assumes binary32. */
void acc_gemm_f(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                long N, long K, acc_model_t model, fmt_id_t fa, fmt_id_t fb);

/* C[i][j] = sum_k A[i][k] * op(B)[k][j] for i < M, j < N, accumulated in k order under the
 * model; op(B) = B^T when b_trans (B is N x K), else B (K x N). Operands are taken as
 * binary32 values by the fp32 models (they are, when they come from a format <= fp32);
 * C holds the accumulator's value. */
void acc_gemm(double *C, long ldc, const double *A, long lda, const double *B, long ldb,
              int b_trans, long M, long N, long K, acc_model_t model);

#endif
