/* floors -- the lab's own product kernels alone on one sample's shape, one core: what a stage whose
 * products run them cannot go below, whatever the rest of it costs (make bench's "What bounds";
 * make bench-tc times the tensor-core terms in cycles) */
#ifndef AMLA_BENCH_FLOORS_H
#define AMLA_BENCH_FLOORS_H

/* An attention's two products alone (S = Q K^T of R x sk x dk, O = P V of R x dv x sk; q, k and v BF16 values as
 * the sample holds them, P exp(-|N(0,1)|) rounded to BF16), through acc_gemm_f as base makes them under each model
 * (blocks of 512 keys: S and P V of each from zero; Q held as attn_run holds it), K and V read from memory as a
 * stage reads them: FP32 fma chains (base's products), the FP16 accumulator (fp16-acc), the tensor-core block model
 * (tc-hopper); and the tensor-core kernels' terms alone for as many products (ACC_TCF_TERMS on operands in cache,
 * the widest vectors this processor has: a product, its scaling and truncating conversion, an integer addition per
 * product, nothing of a block's exponent maximum or normalization; 0 where the processor has no AVX2 and FMA).
 * Each runs three times on this thread, each time after a run of the reference ref(ref_arg) (which returns its
 * seconds): the least time, and r_ the median of each time over the reference's just before it (a machine whose
 * speed drifts is compared with itself). -1 where the buffers do not fit in memory, else 0. */
typedef struct {
    double fp32, fp16acc, tc, terms;
    double r_fp32, r_fp16acc, r_tc, r_terms;
} floors_t;

int floors_measure(floors_t *f, const double *q, const double *k, const double *v, long R, long sk, long dk,
                   long dv, double (*ref)(void *), void *ref_arg);

/* The terms alone: seconds per call of one pass of sixteen rows (four groups of four) over
 * FLOORS_TERMS_K products against one vector of 8 (wide 0: AVX2) or 16 columns (wide 1: AVX-512,
 * only where cpu_has_avx512()); 0 where that width does not run here. */
#define FLOORS_TERMS_K 576
double floors_terms_seconds(int wide);

/* Seconds for one call of f(arg): the best of `runs` runs of reps calls each. */
double floors_best_of(void (*f)(void *), void *arg, int reps, int runs);

#endif
