// sfu_probe4 -- the lab's SFU models (src/num/sfu.c, compiled here as device code) against the
// hardware's ex2.approx.ftz.f32 and rcp.approx.ftz.f32 on every binary32 input.
//   nvcc -O2 -arch=sm_90 -Isrc -o sfu_probe4 scripts/sfu_probe4.cu && ./sfu_probe4
#include <cstdint>
#include <cstdio>

#define SFU_FN __host__ __device__
#define SFU_TAB __device__
#include "../src/num/sfu.c"

__device__ __forceinline__ float hw_ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ float hw_rcp(float x)
{
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ bool same(float a, float b) { return __float_as_uint(a) == __float_as_uint(b) || (a != a && b != b); }

__global__ void check(unsigned long long *cnt, uint32_t hi)
{
    for (uint32_t lo = blockIdx.x * blockDim.x + threadIdx.x; lo < 65536u; lo += gridDim.x * blockDim.x) {
        float x = __uint_as_float(hi << 16 | lo);
        if (!same(hw_ex2(x), sfu_ex2(x)))
            atomicAdd(&cnt[0], 1ull);
        if (!same(hw_rcp(x), sfu_rcp(x)))
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
    printf("the lab's model on every binary32 input (4294967296): ex2 mismatches %llu, rcp mismatches %llu (%s)\n", c[0],
           c[1], cudaGetErrorString(cudaGetLastError()));
    return 0;
}
