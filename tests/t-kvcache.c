/* t-kvcache -- FlashMLA's FP8 sparse-decode cache: hand-computed quantization and dequantization, the bad
 * tokens the loader refuses, and the quantizer byte for byte against caches FlashMLA's own tests/quant.py
 * wrote on a GPU (tests/data/flashmla-sparse, scripts/device/capture_flashmla_fp8.py) */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "data/kvfp8.h"
#include "data/npy.h"
#include "num/fmt/fmt.h"

#define PAGE 64

/* Both layouts on hand-worked tokens of a block of PAGE, and the tokens the dequantization refuses. */
static void test_hand(void)
{
    for (int l = KVFP8_V32; l < KVFP8_COUNT; l++) {
        const kvfp8_info_t *t = &kvfp8_table[l];
        double *k = calloc((size_t)(PAGE * t->d), sizeof(double)), *out = malloc(sizeof(double) * (size_t)t->d);
        unsigned char *blk = malloc((size_t)(PAGE * t->bytes));
        /* token 0, tile 0: amax 56 -> fl32(56 / 448) = 2^-3, a power of two: s = 2^-3; 56 -> code of 448
         * (0x7e), 1.1 -> 8.8 -> e4m3 9 (step 1 in [8, 16)) -> 1.125; tile 1: all zero -> s = 2^-13 (the floor
         * fl32(1e-4) = 1.0e-4 - 2.5e-12 lies in (2^-14, 2^-13]); token 1, tile 0: amax 57 -> 57/448 in
         * (2^-3, 2^-2] -> s = 2^-2, 57 / 4 = 228 -> e4m3 224 (step 16 in [128, 256), tie-free) -> 56 */
        k[0] = 56, k[1] = 1.1, k[t->d] = 57;
        k[t->d_nope] = 3.5, k[t->d - 1] = -0.0078125; /* RoPE: bf16 as is */
        kvfp8_quantize_block(blk, k, PAGE, (kvfp8_layout_t)l);
        char why[128];
        CHECK(kvfp8_dequant_token(out, blk, PAGE, 0, (kvfp8_layout_t)l, why, sizeof why) == 0, "%s token 0: %s",
              t->name, why);
        CHECK(out[0] == 56 && out[1] == 1.125 && out[t->tile] == 0 && out[t->d_nope] == 3.5 &&
                  out[t->d - 1] == -0.0078125,
              "%s token 0: %a %a %a %a %a", t->name, out[0], out[1], out[t->tile], out[t->d_nope], out[t->d - 1]);
        kvfp8_dequant_token(out, blk, PAGE, 1, (kvfp8_layout_t)l, why, sizeof why);
        CHECK(out[0] == 56, "%s token 1: 57 -> %a, want 56", t->name, out[0]);
        /* where the scales sit: V32 token 0's float32 2^-3 after its 512 codes; MODEL1's e8m0 124 and 114
         * after the block's 64 x 576 bytes */
        if (l == KVFP8_V32) {
            float s0, s1;
            memcpy(&s0, blk + 512, 4);
            memcpy(&s1, blk + 516, 4);
            CHECK(s0 == 0.125f && s1 == 0x1p-13f && blk[0] == 0x7e, "V32 scales %a %a, code 0x%02x", (double)s0,
                  (double)s1, blk[0]);
            /* refused: a scale of 3, a NaN scale, an e4m3 NaN code */
            float bad[2] = {3.0f, NAN};
            for (int i = 0; i < 2; i++) {
                unsigned char b2[656 * PAGE];
                memcpy(b2, blk, sizeof b2);
                memcpy(b2 + 516, &bad[i], 4);
                CHECK(kvfp8_dequant_token(out, b2, PAGE, 0, KVFP8_V32, why, sizeof why) == 1 &&
                          strstr(why, "not a positive finite power of two"),
                      "V32 scale %g accepted (%s)", (double)bad[i], why);
            }
        } else {
            CHECK(blk[PAGE * 576] == 124 && blk[PAGE * 576 + 1] == 114 && blk[PAGE * 576 + 7] == 0 && blk[0] == 0x7e,
                  "MODEL1 scales %d %d pad %d code 0x%02x", blk[PAGE * 576], blk[PAGE * 576 + 1], blk[PAGE * 576 + 7],
                  blk[0]);
            blk[PAGE * 576 + 2] = 0xff;
            CHECK(kvfp8_dequant_token(out, blk, PAGE, 0, KVFP8_MODEL1, why, sizeof why) == 1 && strstr(why, "0xff"),
                  "MODEL1 e8m0 0xff accepted (%s)", why);
        }
        blk[5] = 0x7f;
        CHECK(kvfp8_dequant_token(out, blk, PAGE, 0, (kvfp8_layout_t)l, why, sizeof why) == 1 &&
                  strstr(why, "NaN code"),
              "%s: NaN code accepted (%s)", t->name, why);
        CHECK((int)kvfp8_layout_of_bytes(t->bytes) == l && (int)kvfp8_layout_of_dim(t->d) == l, "%s layout lookup", t->name);
        free(k);
        free(out);
        free(blk);
    }
    CHECK(kvfp8_layout_of_bytes(600) == KVFP8_NONE && kvfp8_layout_of_dim(128) == KVFP8_NONE, "no layout");
}

