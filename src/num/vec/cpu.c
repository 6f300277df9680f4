/* cpu -- the one check behind every AVX2 and AVX-512 path */
#include "num/vec/cpu.h"

int cpu_has_avx2_fma(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return cached;
#else
    return 0;
#endif
}

int cpu_has_avx512(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    static int cached = -1;
    if (cached < 0)
        cached = cpu_has_avx2_fma() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
    return cached;
#else
    return 0;
#endif
}
