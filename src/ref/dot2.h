/* dot2 -- products as unrounded double-double pairs (Dot2) */
#ifndef AMLA_DOT2_H
#define AMLA_DOT2_H

/* C = A op(B) with Dot2 per element; A may carry a low part Al (double-double rows).
 * (With al == NULL the generic kernel adds 0.0 * b, which changes nothing: the AVX2 kernel
 * does the same, so both give identical bits.) */
void dot2_gemm(double *Ch, double *Cl, long ldc, const double *Ah, const double *Al,
                      long lda, const double *B, long ldb, int b_trans, long M, long N, long K);

#endif
