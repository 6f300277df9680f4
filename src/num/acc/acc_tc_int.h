/* acc_tc_int -- what the tensor-core model's files share (not for use outside src/num/, but by bench/tc_kernel.c,
 * which times the kernels' inner loop, ACC_TCF_TERMS, alone) */
#ifndef AMLA_ACC_TC_INT_H
#define AMLA_ACC_TC_INT_H

#include <math.h>
#include <stdint.h>

/* Parameters of the tensor-core block models: fraction bits F, block B, promotion interval. */
typedef struct {
    int f, b, promote;
} acc_tc_t;

/* Each tensor-core model's parameters, indexed by its acc_model_t (acc_tc.c). */
extern const acc_tc_t acc_tc_models[];

/* Exponent of a nonzero operand as the tensor core sees it: its binade, or for a subnormal of
 * its format the format's minimum exponent. */
int acc_tc_exp(double x, int emin);

/* The scalar block model (any operands; acc: C's own values as the first block's C; acc_tc.c). */
void acc_tc_gemm_model(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                       long N, long K, const acc_tc_t *tc, int emin_a, int emin_b, int acc);

/* The block model (with acc, C's own values as the first block's C) in binary32 and int32
 * lanes where its conditions hold: then C is written and 1 returned; else 0, C untouched
 * (acc_tc_f32.c; 0 without AVX2). With acc and rs, C's rows scaled first as acc_tc_gemm_acc_scaled
 * says (the kernels as they load them). */
int acc_tc_gemm_f32(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                    long N, long K, const acc_tc_t *tc, int emin_a, int emin_b, int acc, const double *rs);

/* C += A op(B) under tc where the binary32 lanes declined (acc_tc.c): the binary64 lanes where C holds finite
 * binary32 magnitudes, else the scalar model. */
void acc_tc_gemm_acc64(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                       long N, long K, const acc_tc_t *tc, int emin_a, int emin_b);

/* The block model in binary64 lanes (AVX2, four columns at once; acc_tc.c), for any operands
 * whose exponents keep binary64's scalings exact and a C (with acc) below 2^128 in magnitude. */
void acc_tc_gemm_x64(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                     long N, long K, const acc_tc_t *tc, int emin_a, int emin_b, int acc);

/* The binary32 lanes' operands: the running exponent range of the nonzero ones (as binary32
 * values) and whether every one fits the lanes. */
typedef struct {
    float emx, emn;
    int ok;
} acc_tcf_range_t;

/* x[0:m] as the binary32 lanes take them, m = n rounded down to a multiple of 8 (returned):
 * v[i] = x[i] as binary32, e[i] its exponent as the tensor core sees it (at least emin;
 * -infinity for a zero); g's range widened by the nonzero ones, and g->ok cleared unless each
 * is zero or finite with at most 12 significant bits and a binade of at least -126. The
 * AVX-512 form of acc_tc_f32.c's tcf_operand (acc_tc_f32x16.c); t-acc compares the two. */
long acc_tcf16_convert(float *v, float *e, const double *x, long n, int emin, acc_tcf_range_t *g);

/* The same, one element at a time, for any n (acc_tc_f32.c). */
void acc_tcf_convert1(float *v, float *e, const double *x, long n, int emin, acc_tcf_range_t *g);

/* Whether the C [M][N] an accumulating product starts from suits the binary32 lanes: zeros and
 * normal binary32 values only (below 2^127); *cmax raised to the largest |C| seen (all of it
 * where it suits). Element by element (acc_tc_f32.c) and in AVX-512 (acc_tc_f32x16.c); t-acc
 * compares the two. */
int acc_tcf_check_c1(const double *C, long ldc, long M, long N, double *cmax);
int acc_tcf16_check_c(const double *C, long ldc, long M, long N, double *cmax);

/* The AVX-512 kernel takes operand exponents as int16 (exact: binades of -150 .. 127 and their
 * sums), two to a 32-bit lane: a zero's exponent is ACC_TCF_NONE, far enough below every binade
 * that a sum with it stays below ACC_TCF_LIVE and two of them still fit in int16. */
#define ACC_TCF_NONE (-12288)
#define ACC_TCF_LIVE (-4096)

/* An exponent as acc_tcf16_convert gives it (-infinity for a zero) in int16. */
static inline int32_t acc_tcf_e16(float e)
{
    return e == -INFINITY ? ACC_TCF_NONE : (int32_t)e;
}

