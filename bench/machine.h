/* machine -- what the bench says of the processor it ran on: its model and vector extensions,
 * its measured FMA rate at both vector widths, and which OpenBLAS kernels are its own */
#ifndef AMLA_BENCH_MACHINE_H
#define AMLA_BENCH_MACHINE_H

#include <stddef.h>

typedef struct {
    char name[128];   /* /proc/cpuinfo's model name */
    char vendor[16];  /* CPUID's vendor string */
    int family, model, stepping;
    int avx2, fma, avx512, vnni, bf16, fp16, amx_tile, amx_int8, amx_bf16;
} machine_t;

void machine_describe(machine_t *m);

/* A short name for the results file: the core's generation where known (emerald-rapids, zen3),
 * else vendor, family and model; then the widest vector kernels the lab runs (avx512, avx2). */
void machine_kind(char *buf, size_t n, const machine_t *m);

/* The vector extensions as one comma-separated line. */
void machine_isa(char *buf, size_t n, const machine_t *m);

/* Binary32 FMAs per second on one core with 512-bit and with 256-bit vectors (twelve independent
 * chains, so bound by the FMA units, not their latency); 0 where the processor lacks the width. */
void machine_fma_rates(double *r512, double *r256);

/* The OPENBLAS_CORETYPE of OpenBLAS's widest kernels for this processor's extensions, where
 * OpenBLAS (named corename) took a pre-AVX fallback because it does not know the model
 * (Debian's 0.3.21 on an Emerald Rapids runs Prescott); NULL where its own choice stands. */
const char *machine_blas_native(const machine_t *m, const char *corename);

#endif
