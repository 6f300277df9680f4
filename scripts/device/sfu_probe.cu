// sfu_probe -- what the SFU's ex2.approx.ftz.f32, rcp.approx.ftz.f32 and lg2.approx.ftz.f32
// compute on this GPU: structural facts checked on every one of the 2^32 binary32 inputs, and
// the core of each instruction measured whole, for recovering its table-plus-interpolation
// model offline (issue 15; results/sfu-check.md records what was found).
//
//   nvcc -O2 -arch=sm_90 -o sfu_probe scripts/device/sfu_probe.cu && ./sfu_probe OUTDIR
//
// Structure tested (the model a table-and-quadratic SFU would have):
//  ex2: the input becomes a fixed-point number with 23 fraction bits (round to nearest even)
//       before the table: ex2(x) == ex2(fix23(x)) for |x| < 1, and the integer part only
//       scales the result: ex2(x) == 2^k ex2(f 2^-23) with fix23(x) = (k 2^23 + f) 2^-23,
//       f in [0, 2^23) (two's complement), or with the one's complement of the fraction for
//       negative x (as older NVIDIA SFUs do); FTZ: subnormal results are 0.
//  rcp: only the significand matters: rcp(m 2^e) == rcp(m) 2^-e for normal results.
//  lg2: only the significand and the exponent matter: lg2(m 2^e) is a function of (m, e)
//       whose fraction part comes from lg2(m) (checked offline from the tables below).
// Tables written (little-endian int32 .bin files, one value per input, LZMA-compressed by the
// driver script): for each input in the core domain, hardware result minus the correctly
// rounded binary32 result, in units in the last place of the correctly rounded result.
//   ex2_pos: x = f 2^-23, f in [0, 2^23)      ex2_neg: x = -f 2^-23
//   rcp:     x = 1 + f 2^-23                  lg2:     x = 1 + f 2^-23 and x = 2 + f 2^-22
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "sfu_hw.cuh"
#include <cstdlib>
#include <cstring>



// counters: [0] ex2 |x|<1 fix23, [1] ex2 two's complement split, [2] ex2 one's complement split,
// [3] rcp significand, [4] inputs where ex2's split applied, [5] rcp inputs checked,
// [6] ex2 results subnormal (should be 0 under FTZ), [7] rcp results subnormal,
// [8] lg2 results for subnormal inputs equal lg2(0) = -inf
enum { C_EX2_FIX, C_EX2_TWO, C_EX2_ONE, C_RCP_SIG, C_EX2_N, C_RCP_N, C_EX2_SUB, C_RCP_SUB, C_LG2_SUB, C_COUNT };

__global__ void structure(unsigned long long *cnt, uint32_t hi)
{
    unsigned long long local[C_COUNT] = {0};
    for (uint32_t lo = blockIdx.x * blockDim.x + threadIdx.x; lo < 65536u; lo += gridDim.x * blockDim.x) {
        uint32_t bits = hi << 16 | lo;
        float x = __uint_as_float(bits);
        float y = hw_ex2(x);
        uint32_t yb = __float_as_uint(y);
        local[C_EX2_SUB] += (yb & 0x7f800000u) == 0 && (yb & 0x7fffffu) != 0;
        if (fabsf(x) < 128.0f && x == x) {
            // fix23(x): round to nearest even onto 2^-23 (exact in double)
            double p = rint((double)x * 8388608.0);
            long long pi = (long long)p;
            if (fabsf(x) < 1.0f) {
                float xf = (float)(p / 8388608.0);
                local[C_EX2_FIX] += !same(y, hw_ex2(xf));
            }
            long long k = pi >> 23; // floor
            long long f = pi & 0x7fffff;
            float r = ldexpf(hw_ex2((float)f * 0x1p-23f), (int)k);
            float q = r;
            if (x < 0) { // the magnitude's fraction in one's complement: 2^(-I-1) T(~F)
                long long mag = -pi, I = mag >> 23, F = mag & 0x7fffff;
                q = F ? ldexpf(hw_ex2((float)((~F) & 0x7fffff) * 0x1p-23f), (int)(-I - 1)) : ldexpf(1.0f, (int)-I);
            }
            uint32_t rb = __float_as_uint(r);
            bool normal = (rb & 0x7f800000u) != 0 && (rb & 0x7f800000u) != 0x7f800000u;
            if (normal) {
                local[C_EX2_N]++;
                local[C_EX2_TWO] += !same(y, r);
                local[C_EX2_ONE] += !same(y, q);
            }
        }
        float z = hw_rcp(x);
        uint32_t zb = __float_as_uint(z);
        local[C_RCP_SUB] += (zb & 0x7f800000u) == 0 && (zb & 0x7fffffu) != 0;
        uint32_t e = bits >> 23 & 0xff;
        if (e != 0 && e != 0xff && (zb & 0x7f800000u) != 0 && (zb & 0x7f800000u) != 0x7f800000u) {
            float m = __uint_as_float((bits & 0x807fffffu) | 0x3f800000u); // same sign and significand, in [1, 2)
            local[C_RCP_N]++;
            local[C_RCP_SIG] += !same(z, ldexpf(hw_rcp(m), 127 - (int)e));
        }
        if (e == 0 && (bits & 0x7fffffu) && !(bits >> 31))
            local[C_LG2_SUB] += hw_lg2(x) == -INFINITY;
    }
    for (int i = 0; i < C_COUNT; i++)
        if (local[i])
            atomicAdd(&cnt[i], local[i]);
}

