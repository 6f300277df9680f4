// Includes' hash value: 0e68b420ed13c742411a5cc7c6cc076e

#include <deep_gemm/impls/sm90_fp8_paged_mqa_logits.cuh>

using namespace deep_gemm;

static void __instantiate_kernel() {
    auto ptr = reinterpret_cast<void*>(&sm90_fp8_paged_mqa_logits<
        2, 64,
        128, 64,
        true, false,
        3, 3,
        256,
        128, 512,
        float
    >);
};