/* Two exponents in one 32-bit lane: lo in the low int16, hi in the high one. */
static inline int32_t acc_tcf_pair(float lo, float hi)
{
    return (int32_t)(((uint32_t)acc_tcf_e16(hi) << 16) | ((uint32_t)acc_tcf_e16(lo) & 0xffffu));
}

/* q[i] = acc_tcf_pair(lo[i], hi[i]) for i < n, sixteen at a time (AVX-512, acc_tc_f32x16.c). */
void acc_tcf16_pairs(int32_t *q, const float *lo, const float *hi, long n);

/* dst [K][16] = src [16][K] transposed, 32-bit words (a panel of op(B) from sixteen of its
 * columns; AVX-512, acc_tc_f32x16.c). */
void acc_tcf16_transpose(void *dst, const void *src, long K);

/* The binary32-lane kernel's AVX-512 form (acc_tc_f32x16.c): rows i .. i + mr - 1 (mr <= 4) of
 * C against the nr columns from j0 in panels of sixteen (panel p's operands at bp, be or bq + 16 p K,
 * k-major, sixteen per k; the last panel may be narrower), one after the other in one call (low[p] for
 * panel p); a[r] the rows' operands. The exponents: for blocks of at least ACC_TCF16_PAIRS
 * products, in bq (each in both halves of its lane: acc_tcf_pair(e, e)) and ep[h] (rows 2h and
 * 2h + 1 paired; row 2h alone where mr = 2h + 1: its pair's high half is not used), whose
 * maximum takes half the instructions; for smaller blocks, where the int16 pairs' packing costs
 * more than it saves, as binary32 values in be and ea[r]; or, where job->qbias says so, as int8
 * quads (acc_tcf8_quads: ep[0] the group's line, four rows computed, those past mr copies of real
 * ones), for blocks of at most 32 products. Where a block's exponent maximum falls below f - 126 (with
 * quads: where the C given has a lane below 2^(f - 126)), low[p] is set and the panel's C is left as it
 * was (the caller recomputes the tile otherwise); with job->rs, C's rows scaled as they are loaded, as the AVX2 kernel
 * does it (a tile whose scaled C passes lim is left too, unscaled). Only where cpu_has_avx512() says so. */
#define ACC_TCF16_MR 4
#define ACC_TCF16_PAIRS 16
/* The kernels' inner loop, one definition for both widths (W lanes; vi, vf the vector types, V the intrinsics'
 * prefix, LD its integer load): the terms k0 .. k1 - 1 of four rows added into s, each exact (a product of 12-bit operands),
 * scaled exactly onto its row's grid (up) and truncated toward zero; unrolled where the block is a constant,
 * the empty asm keeping each sum a chain, as written (the compiler's reassociation into a tree of all the
 * terms spills them). Where nn > 0, the next block's exponents (int8 quads: neq[i] the group's, nbq + i W
 * op(B)'s, i < nn <= k1 - k0) are folded into *en by saturating sums and maxima, one k along with
 * each of these: a block's scales wait on the block before it (through C), its exponent maximum does not, and
 * so computed it fills the ports the terms leave, where as a tree of its own before the block it delays it. */
#define ACC_TCF_TERMS(name, attr, vi, vf, W, V, LD)                                                            \
    attr static inline __attribute__((always_inline)) void name(vi *s, const float *const *a, long k0, long k1, \
                                                                const float *bp, const vf *up, vi *en,        \
                                                                const int32_t *neq, const int32_t *nbq,       \
                                                                long nn)                                      \
    {                                                                                                         \
        _Pragma("GCC unroll 32") for (long k = k0; k < k1; k++) {                                             \
            vf bv = V##_loadu_ps(bp + k * W);                                                                 \
            _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {                                             \
                s[r] = V##_add_epi32(s[r], V##_cvttps_epi32(V##_mul_ps(V##_mul_ps(V##_set1_ps(a[r][k]), bv), up[r]))); \
                __asm__("" : "+v"(s[r]));                                                                     \
            }                                                                                                 \
            if (k - k0 < nn)                                                                                  \
                *en = V##_max_epi8(*en, V##_adds_epi8(V##_set1_epi32(neq[k - k0]),                            \
                                                      LD((const vi *)(nbq + (k - k0) * W))));         \
        }                                                                                                     \
    }

