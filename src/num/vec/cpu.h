/* cpu -- what the processor can do: the one check behind every AVX2 and AVX-512 path */
#ifndef AMLA_CPU_H
#define AMLA_CPU_H

/* 1 when the processor has AVX2 and FMA (x86-64, GCC or clang), else 0; asked once. */
int cpu_has_avx2_fma(void);

/* 1 when it also has AVX-512 F, DQ, VL and BW (the lab's 512-bit kernels use no more), else 0. */
int cpu_has_avx512(void);

#endif
