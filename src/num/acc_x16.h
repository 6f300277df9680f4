/* acc_x16 -- acc.c's binary64-lane GEMM kernels in AVX-512 (not for use outside src/num/) */
#ifndef AMLA_ACC_X16_H
#define AMLA_ACC_X16_H

/* Panel width of the AVX-512 kernels: op(B) packed sixteen columns per k (two vectors of eight). */
#define ACC_X16_NR 16

/* acc.c's kern64 (binary64 fma chains in k order) on rows a[0..5] against a panel bp of sixteen
 * columns, into c [6][16]; and its kern16 (the FP16 accumulator: per four products, the binary64
 * sum rounded to binary16) on rows a[0..3], into c [4][16]. Lane for lane the operations of the
 * AVX2 and scalar kernels, so bit-identical to them. Only where cpu_has_avx512() says so. */
/* acc.c's kern32 (binary32 chains, fused or not) on rows a[0..11] against a panel of sixteen
 * binary32 columns (acc.c's ACC_NR32 layout), continuing the chains in c [12][16]. */
#define ACC_X16_MR32 12
void acc_kern32_x16(float *c, const float *const *a, const float *bp, long K, int fused);
void acc_kern64_x16(double *c, const double *const *a, const double *bp, long K);
void acc_kern16_x16(double *c, const double *const *a, const double *bp, long K);

#endif
