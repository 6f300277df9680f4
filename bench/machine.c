/* machine -- the processor the bench ran on, as its report describes it */
#include "machine.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "num/vec/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#endif

void machine_describe(machine_t *m)
{
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0) {
            char *p = strchr(line, ':');
            snprintf(m->name, sizeof m->name, "%.120s", p ? p + 2 : line);
            m->name[strcspn(m->name, "\n")] = 0;
            break;
        }
    if (f)
        fclose(f);
#if defined(__x86_64__) && defined(__GNUC__)
    unsigned a, b, c, d;
    if (__get_cpuid(0, &a, &b, &c, &d)) {
        memcpy(m->vendor, &b, 4);
        memcpy(m->vendor + 4, &d, 4);
        memcpy(m->vendor + 8, &c, 4);
    }
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        int fam = (int)(a >> 8 & 0xf), mod = (int)(a >> 4 & 0xf);
        m->family = fam == 0xf ? fam + (int)(a >> 20 & 0xff) : fam;
        m->model = fam == 0x6 || fam == 0xf ? mod | (int)(a >> 16 & 0xf) << 4 : mod;
        m->stepping = (int)(a & 0xf);
    }
    /* usable ones only (the OS saves their registers): what the lab's own checks ask */
    m->avx2 = m->fma = cpu_has_avx2_fma();
    m->avx512 = cpu_has_avx512();
    if (m->avx512 && __get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        m->vnni = (int)(c >> 11 & 1);
        m->fp16 = (int)(d >> 23 & 1);
        m->amx_bf16 = (int)(d >> 22 & 1);
        m->amx_tile = (int)(d >> 24 & 1);
        m->amx_int8 = (int)(d >> 25 & 1);
        if (__get_cpuid_count(7, 1, &a, &b, &c, &d))
            m->bf16 = (int)(a >> 5 & 1);
    }
#endif
}

void machine_kind(char *buf, size_t n, const machine_t *m)
{
    const char *gen = NULL;
    if (strcmp(m->vendor, "GenuineIntel") == 0 && m->family == 6) {
        switch (m->model) {
        case 85: gen = "skylake-sp"; break; /* Skylake-SP, Cascade Lake, Cooper Lake */
        case 106:
        case 108: gen = "ice-lake-sp"; break;
        case 143: gen = "sapphire-rapids"; break;
        case 207: gen = "emerald-rapids"; break;
        case 173:
        case 174: gen = "granite-rapids"; break;
        default: break;
        }
    } else if (strcmp(m->vendor, "AuthenticAMD") == 0) {
        if (m->family == 23)
            gen = m->model >= 0x30 ? "zen2" : "zen1";
        else if (m->family == 25)
            gen = (m->model >= 0x10 && m->model < 0x20) || (m->model >= 0x60 && m->model < 0x80) || m->model >= 0xa0
                      ? "zen4"
                      : "zen3";
        else if (m->family == 26)
            gen = "zen5";
    }
    const char *isa = m->avx512 ? "avx512" : m->avx2 ? "avx2" : "scalar";
    if (gen)
        snprintf(buf, n, "%s-%s", gen, isa);
    else
        snprintf(buf, n, "%s-f%dm%d-%s", strcmp(m->vendor, "AuthenticAMD") == 0 ? "amd" : "intel", m->family,
                 m->model, isa);
}

void machine_isa(char *buf, size_t n, const machine_t *m)
{
    snprintf(buf, n, "%s%s%s%s%s%s%s%s", m->avx2 ? "AVX2, FMA" : "no AVX2",
             m->avx512 ? ", AVX-512 (F, DQ, VL, BW)" : ", no AVX-512", m->vnni ? ", AVX512-VNNI" : "",
             m->bf16 ? ", AVX512-BF16" : "", m->fp16 ? ", AVX512-FP16" : "", m->amx_tile ? ", AMX-TILE" : "",
             m->amx_int8 ? ", AMX-INT8" : "", m->amx_bf16 ? ", AMX-BF16" : "");
}

static double machine_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* twelve chains: more than the units times their latency (2 x 4 on current cores) */
#define MACHINE_CHAINS(T, FMA)                                                                                         \
    T x0 = z, x1 = z, x2 = z, x3 = z, x4 = z, x5 = z, x6 = z, x7 = z, x8 = z, x9 = z, x10 = z, x11 = z;               \
    double t0 = machine_now();                                                                                         \
    for (long i = 0; i < reps; i++) {                                                                                  \
        x0 = FMA(x0, b, c), x1 = FMA(x1, b, c), x2 = FMA(x2, b, c), x3 = FMA(x3, b, c);                                \
        x4 = FMA(x4, b, c), x5 = FMA(x5, b, c), x6 = FMA(x6, b, c), x7 = FMA(x7, b, c);                                \
        x8 = FMA(x8, b, c), x9 = FMA(x9, b, c), x10 = FMA(x10, b, c), x11 = FMA(x11, b, c);                            \
    }                                                                                                                  \
    double t = machine_now() - t0;                                                                                     \
    T s = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9 + x10 + x11;                                                 \
    *sink = s[0];

__attribute__((target("avx512f"))) static double machine_fma512(long reps, volatile float *sink)
{
    __m512 z = _mm512_set1_ps(1.0f), b = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(1e-3f);
    MACHINE_CHAINS(__m512, _mm512_fmadd_ps)
    return 12.0 * 16 * (double)reps / t;
}

__attribute__((target("avx2,fma"))) static double machine_fma256(long reps, volatile float *sink)
{
    __m256 z = _mm256_set1_ps(1.0f), b = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(1e-3f);
    MACHINE_CHAINS(__m256, _mm256_fmadd_ps)
    return 12.0 * 8 * (double)reps / t;
}
#endif

void machine_fma_rates(double *r512, double *r256)
{
    *r512 = *r256 = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    volatile float sink;
    for (int round = 0; round < 5; round++) { /* the best of five: a shared machine's slow spells aside */
        double a = cpu_has_avx512() ? machine_fma512(20000000, &sink) : 0;
        double b = cpu_has_avx2_fma() ? machine_fma256(20000000, &sink) : 0;
        *r512 = a > *r512 ? a : *r512;
        *r256 = b > *r256 ? b : *r256;
    }
#endif
}

const char *machine_blas_native(const machine_t *m, const char *corename)
{
    static const char *const pre_avx[] = {"Prescott", "Katmai", "Coppermine", "Northwood", "Banias", "Core2",
                                          "Penryn", "Dunnington", "Nehalem", "Atom", "Opteron", "Barcelona"};
    int fallback = 0;
    for (size_t i = 0; i < sizeof pre_avx / sizeof *pre_avx; i++)
        fallback |= strcmp(corename, pre_avx[i]) == 0;
    if (!fallback || !m->avx2)
        return NULL;
    if (m->avx512) /* OpenBLAS 0.3.21 runs Cooperlake (SkylakeX's kernels and its BF16 ones) on the
                    * Sapphire Rapids it knows, SkylakeX on AVX-512 without BF16 */
        return m->bf16 ? "Cooperlake" : "SkylakeX";
    return strcmp(m->vendor, "AuthenticAMD") == 0 ? "Zen" : "Haswell";
}
