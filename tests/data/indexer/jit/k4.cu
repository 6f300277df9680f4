// Includes' hash value: f458fd89bc1fed2c585d6c9c15df3ab0

#include <deep_gemm/impls/sm90_fp8_mqa_logits.cuh>

using namespace deep_gemm;

static void __instantiate_kernel() {
    auto ptr = reinterpret_cast<void*>(&sm90_fp8_mqa_logits<
        64, 128,
        false,
        2, 256,
        3, 3,
        132,
        128, 512,
        float
    >);
};