// one table: out[f] = (hw(x_f) - cr(x_f)) / ulp(cr(x_f)), x_f = base + sign * f * step
__global__ void table(int32_t *out, int which, float base, float step, float sign)
{
    for (uint32_t f = blockIdx.x * blockDim.x + threadIdx.x; f < (1u << 23); f += gridDim.x * blockDim.x) {
        float x = base + sign * (float)f * step; // exact: base and f step share a binade's grid
        double exact;
        float h;
        if (which == 0) {
            exact = exp2((double)x);
            h = hw_ex2(x);
        } else if (which == 1) {
            exact = 1.0 / (double)x;
            h = hw_rcp(x);
        } else {
            exact = log2((double)x);
            h = hw_lg2(x);
        }
        float cr = (float)exact;
        int ex;
        frexp(cr == 0 ? 1.0f : cr, &ex);
        double ulp = ldexp(1.0, ex - 24);
        double d = ((double)h - (double)cr) / ulp;
        out[f] = (int32_t)fmax(fmin(d, 2147483647.0), -2147483648.0);
    }
}

static void save(const char *dir, const char *name, const int32_t *dev)
{
    static int32_t host[1 << 23];
    cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost);
    char path[512];
    snprintf(path, sizeof path, "%s/%s.bin", dir, name);
    FILE *f = fopen(path, "wb");
    fwrite(host, sizeof host, 1, f);
    fclose(f);
    long hist[9] = {0};
    for (int i = 0; i < (1 << 23); i++) {
        int a = abs(host[i]);
        hist[a < 8 ? a : 8]++;
    }
    printf("%s: |hw - cr| in ulps: 0: %ld, 1: %ld, 2: %ld, 3: %ld, 4-7: %ld, >=8: %ld\n", name, hist[0], hist[1], hist[2],
           hist[3], hist[4] + hist[5] + hist[6] + hist[7], hist[8]);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    unsigned long long *cnt;
    cudaMalloc(&cnt, sizeof(unsigned long long) * C_COUNT);
    cudaMemset(cnt, 0, sizeof(unsigned long long) * C_COUNT);
    for (uint32_t hi = 0; hi < 65536u; hi++)
        structure<<<64, 256>>>(cnt, hi);
    unsigned long long c[C_COUNT];
    cudaMemcpy(c, cnt, sizeof c, cudaMemcpyDeviceToHost);
    printf("inputs: 4294967296 (every binary32)\n");
    printf("ex2: |x| < 1 differing from ex2(fix23(x)): %llu\n", c[C_EX2_FIX]);
    printf("ex2: of %llu inputs with a normal split result, differing from 2^k ex2(f 2^-23): two's complement %llu, "
           "one's complement %llu\n",
           c[C_EX2_N], c[C_EX2_TWO], c[C_EX2_ONE]);
    printf("ex2: subnormal results: %llu\n", c[C_EX2_SUB]);
    printf("rcp: of %llu normal inputs with normal results, differing from rcp(significand) 2^-e: %llu\n", c[C_RCP_N],
           c[C_RCP_SIG]);
    printf("rcp: subnormal results: %llu\n", c[C_RCP_SUB]);
    printf("lg2: positive subnormal inputs giving -inf (flushed): %llu of 8388607\n", c[C_LG2_SUB]);
    int32_t *t;
    cudaMalloc(&t, sizeof(int32_t) << 23);
    table<<<1024, 256>>>(t, 0, 0.0f, 0x1p-23f, 1.0f);
    save(dir, "ex2_pos", t);
    table<<<1024, 256>>>(t, 0, 0.0f, 0x1p-23f, -1.0f);
    save(dir, "ex2_neg", t);
    table<<<1024, 256>>>(t, 1, 1.0f, 0x1p-23f, 1.0f);
    save(dir, "rcp", t);
    table<<<1024, 256>>>(t, 2, 1.0f, 0x1p-23f, 1.0f);
    save(dir, "lg2_1", t);
    table<<<1024, 256>>>(t, 2, 2.0f, 0x1p-22f, 1.0f);
    save(dir, "lg2_2", t);
    cudaError_t err = cudaGetLastError();
    printf("cuda: %s\n", cudaGetErrorString(err));
    return err != cudaSuccess;
}
