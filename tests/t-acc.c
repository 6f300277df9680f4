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
    for (int model = 0; model < ACC_COUNT; model++)
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
