/* cpu -- what the processor can do: the one check behind every AVX2 path */
#ifndef AMLA_CPU_H
#define AMLA_CPU_H

/* 1 when the processor has AVX2 and FMA (x86-64, GCC or clang), else 0; asked once. */
int cpu_has_avx2_fma(void);

#endif
