/* tc_kernel -- the tensor-core block model's cost in cycles per row, product and eight columns (one AVX2
 * vector of terms), on this processor: `make bench-tc`. It times, with Hopper's model (tc-hopper: F 25,
 * blocks of 16) and one thread:
 *   - the per-term work alone in a loop of nothing else (a broadcast, the product, its scaling onto a grid,
 *     the truncating conversion, the integer addition: four rows, eight columns, as the kernel does it),
 *     the floor of this formulation (floors.c, which make bench also runs); and on a processor with AVX-512,
 *     the same sixteen columns a vector;
 *   - Q K^T of 128 x 8 x 576 with Q held (one panel of eight keys: the block kernel and its packing of K),
 *     with the operands' exponents in a narrow range (the kernels' int8 quads) and with one A value
 *     per row far above the rest (its int16 pairs, the path every product took before the quads);
 *   - an attention tile's two products as flashmla makes them: Q K^T of 128 x 64 x 576 (Q held) and
 *     O += P V of 128 x 512 x 64.
 * The products run the kernel acc_tc_f32.c picks (AVX-512 where the processor has it: it says which).
 * The clock is measured by a chain of dependent integer additions (one a cycle); every figure is the
 * best of 15 runs. Inputs are N(0,1) rounded to bf16 (P: exp(-|N(0,1)|)). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/mem.h"
#include "num/acc/acc_model.h"
#include "num/acc/acc_tc.h"
#include "num/vec/cpu.h"
#include "num/fmt/fmt.h"

#include "floors.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t rng = 88172645463325252ULL;

static double uniform(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return ((double)(rng >> 11) + 0.5) * 0x1p-53;
}

static double normal_bf16(void)
{
    double u1 = uniform(), u2 = uniform();
    return fmt_round(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2), FMT_BF16, FMT_RNE, 0, NULL);
}

/* cycles per second: 4e8 dependent additions of a register (one a cycle). Not of an immediate: Golden
 * Cove and its successors (Sapphire and Emerald Rapids) fold a chain of immediate additions at renaming,
 * two or more a cycle, which read 5.2 GHz on a 2.7 GHz Emerald Rapids guest (every figure below twice
 * what it was) */
static double clock_hz(void)
{
    long x = 0, one = 1, n = 100000000;
    double best = 1e9;
    for (int t = 0; t < 3; t++) {
        double t0 = now();
        for (long i = 0; i < n; i++)
            __asm__ volatile("add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0" : "+r"(x) : "r"(one));
        double dt = now() - t0;
        best = dt < best ? dt : best;
    }
    return 4.0 * (double)n / best;
}

typedef struct {
    double *C, *A, *B;
    long M, N, K, ldb;
    int b_trans, acc;
} gemm_t;

static void run_gemm(void *p)
{
    gemm_t *g = p;
    int e = fmt_table[FMT_BF16].emin;
    if (g->acc)
        acc_tc_gemm_acc(g->C, g->N, g->A, g->K, g->B, g->ldb, g->b_trans, g->M, g->N, g->K, ACC_TC_HOPPER, e, e);
    else
        acc_tc_gemm(g->C, g->N, g->A, g->K, g->B, g->ldb, g->b_trans, g->M, g->N, g->K, ACC_TC_HOPPER, e, e);
}

/* cycles per row, product and eight columns of one GEMM */
static double gemm_cycles(gemm_t *g, double hz, int reps)
{
    return floors_best_of(run_gemm, g, reps, 15) * hz / ((double)g->M * (double)g->K * (double)g->N / 8);
}

int main(void)
{
    mem_reuse_freed(); /* as amla-lab does */
    if (!cpu_has_avx2_fma()) {
        printf("tc_kernel: this processor has no AVX2 and FMA; the binary32-lane kernel does not run here\n");
        return 0;
    }
    double hz = clock_hz();
    printf("clock %.2f GHz (dependent additions); cycles per row, product and eight columns, best of 15\n", hz / 1e9);
    long M = 128, K = 576, N = 64, dv = 512;
    double *q = malloc(sizeof(double) * (size_t)(M * K)), *qw = malloc(sizeof(double) * (size_t)(M * K));
    double *kk = malloc(sizeof(double) * (size_t)(N * K)), *s = malloc(sizeof(double) * (size_t)(M * N));
    double *p = malloc(sizeof(double) * (size_t)(M * N)), *v = malloc(sizeof(double) * (size_t)(N * dv));
    double *o = calloc((size_t)(M * dv), sizeof(double));
    for (long i = 0; i < M * K; i++)
        q[i] = qw[i] = normal_bf16();
    for (long i = 0; i < N * K; i++)
        kk[i] = normal_bf16();
    for (long i = 0; i < N * dv; i++)
        v[i] = normal_bf16();
    for (long i = 0; i < M * N; i++)
        p[i] = fmt_round(exp(-fabs(normal_bf16())), FMT_BF16, FMT_RNE, 0, NULL);
    for (long r = 0; r < M; r++) /* exponents spanning more than 63 binades: the pairs */
        qw[r * K] = 0x1p60;
    printf("  the terms alone (broadcast, product, scaling, truncating conversion, addition): %.2f\n",
           floors_terms_seconds(0) * hz / (16.0 * FLOORS_TERMS_K));
    if (cpu_has_avx512())
        printf("  the same in AVX-512, sixteen columns a vector:                 %.2f\n",
               floors_terms_seconds(1) * hz / (16.0 * FLOORS_TERMS_K * 2));
    /* which kernel the products below ran (acc_tc_f32.c's choice) */
    printf("  products by the %s\n", acc_simd >= 2 && cpu_has_avx512()
                                          ? "AVX-512 kernel (panels of sixteen columns: 128 x 8 is half a panel)"
                                          : "AVX2 kernel (panels of eight columns)");
    gemm_t g = {s, q, kk, M, 8, K, K, 1, 0};
    acc_tc_hold(q, K, M, K, fmt_table[FMT_BF16].emin);
    printf("  Q K^T 128 x 8 x 576, Q held, int8 quads:                    %.2f\n", gemm_cycles(&g, hz, 20));
    acc_tc_hold(qw, K, M, K, fmt_table[FMT_BF16].emin);
    g.A = qw;
    printf("  Q K^T 128 x 8 x 576, Q held, int16 pairs (exponents > 63 apart): %.2f\n", gemm_cycles(&g, hz, 20));
    acc_tc_hold(q, K, M, K, fmt_table[FMT_BF16].emin);
    g.A = q, g.N = N;
    printf("  Q K^T 128 x 64 x 576, Q held (an attention tile's scores):   %.2f\n", gemm_cycles(&g, hz, 4));
    acc_tc_release();
    gemm_t pv = {o, p, v, M, dv, N, dv, 0, 1};
    printf("  O += P V 128 x 512 x 64, accumulating (its output):         %.2f\n", gemm_cycles(&pv, hz, 4));
    free(q);
    free(qw);
    free(kk);
    free(s);
    free(p);
    free(v);
    free(o);
    return 0;
}
