/* sfu_fit -- recover the SFU's table-plus-quadratic datapath from the measured cores
 * (tests/data/sfu, decompressed): for each segment of the core's input, the integers
 * (c0, c1, c2) such that, for every input of the segment,
 *     result significand = (c0 2^13 + c1 x + c2 sq(x) + K) >> 15
 * with x the low bits of the fraction, sq the datapath's truncated square and K the rounding
 * constant; lg2's core is (c0 2^12 + c1 x + c2 sq(x) + K) >> 2, log2 of the significand with 36
 * fraction bits, fitted to lg2 on [2, 4) (1 + that value truncated to 23 fraction bits). Prints
 * the C tables for src/num/sfu/sfu.c, or says where no integers fit.
 *   cc -O2 -o sfu_fit scripts/dev/sfu_fit.c -lm && for f in ex2_pos rcp lg2_2; do
 *   xz -dc tests/data/sfu/$f.bin.xz >$f.bin; done && ./sfu_fit ex2_pos.bin rcp.bin lg2_2.bin */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N (1 << 23)

/* the square of a 17-bit x as the datapath forms it: partial products x >> (18 - i) for each
 * set bit i, summed, halved (about x^2 2^-19, truncated at every partial product) */
static uint64_t sfu_sq(uint64_t x)
{
    uint64_t r = 0;
    for (int i = 0; i < 17; i++)
        if (x >> i & 1)
            r += x >> (18 - i);
    return r >> 1;
}

static int32_t res[N];
static int64_t lo_[N], hi_[N]; /* lg2: the bounds each input puts on the quadratic's value */

/* The bounds each measured input puts on the quadratic's value A + c1 x + c2 sq(x). ex2: the
 * result's significand y (23 fraction bits, 2^(F 2^-23) in [1, 2]) is that value >> 15; rcp the
 * same for 2 / (1 + F 2^-23) in (1, 2]; lg2 on [2, 4): 1 + floor((value >> 2) 2^-13) 2^-23. */
static void load(const char *path, int fn)
{
    FILE *f = fopen(path, "rb");
    if (!f || fread(res, 4, N, f) != N) {
        fprintf(stderr, "sfu_fit: cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    for (uint32_t F = 0; F < N; F++) {
        float cr = (float)(fn == 2 ? log2(2.0 + F * 0x1p-22) : fn ? 1.0 / (1.0 + F * 0x1p-23) : exp2(F * 0x1p-23));
        uint32_t b;
        memcpy(&b, &cr, 4);
        b += (uint32_t)res[F];
        if (fn == 2) {
            float h;
            memcpy(&h, &b, 4);
            int64_t u = (int64_t)(((double)h - 1.0) * 0x1p23);
            lo_[F] = 4 * (u << 13);
            hi_[F] = 4 * ((u << 13) + 8191) + 3;
        } else {
            int e = (int)(b >> 23) - 127;
            int64_t y = (int64_t)((b & 0x7fffff) | 0x800000) << (e + fn);
            lo_[F] = y << 15;
            hi_[F] = ((y + 1) << 15) - 1;
        }
    }
}

/* Fit one table: nseg segments of xb-bit x (squared as x << sh); A = c0 2^ash + K. Least squares
 * gives estimates; the integers near them that satisfy every input are searched; prints the
 * table. */
static int fit(const char *name, int nseg, int xb, int sh, int ash, int64_t K, long r1, long r2)
{
    int ok = 1;
    printf("SFU_TAB static const int32_t %s[%d][3] = {\n", name, nseg);
    for (int seg = 0; seg < nseg && ok; seg++) {
        double M[3][4] = {{0}};
        for (uint64_t x = 0; x < (1ull << xb); x += 5) {
            double v[3] = {1, (double)x, (double)sfu_sq(x << sh)};
            double t = 0.5 * ((double)lo_[seg << xb | x] + (double)hi_[seg << xb | x]);
            for (int i = 0; i < 3; i++) {
                for (int j = 0; j < 3; j++)
                    M[i][j] += v[i] * v[j];
                M[i][3] += v[i] * t;
            }
        }
        double c[3];
        for (int i = 0; i < 3; i++)
            for (int k = i + 1; k < 3; k++) {
                double q = M[k][i] / M[i][i];
                for (int j = i; j < 4; j++)
                    M[k][j] -= q * M[i][j];
            }
        for (int i = 2; i >= 0; i--) {
            double s = M[i][3];
            for (int j = i + 1; j < 3; j++)
                s -= M[i][j] * c[j];
            c[i] = s / M[i][i];
        }
        int found = 0;
        int64_t step = (int64_t)1 << ash;
        for (long d1 = -r1; d1 <= r1 && !found; d1++)
            for (long d2 = -r2; d2 <= r2 && !found; d2++) {
                long c1 = lround(c[1]) + d1, c2 = lround(c[2]) + d2;
                int64_t lo = INT64_MIN, hi = INT64_MAX;
                for (uint64_t x = 0; x < (1ull << xb) && lo <= hi; x++) {
                    int64_t base = c1 * (int64_t)x + c2 * (int64_t)sfu_sq(x << sh);
                    int64_t L = lo_[seg << xb | x] - base, H = hi_[seg << xb | x] - base;
                    lo = L > lo ? L : lo;
                    hi = H < hi ? H : hi;
                }
                /* the smallest A >= lo with A = K (mod 2^ash) */
                int64_t A = lo + (((K - lo) % step) + step) % step;
                if (lo <= hi && A <= hi) {
                    found = 1;
                    printf("    {%lld, %ld, %ld},\n", (long long)((A - K) / step), c1, c2);
                }
            }
        if (!found) {
            fprintf(stderr, "sfu_fit: %s segment %d: no integers fit\n", name, seg);
            ok = 0;
        }
    }
    printf("};\n");
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: sfu_fit EX2_CORE.bin RCP_CORE.bin LG2_CORE_2_4.bin\n");
        return 2;
    }
    load(argv[1], 0);
    int ok = fit("SFU_EX2_TAB", 64, 17, 0, 13, 0x77e2, 6, 60);
    load(argv[2], 1);
    ok &= fit("SFU_RCP_TAB", 128, 16, 1, 13, 0x47e7, 6, 60);
    load(argv[3], 2);
    ok &= fit("SFU_LG2_TAB", 64, 17, 0, 12, 0x3345, 40, 400);
    return ok ? 0 : 1;
}
