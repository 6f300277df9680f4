// sfu_probe2 -- how ex2.approx.ftz.f32 turns |x| < 1 into its fixed-point fraction: for every
// binary32 x with |x| < 1, the hardware result against the split model (the magnitude rounded
// to 23 fraction bits under each candidate rule, negative x through the one's complement of the
// fraction), mismatches counted per rule, sign and binade of x.
//   nvcc -O2 -arch=sm_90 -o sfu_probe2 scripts/device/sfu_probe2.cu && ./sfu_probe2
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "sfu_hw.cuh"


// the split model for a magnitude already in fixed point (23 fraction bits), sign s
__device__ float model(long long mag, int s)
{
    long long I = mag >> 23, F = mag & 0x7fffff;
    if (!s)
        return ldexpf(hw_ex2((float)F * 0x1p-23f), (int)I);
    if (!F)
        return ldexpf(1.0f, (int)-I);
    return ldexpf(hw_ex2((float)((~F) & 0x7fffff) * 0x1p-23f), (int)(-I - 1));
}

enum { R_RNE, R_RZ, R_RA, R_RNA, R_CEIL24, R_N }; // R_CEIL24: keep 24 bits (one more), RZ to 23 after complement
__global__ void probe(unsigned long long *cnt, uint32_t hi)
{
    for (uint32_t lo = blockIdx.x * blockDim.x + threadIdx.x; lo < 65536u; lo += gridDim.x * blockDim.x) {
        uint32_t bits = hi << 16 | lo;
        float x = __uint_as_float(bits);
        if (!(fabsf(x) < 1.0f))
            continue;
        int s = bits >> 31, e = bits >> 23 & 0xff;
        int bin = e >= 103 ? e - 103 : 0; // 2^-24 .. 2^-1 as 1 .. 23; 0 below
        float y = hw_ex2(x);
        double a = fabs((double)x) * 8388608.0; // magnitude in units of 2^-23
        long long m[R_N];
        m[R_RNE] = (long long)rint(a);
        m[R_RZ] = (long long)floor(a);
        m[R_RA] = (long long)ceil(a);
        m[R_RNA] = (long long)floor(a + 0.5);
        m[R_CEIL24] = s ? (long long)ceil(a) : (long long)floor(a);
        for (int r = 0; r < R_N; r++) {
            float p = model(m[r], s);
            if (__float_as_uint(p) != __float_as_uint(y))
                atomicAdd(&cnt[(r * 2 + s) * 32 + bin], 1ull);
        }
        atomicAdd(&cnt[(R_N * 2 + s) * 32 + bin], 1ull);
    }
}

int main()
{
    unsigned long long *cnt, c[(R_N + 1) * 2 * 32];
    cudaMalloc(&cnt, sizeof c);
    cudaMemset(cnt, 0, sizeof c);
    for (uint32_t hi = 0; hi < 65536u; hi++)
        probe<<<64, 256>>>(cnt, hi);
    cudaMemcpy(c, cnt, sizeof c, cudaMemcpyDeviceToHost);
    const char *names[R_N] = {"rne", "rz", "away", "rna", "floor-signed"};
    for (int s = 0; s < 2; s++) {
        printf("%s x: binade (2^k), inputs, mismatches per rule (rne rz away rna floor-signed)\n", s ? "negative" : "positive");
        for (int b = 0; b < 24; b++) {
            printf("  %3d %9llu", b ? b - 24 : -999, c[(R_N * 2 + s) * 32 + b]);
            for (int r = 0; r < R_N; r++)
                printf(" %9llu", c[(r * 2 + s) * 32 + b]);
            printf("\n");
        }
    }
    (void)names;
    return 0;
}