/* The captured caches: tests/quant.py's bytes from the same bf16 values (MODEL1's pad bytes are whatever
 * torch.empty held: not compared), and the kernel's dequantization of them the values quantized. */
static void test_captured(const char *dir)
{
    char path[4096];
    const char *name = dir;
    io_npy_t kb = {0}, kc = {0};
    err_t e = {0};
    snprintf(path, sizeof path, "%s/k_bf16.npy", dir);
    int rc = io_npy_read(&kb, path, &e) || io_npy_decode(&kb, FMT_BF16, path, "--in-format", &e);
    snprintf(path, sizeof path, "%s/kcache.npy", dir);
    rc = rc || io_npy_read(&kc, path, &e);
    CHECK(!rc, "%s: %s", name, e.msg);
    if (rc)
        return;
    kvfp8_layout_t l = kvfp8_layout_of_bytes(kc.shape[3]);
    const kvfp8_info_t *t = &kvfp8_table[l];
    long blocks = kc.shape[0], page = kc.shape[1], bb = page * t->bytes, diff = 0, first = -1;
    unsigned char *blk = malloc((size_t)bb);
    for (long b = 0; b < blocks; b++) {
        kvfp8_quantize_block(blk, kb.data + b * page * t->d, page, l);
        for (long i = 0; i < bb; i++) {
            int pad = l == KVFP8_MODEL1 && i >= page * 576 && (i - page * 576) % 8 == 7;
            if (!pad && blk[i] != (unsigned char)kc.data[b * bb + i] && diff++ == 0)
                first = b * bb + i;
        }
    }
    CHECK(diff == 0, "%s: %ld of %ld cache bytes differ from tests/quant.py's, the first at byte %ld", name, diff,
          blocks * bb, first);
    free(blk);
    io_npy_free(&kb);
    io_npy_free(&kc);
}

/* kvfp8_roundtrip (the variant's path for generated keys) against the bytes' path, bit for bit: random
 * bf16 tokens whose tiles span 2^-30 to 2^30 (so that some scales sit at the 1e-4 floor and codes fall to
 * e4m3's subnormals), and zero tiles. Seed printed. */
static void test_roundtrip(void)
{
    unsigned long long seed = 20261125;
    for (int l = KVFP8_V32; l < KVFP8_COUNT; l++) {
        const kvfp8_info_t *t = &kvfp8_table[l];
        long n = PAGE * t->d, bad = 0;
        double *k = malloc(sizeof(double) * (size_t)n), *a = malloc(sizeof(double) * (size_t)n),
               *b = malloc(sizeof(double) * (size_t)n);
        unsigned char *blk = malloc((size_t)(PAGE * t->bytes));
        for (int rep = 0; rep < (check_quick() ? 4 : 64); rep++) {
            for (long i = 0; i < n; i++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                double u = (double)(seed >> 11) * 0x1p-53 - 0.5;
                int tile_exp = (int)((i / t->tile * 7 + rep * 13) % 61) - 30;
                k[i] = (i / t->tile) % 5 == 4 ? 0 : fmt_round(ldexp(u, tile_exp), FMT_BF16, FMT_RNE, 0, NULL);
            }
            kvfp8_quantize_block(blk, k, PAGE, (kvfp8_layout_t)l);
            char why[64];
            for (long r = 0; r < PAGE; r++)
                kvfp8_dequant_token(b + r * t->d, blk, PAGE, r, (kvfp8_layout_t)l, why, sizeof why);
            for (fmt_simd = 0; fmt_simd <= 1; fmt_simd++) { /* the scalar tiles and the AVX2 ones (where present) */
                kvfp8_roundtrip(a, k, PAGE, (kvfp8_layout_t)l);
                for (long i = 0; i < n; i++)
                    if (memcmp(&a[i], &b[i], sizeof(double)) && bad++ == 0)
                        fprintf(stderr, "%s roundtrip [%ld] (simd %d): %a, bytes' path %a (x %a)\n", t->name, i, fmt_simd,
                                a[i], b[i], k[i]);
            }
            fmt_simd = 2;
        }
        CHECK(bad == 0, "%s: kvfp8_roundtrip differs from the bytes' path on %ld values (seed %llu)", t->name, bad,
              20261125ull);
        free(k);
        free(a);
        free(b);
        free(blk);
    }
}

int main(void)
{
    test_hand();
    test_roundtrip();
    test_captured("tests/data/flashmla-sparse/v1");
    test_captured("tests/data/flashmla-sparse/m1");
    test_captured("tests/data/flashmla-sparse/v5");
    /* AMLA_KVFP8_DIRS="DIR ...": more captures (scripts/checks/flashmla-fp8-check.sh passes every one it has) */
    const char *more = getenv("AMLA_KVFP8_DIRS");
    char dir[4096];
    for (const char *p = more; p && *p;) {
        size_t len = strcspn(p, " ");
        if (len > 0 && len < sizeof dir) {
            memcpy(dir, p, len);
            dir[len] = 0;
            test_captured(dir);
        }
        p += len + (p[len] == ' ');
    }
    return check_done("t-kvcache");
}
