// sfu_probe3 -- the complete split models of ex2.approx.ftz.f32 and rcp.approx.ftz.f32 checked on
// every binary32 input, with the core of each (T(F) = ex2(F 2^-23), R(m) = rcp(m), m in [1, 2))
// taken from the hardware itself: what remains to model is only the core (tests/data/sfu).
//   ex2: NaN -> NaN; |x| >= 128 (and +-inf): +: inf, -: 0; else |x| truncated to 23 fraction
//        bits, I.F; x >= 0: 2^I T(F); x < 0: F = 0: 2^-I, else 2^(-I-1) T(~F); subnormal -> 0
//   rcp: NaN -> NaN; +-0 and subnormal (flushed) -> +-inf; +-inf -> +-0; else
//        sign 2^-e R(m), subnormal -> +-0
//   nvcc -O2 -arch=sm_90 -o sfu_probe3 scripts/device/sfu_probe3.cu && ./sfu_probe3
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "sfu_hw.cuh"

__device__ float flush(float y)
{
    uint32_t b = __float_as_uint(y);
    return (b & 0x7f800000u) == 0 ? __uint_as_float(b & 0x80000000u) : y;
}
__device__ float model_ex2(float x)
{
    if (x != x)
        return x;
    if (!(fabsf(x) < 128.0f))
        return x > 0 ? INFINITY : 0.0f;
    long long mag = (long long)floor(fabs((double)x) * 8388608.0); // truncation to 23 fraction bits
    long long I = mag >> 23, F = mag & 0x7fffff;
    float y;
    if (x >= 0)
        y = ldexpf(hw_ex2((float)F * 0x1p-23f), (int)I);
    else if (!F)
        y = ldexpf(1.0f, (int)-I);
    else
        y = ldexpf(hw_ex2((float)((~F) & 0x7fffff) * 0x1p-23f), (int)(-I - 1));
    return flush(y);
}
__device__ float model_rcp(float x)
{
    uint32_t b = __float_as_uint(x), s = b & 0x80000000u, e = b >> 23 & 0xff;
    if (x != x)
        return x;
    if (e == 0)
        return __uint_as_float(s | 0x7f800000u);
    if (e == 0xff)
        return __uint_as_float(s);
    float m = __uint_as_float((b & 0x807fffffu) | 0x3f800000u);
    return flush(ldexpf(hw_rcp(m), 127 - (int)e));
}

__global__ void check(unsigned long long *cnt, uint32_t hi)
{
    for (uint32_t lo = blockIdx.x * blockDim.x + threadIdx.x; lo < 65536u; lo += gridDim.x * blockDim.x) {
        float x = __uint_as_float(hi << 16 | lo);
        if (!same(hw_ex2(x), model_ex2(x)))
            atomicAdd(&cnt[0], 1ull);
        if (!same(hw_rcp(x), model_rcp(x)))
            atomicAdd(&cnt[1], 1ull);
    }
}

int main()
{
    unsigned long long *cnt, c[2];
    cudaMalloc(&cnt, sizeof c);
    cudaMemset(cnt, 0, sizeof c);
    for (uint32_t hi = 0; hi < 65536u; hi++)
        check<<<64, 256>>>(cnt, hi);
    cudaMemcpy(c, cnt, sizeof c, cudaMemcpyDeviceToHost);
    printf("every binary32 input (4294967296): ex2 model mismatches %llu, rcp model mismatches %llu\n", c[0], c[1]);
    return 0;
}
