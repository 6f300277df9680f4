/* gemm -- `bench --gemm`: the lab's FP32 and FP64 GEMMs against OpenBLAS's on the attention's two products, one
 * thread; and the FP32 BLAS attention once more for the floors' pairs */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <omp.h>

#include "base/mem.h"
#include "config/opts.h"
#include "data/gen.h"
#include "num/acc/acc.h"
#include "num/acc/gemm_u8.h"
#include "num/fmt/fmt.h"
#include "num/vec/cpu.h"

#include "bench.h"

/* the FP32 BLAS attention once more, for floors_measure's pairs */
double bench_ref32_time(void *b)
{
    return bench_ref_time(b, 0, 1);
}

/* --gemm: the lab's GEMMs against OpenBLAS's on the attention's two products, one thread, the same
 * operands (BF16 values; P: exp(-|N(0,1)|) rounded to BF16): Q K^T of R x sk x dk (K transposed) and
 * P V of R x dv x sk, fp32-fma against sgemm and fp64 against dgemm, each the best of reps runs, the
 * two alternated; the ratio is the lab's time over BLAS's. */
void bench_gemm(const double *q, const double *k, const double *v, long R, long sk, long dk, long dv, int reps)
{
    double *p = malloc(sizeof(double) * (size_t)(R * sk)), *c = malloc(sizeof(double) * (size_t)(R * (sk > dv ? sk : dv)));
    float *qf = malloc(sizeof(float) * (size_t)(R * dk)), *kf = malloc(sizeof(float) * (size_t)(sk * dk));
    float *vf = malloc(sizeof(float) * (size_t)(sk * dv)), *pf = malloc(sizeof(float) * (size_t)(R * sk));
    float *cf = malloc(sizeof(float) * (size_t)(R * (sk > dv ? sk : dv)));
    fmt_rng_t rng;
    fmt_rng_seed(&rng, 7);
    for (long i = 0; i < R * sk; i++) {
        double u1 = ((double)(fmt_rng_next(&rng) >> 11) + 0.5) * 0x1p-53, u2 = (double)(fmt_rng_next(&rng) >> 11) * 0x1p-53;
        p[i] = fmt_round(exp(-fabs(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2))), FMT_BF16, FMT_RNE, 0, NULL);
        pf[i] = (float)p[i];
    }
    for (long i = 0; i < R * dk; i++)
        qf[i] = (float)q[i];
    for (long i = 0; i < sk * dk; i++)
        kf[i] = (float)k[i];
    for (long i = 0; i < sk * dv; i++)
        vf[i] = (float)v[i];
    printf("# the lab's GEMMs against OpenBLAS (%s kernels), one thread, best of %d; ratio = lab / BLAS\n",
           openblas_get_corename(), reps);
    printf("%-28s %-12s %10s %10s %7s\n", "product", "model", "blas s", "lab s", "ratio");
    for (int prod = 0; prod < 2; prod++)
        for (int f64 = 0; f64 < 2; f64++) {
            double tb = 1e9, tl = 1e9;
            for (int r = 0; r < reps; r++) {
                double t0 = bench_now();
                if (prod == 0 && f64)
                    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)R, (int)sk, (int)dk, 1.0, q, (int)dk, k,
                                (int)dk, 0.0, c, (int)sk);
                else if (prod == 0)
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)R, (int)sk, (int)dk, 1.0f, qf, (int)dk, kf,
                                (int)dk, 0.0f, cf, (int)sk);
                else if (f64)
                    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)R, (int)dv, (int)sk, 1.0, p, (int)sk, v,
                                (int)dv, 0.0, c, (int)dv);
                else
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)R, (int)dv, (int)sk, 1.0f, pf, (int)sk,
                                vf, (int)dv, 0.0f, cf, (int)dv);
                double t1 = bench_now();
                acc_model_t m = f64 ? ACC_FP64 : ACC_FP32_FMA;
                if (prod == 0)
                    acc_gemm(c, sk, q, dk, k, dk, 1, R, sk, dk, m);
                else
                    acc_gemm(c, dv, p, sk, v, dv, 0, R, dv, sk, m);
                double t2 = bench_now();
                tb = t1 - t0 < tb ? t1 - t0 : tb;
                tl = t2 - t1 < tl ? t2 - t1 : tl;
            }
            char name[64];
            if (prod == 0)
                snprintf(name, sizeof name, "Q K^T %ld x %ld x %ld", R, sk, dk);
            else
                snprintf(name, sizeof name, "P V %ld x %ld x %ld", R, dv, sk);
            printf("%-28s %-12s %10.4f %10.4f %7.2f\n", name, f64 ? "fp64" : "fp32-fma", tb, tl, tl / tb);
        }
    free(p), free(c), free(qf), free(kf), free(vf), free(pf), free(cf);
}
