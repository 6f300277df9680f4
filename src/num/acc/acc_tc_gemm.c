/* acc_tc_gemm -- the tensor-core block models' GEMMs as the lab calls them: the binary32 lanes (acc_tc_f32.c) where
 * their conditions hold, else the binary64 lanes or the scalar model (acc_tc.c), bit-identical whichever runs */
#include "num/acc/acc_tc.h"
#include "num/acc/acc_tc_int.h"

#include <stddef.h>

#include "num/acc/acc_model.h"
#include "num/vec/cpu.h"
#include "num/vec/vec.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define ACC_HAVE_X86 1
#endif

void acc_tc_gemm(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                 long N, long K, acc_model_t model, int emin_a, int emin_b)
{
#ifdef ACC_HAVE_X86
    if (acc_simd && cpu_has_avx2_fma()) {
        if (!acc_tc_gemm_f32(C, ldc, A, lda, B, ldb, b_trans, M, N, K, &acc_tc_models[model], emin_a, emin_b, 0, NULL))
            acc_tc_gemm_x64(C, ldc, A, lda, B, ldb, b_trans, M, N, K, &acc_tc_models[model], emin_a, emin_b, 0);
        return;
    }
#endif
    acc_tc_gemm_model(C, ldc, A, lda, B, ldb, b_trans, M, N, K, &acc_tc_models[model], emin_a, emin_b, 0);
}

void acc_tc_gemm_acc(double *C, long ldc, const double *A, long lda, const double *B, long ldb, int b_trans, long M,
                     long N, long K, acc_model_t model, int emin_a, int emin_b)
{
#ifdef ACC_HAVE_X86
    /* the binary32 lanes check C themselves (a stricter check than the binary64 lanes'), and leave it untouched
     * where they decline */
    if (acc_simd && cpu_has_avx2_fma() &&
        acc_tc_gemm_f32(C, ldc, A, lda, B, ldb, b_trans, M, N, K, &acc_tc_models[model], emin_a, emin_b, 1, NULL))
        return;
#endif
    acc_tc_gemm_acc64(C, ldc, A, lda, B, ldb, b_trans, M, N, K, &acc_tc_models[model], emin_a, emin_b);
}

void acc_tc_gemm_acc_scaled(double *C, long ldc, const double *rs, const double *A, long lda, const double *B, long ldb,
                            int b_trans, long M, long N, long K, acc_model_t model, int emin_a, int emin_b)
{
#ifdef ACC_HAVE_X86
    /* the binary32 lanes scale C's rows as they load them */
    if (acc_simd && cpu_has_avx2_fma() &&
        acc_tc_gemm_f32(C, ldc, A, lda, B, ldb, b_trans, M, N, K, &acc_tc_models[model], emin_a, emin_b, 1, rs))
        return;
#endif
    for (long i = 0; i < M; i++)
        vec_scale32_ftz(C + i * ldc, C + i * ldc, N, rs[i]);
    acc_tc_gemm_acc(C, ldc, A, lda, B, ldb, b_trans, M, N, K, model, emin_a, emin_b);
}
