/* t-acc -- accumulation models against hand-written sequential loops and MPFR-checked rounding */
#include <math.h>
#include <stdlib.h>

#include "acc.h"
#include "check.h"
#include "fmt.h"

int main(void)
{
    fmt_rng_t rng;
    fmt_rng_seed(&rng, 2024); /* seed 2024 (include this in bug reports) */
    /* the fp16-acc rounding equals the format module's (itself checked against MPFR) */
    for (int i = 0; i < 200000; i++) {
        double x = ldexp((double)(fmt_rng_next(&rng) >> 11), -53) * ldexp(1.0, (int)(fmt_rng_next(&rng) % 50) - 30);
        if (i & 1)
            x = -x;
        double want = fmt_round(x, FMT_FP16, FMT_RNE, 0, NULL);
        CHECK(acc_fp16_round(x) == want || (isinf(want) && acc_fp16_round(x) == want), "fp16 round %a: %a vs %a", x,
              acc_fp16_round(x), want);
    }
    /* each model against the loop it names, on bf16-valued operands, odd sizes, both layouts */
    long M = 7, N = 19, K = 37;
    double *A = malloc(sizeof(double) * (size_t)(M * K)), *B = malloc(sizeof(double) * (size_t)(N * K));
    double *C = malloc(sizeof(double) * (size_t)(M * N)), *Bt = malloc(sizeof(double) * (size_t)(K * N));
    for (long i = 0; i < M * K; i++)
        A[i] = fmt_round(ldexp((double)(fmt_rng_next(&rng) >> 11), -53) - 0.5, FMT_BF16, FMT_RNE, 0, NULL);
    for (long i = 0; i < N * K; i++)
        B[i] = fmt_round(ldexp((double)(fmt_rng_next(&rng) >> 11), -52) - 1.0, FMT_BF16, FMT_RNE, 0, NULL);
    for (long j = 0; j < N; j++)
        for (long k = 0; k < K; k++)
            Bt[k * N + j] = B[j * K + k];
    /* the tensor-core block step by hand (exponents given as the hardware takes them):
     * 1 + 2^-30 with 25 fraction bits: 2^-30 falls below the grid 2^-25 and is dropped;
     * 1 - 2^-30: the negative term truncates toward zero too, so no borrow (no sticky bit);
     * 1 + 2^-23 + 2^-26: 2^-26 is dropped, 2^-23 kept; with 13 fraction bits (FP8) 1 + 2^-14
     * is 1, and 1.5 + 1.5 = 3 keeps 14 significant bits */
    {
        double t1[2] = {1.0, 0x1p-30}, t2[2] = {1.0, -0x1p-30}, t3[3] = {1.0, 0x1p-23, 0x1p-26}, t4[2] = {1.0, 0x1p-14},
               t5[2] = {1.5, 1.5};
        int e1[2] = {0, -30}, e3[3] = {0, -23, -26}, e4[2] = {0, -14}, e5[2] = {0, 0};
        CHECK(acc_tc_block(t1, e1, 2, 25) == 1.0, "1 + 2^-30 -> %a", acc_tc_block(t1, e1, 2, 25));
        CHECK(acc_tc_block(t2, e1, 2, 25) == 1.0, "1 - 2^-30 -> %a", acc_tc_block(t2, e1, 2, 25));
        CHECK(acc_tc_block(t3, e3, 3, 25) == 1.0 + 0x1p-23, "1 + 2^-23 + 2^-26 -> %a", acc_tc_block(t3, e3, 3, 25));
        CHECK(acc_tc_block(t4, e4, 2, 13) == 1.0, "fp8: 1 + 2^-14 -> %a", acc_tc_block(t4, e4, 2, 13));
        CHECK(acc_tc_block(t5, e5, 2, 13) == 3.0, "fp8: 1.5 + 1.5 -> %a", acc_tc_block(t5, e5, 2, 13));
        /* a product 1.5 x 1.5 = 2.25 keeps its operands' exponent sum (0): on the grid of 25
         * fraction bits from 2^0, a companion 2^-25 survives, though 2.25's own binade is 1 */
        double t6[2] = {2.25, 0x1p-25};
        int e6[2] = {0, -25};
        CHECK(acc_tc_block(t6, e6, 2, 25) == fmt_round(2.25 + 0x1p-25, FMT_FP32, FMT_RZ, 0, NULL), "2.25 + 2^-25");
    }
    /* the element-wise models against the loops they name (the tensor-core models are checked
     * against H100 captures in t-gpu) */
    for (int model = 0; model <= ACC_FP16; model++)
        for (int trans = 0; trans < 2; trans++) {
            acc_gemm(C, N, A, K, trans ? B : Bt, trans ? K : N, trans, M, N, K, (acc_model_t)model);
            for (long i = 0; i < M; i++)
                for (long j = 0; j < N; j++) {
                    double want = 0;
                    float f = 0;
                    for (long k = 0; k < K; k++) {
                        double a = A[i * K + k], b = B[j * K + k];
                        if (model == ACC_FP64)
                            want = fma(a, b, want);
                        else if (model == ACC_FP32_FMA)
                            f = fmaf((float)a, (float)b, f);
                        else if (model == ACC_FP32_MULADD)
                            f = f + (float)a * (float)b;
                    }
                    if (model == ACC_FP32_FMA || model == ACC_FP32_MULADD)
                        want = f;
                    if (model == ACC_FP16)
                        for (long k0 = 0; k0 < K; k0 += ACC_FP16_K) {
                            double s = want;
                            for (long k = k0; k < k0 + ACC_FP16_K && k < K; k++)
                                s += A[i * K + k] * B[j * K + k];
                            want = fmt_round(s, FMT_FP16, FMT_RNE, 0, NULL);
                        }
                    CHECK(C[i * N + j] == want, "%s trans %d (%ld,%ld): %a vs %a", acc_table[model].name, trans, i, j,
                          C[i * N + j], want);
                }
        }
    free(A);
    free(B);
    free(C);
    free(Bt);
    return check_done("t-acc");
}
