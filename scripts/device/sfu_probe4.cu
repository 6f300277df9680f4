// sfu_probe4 -- the lab's SFU models (src/num/sfu/sfu.c, compiled here as device code) against the
// hardware's ex2.approx.ftz.f32, rcp.approx.ftz.f32 and lg2.approx.ftz.f32 on every binary32
// input; lg2's mismatches are counted per input binade and the first few printed.
//   nvcc -O2 -arch=sm_90 -Isrc -o sfu_probe4 scripts/device/sfu_probe4.cu && ./sfu_probe4
#include <cstdint>
#include <cstdio>

#include "sfu_hw.cuh"

#define SFU_FN __host__ __device__
#define SFU_TAB __device__
#include "../src/num/sfu/sfu.c"


__global__ void check(unsigned long long *cnt, uint32_t hi)
{
    for (uint32_t lo = blockIdx.x * blockDim.x + threadIdx.x; lo < 65536u; lo += gridDim.x * blockDim.x) {
        float x = __uint_as_float(hi << 16 | lo);
        if (!same(hw_ex2(x), sfu_ex2(x)))
            atomicAdd(&cnt[0], 1ull);
        if (!same(hw_rcp(x), sfu_rcp(x)))
            atomicAdd(&cnt[1], 1ull);
        if (!same(hw_lg2(x), sfu_lg2(x))) {
            unsigned long long k = atomicAdd(&cnt[2], 1ull);
            atomicAdd(&cnt[3 + (__float_as_uint(x) >> 23 & 0xff)], 1ull);
            if (k < 16) {
                cnt[300 + 2 * k] = __float_as_uint(x);
                cnt[301 + 2 * k] = (unsigned long long)__float_as_uint(hw_lg2(x)) << 32 | __float_as_uint(sfu_lg2(x));
            }
        }
    }
}

int main()
{
    static unsigned long long c[400];
    unsigned long long *cnt;
    cudaMalloc(&cnt, sizeof c);
    cudaMemset(cnt, 0, sizeof c);
    for (uint32_t hi = 0; hi < 65536u; hi++)
        check<<<64, 256>>>(cnt, hi);
    cudaMemcpy(c, cnt, sizeof c, cudaMemcpyDeviceToHost);
    printf("the lab's model on every binary32 input (4294967296): ex2 mismatches %llu, rcp mismatches %llu, lg2 "
           "mismatches %llu (%s)\n",
           c[0], c[1], c[2], cudaGetErrorString(cudaGetLastError()));
    for (int e = 0; e < 256; e++)
        if (c[3 + e])
            printf("  lg2: inputs in [2^%d, 2^%d): %llu mismatches\n", e - 127, e - 126, c[3 + e]);
    for (unsigned long long k = 0; k < c[2] && k < 16; k++)
        printf("  lg2(0x%08llx): H100 0x%08llx, model 0x%08llx\n", c[300 + 2 * k], c[301 + 2 * k] >> 32,
               c[301 + 2 * k] & 0xffffffffull);
    return 0;
}
