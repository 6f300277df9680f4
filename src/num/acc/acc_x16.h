/* acc_x16 -- acc.c's binary64-lane GEMM kernels in AVX-512 (not for use outside src/num/) */
#ifndef AMLA_ACC_X16_H
#define AMLA_ACC_X16_H

/* Panel width of the AVX-512 kernels: op(B) packed sixteen columns per k (two vectors of eight). */
#define ACC_X16_NR 16

/* acc.c's kern64 (binary64 fma chains in k order) on twelve rows (ACC_X16_MR64) against a panel bp of sixteen
 * columns, continuing the chains in c [12][16]; and its kern16 (the FP16 accumulator: per four
 * products, the binary64 sum rounded to binary16) on four rows, continuing from c [4][16]
 * (binary16 values). The rows come packed k-major, row r's k-th operand at ap[k as + r] (as: the
 * packed tile's height, at least the kernel's rows). Lane for lane the operations of the AVX2
 * and scalar kernels, so bit-identical to them. Only where cpu_has_avx512() says so. */
/* acc.c's kern32 (binary32 chains, fused or not) on twelve rows, packed k-major (row r's k-th
 * operand at ap[12 k + r]), against a panel of sixteen binary32 columns (acc.c's ACC_NR32
 * layout), continuing the chains in c [12][16]. */
#define ACC_X16_MR32 12
#define ACC_X16_MR64 12
void acc_kern32_x16(float *c, const float *ap, const float *bp, long K, int fused);
void acc_kern64_x16(double *c, const double *ap, long as, const double *bp, long K);
void acc_kern16_x16(double *c, const double *ap, long as, const double *bp, long K);

/* acc_kern16_x16 on eight rows, into c [8][16], for operands whose products are exact in
 * binary64 (binary32 values, as acc_f32_values_x16 tells): the same bits in fewer operations.
 * acc_kern16b_x16 is acc_kern16f_x16 without its test for sums that might overflow binary16:
 * only where no partial sum can reach 2^15 (acc.c bounds them). */
#define ACC_X16_MR16F 8
void acc_kern16f_x16(double *c, const double *ap, long as, const double *bp, long K);
void acc_kern16b_x16(double *c, const double *ap, long as, const double *bp, long K);
/* 1 when every X[i][j] (i < rows, j < cols, row stride ld) is a binary32 value; *sum_max = the
 * largest row sum of |X[i][j]| (computed in binary64; meaningful when 1 is returned). */
int acc_f32_values_x16(const double *X, long ld, long rows, long cols, double *sum_max);
/* acc.c's panel of op(B)[0:K][j0:j0+nr], ACC_X16_NR wide (zero beyond nr); 1 when every value
 * packed is a binary32 value; *bmax = the largest |value| packed. With bmax NULL, the panel alone
 * (0 returned). */
int acc_pack64_x16(double *bp, const double *B, long ldb, int b_trans, long j0, long nr, long K, double *bmax);

#endif