/* What a kernel call computes: the model (f, bsz, promote), whether C's values start the chains (acc),
 * the exponents' form (qbias: the int8 quads' bias, ACC_TCF8_NOQ for pairs or binary32 values), per
 * block b (products b bsz ..) whether its integer fits one int32 (single[b], where the caller's bound
 * says so; else two halves joined where they leave it), and C's row scales (or NULL) with the
 * largest exponent field a scaled C may have (lim). */
typedef struct {
    int f, bsz, acc, promote;
    int qbias;
    const unsigned char *single;
    const double *rs;
    int lim;
} acc_tcf_job_t;
void acc_tcf16_rows(int mr, double *C, long ldc, long j0, long nr, const float *const *a, const float *const *ea,
                    const int32_t *const *ep, long K, const float *bp, const float *be, const int32_t *bq,
                    const acc_tcf_job_t *job, int *low);

/* The kernels' exponents (AVX2: every block size; AVX-512: blocks of at most 32), where each operand's exponents (zeros aside)
 * span at most ACC_TCF8_QSPAN binades: int8, relative
 * to the largest (A's and op(B)'s each), four to a 32-bit lane (byte j of a lane: row 4g + j of A
 * at one k; op(B)'s column, in all four), ACC_TCF8_QNONE for a zero. A saturating int8 sum of two
 * is exact for nonzero operands (-126 .. 0) and ACC_TCF8_QNONE where either is zero. The kernel
 * then takes ep[g] as group g's line, bq as op(B)'s, and qbias as the sum of the two largest
 * exponents; ACC_TCF8_NOQ where the exponents are pairs or binary32 values. q[k] for k < n from
 * e[0..3][k], exponents as acc_tcf8_convert gives them (-infinity for a zero), less bias. */
#define ACC_TCF8_QSPAN 63
#define ACC_TCF8_QNONE (-128)
#define ACC_TCF8_NOQ (-(1 << 30))
void acc_tcf8_quads(int32_t *q, const float *const *e, long n, int bias);
/* The same for op(B)'s line (e[0] .. e[3] all e: each byte e[i] - bias), sixteen at a time (AVX-512,
 * acc_tc_f32x16.c; t-acc compares the two) */
void acc_tcf16_bquads(int32_t *q, const float *e, long n, int bias);

/* The same kernel and helpers in AVX2, eight columns at a time (acc_tc_f32x8.c, acc_tc_pack8.c): acc_tcf8_rows
 * as acc_tcf16_rows on the nr columns from j0 in panels of eight (panel p's operands at bp, be or bq
 * + 8 p K, eight per k; the last panel may be narrower), one after the other in one call, for up to
 * ACC_TCF8_ROWS rows (mr) in groups of four, every group computing four rows (those past mr
 * copies of real ones, a[r], ea[r] and ep[r / 2] for r < 4 ceil(mr / 4) all given) and bit g of
 * low[p] set where group g's rows of panel p are left to the caller;
 * acc_tcf8_transpose dst [K][8] = src [8][K]; acc_tcf8_pairs, acc_tcf8_convert and
 * acc_tcf8_check_c as their AVX-512 forms. With rs (and acc), row r's C scaled by rs[r] as it is loaded
 * (acc_tc_gemm_acc_scaled), and a group whose scaled C has an exponent field above lim left to the caller
 * too (unscaled). The rest as the job's fields say. Only where cpu_has_avx2_fma() says so. */
#define ACC_TCF8_ROWS 16
void acc_tcf8_rows(int mr, double *C, long ldc, long j0, long nr, const float *const *a, const float *const *ea,
                   const int32_t *const *ep, long K, const float *bp, const float *be, const int32_t *bq,
                   const acc_tcf_job_t *job, int *low);
void acc_tcf8_transpose(void *dst, const void *src, long K);
/* The bits binary32 values set, OR'ed: kf[k] |= those of x[i ld + k] (i < rows, k < K); and of x[0:n]. */
void acc_tcf8_or_cols(uint32_t *kf, const float *x, long rows, long ld, long K);
uint32_t acc_tcf8_or_bits(const float *x, long n);
void acc_tcf8_pairs(int32_t *q, const float *lo, const float *hi, long n);
long acc_tcf8_convert(float *v, float *e, const double *x, long n, int emin, acc_tcf_range_t *g);
int acc_tcf8_check_c(const double *C, long ldc, long M, long N, double *cmax);

#endif
