/* vec -- elementwise array loops in AVX2 (some in AVX-512) where the processor has it: each result
 * is the one the plain C expression named beside it gives (the build targets baseline x86-64, whose
 * compiler output for these loops is scalar) */
#ifndef AMLA_VEC_H
#define AMLA_VEC_H

/* 2 (default): the AVX-512 loops where the processor has them, else AVX2; 1: AVX2 at most; 0: the
 * plain loops (tests run all three). */
extern int vec_simd;

/* o[i] = x[i] * s (o may be x). */
void vec_mul(double *o, const double *x, long n, double s);
/* o[i] = x[i] * y[i] (o may be x or y). */
void vec_prod(double *o, const double *x, const double *y, long n);
/* o[i] = x[i] / s (o may be x). */
void vec_div(double *o, const double *x, long n, double s);
/* o[i] = f32(f32(o[i] * a) + t[i]), or with ts != 0 f32(f32(o[i] * a) + f32(t[i] * ts)), where
 * f32(y) = (double)(float)y. */
void vec_rescale_add32(double *o, const double *t, long n, double a, double ts);
/* o[i] = f32(f32(o[i] * a[i]) + t[i]): a scale of its own per element. */
void vec_rescale_add32_each(double *o, const double *t, long n, const double *a);
/* With ftz(y) = the binary32 y with a subnormal flushed to a zero of its sign (a GPU's .ftz):
 * o[i] = ftz((float)(x[i] * a)); and x[i] = ftz(fmaf((float)x[i], (float)a, (float)b)). */
void vec_scale32_ftz(double *o, const double *x, long n, double a);
/* The same into binary32 (o[i] = ftz((float)(x[i] * a)) as a float). */
void vec_scale32_ftz_f(float *o, const double *x, long n, double a);
void vec_fma32_ftz(double *x, long n, double a, double b);
/* o[i] = fl32(fma(a, y[i], o[i])) flushed to zero: FFMA on binary32 values (a, y, o), as
 * vec_fma32_ftz (AVX2 where the processor has it) */
void vec_axpy32_ftz(double *o, const double *y, long n, double a);
/* o[i] = (float)x[i]; o[i] = x[i] from binary32. */
void vec_narrow32(float *o, const double *x, long n);
void vec_widen32(double *o, const float *x, long n);
/* The largest of m and every |x[i]|, as m = |x[i]| > m ? |x[i]| : m in any order (NaN skipped). */
double vec_absmax(const double *x, long n, double m);

/* v [h] (h a power of two) <- its unnormalized Walsh-Hadamard transform, butterflies u + w, u - w
 * stage by stage (len = 1, 2, 4, ...), each sum and difference the one the scalar loop forms. */
void vec_fwht(double *v, long h);
/* o [h] = norm * fwht(x * sign), each operation as vec_prod, vec_fwht and vec_mul do it in turn (h a power of
 * two; from 8 to 128 in registers where the processor has AVX-512). */
void vec_hadamard(double *o, const double *x, const double *sign, long h, double norm);
/* x[i] = (double)(float)exp(x[i]) (two: exp2) for i < n, with libm's exp (exp2) as it rounds to binary32: where the
 * processor has AVX-512 (AVX2) eight (four) at a time by a polynomial, libm's for any lane it cannot show rounds the
 * same (vec_f32.c). */
void vec_exp_rn32(double *x, long n, int two);
/* o[i] = (double)(float)(x[i] * a) (the product in binary64, then cast); o[i] = fmaf(alpha, t[i], (float)(beta o[i]))
 * with alpha, t[i] and the binary64 product beta o[i] cast to binary32 first. No flushing. */
void vec_mul32(double *o, const double *x, long n, double a);
void vec_fma32_scaled(double *o, const double *t, long n, double alpha, double beta);

#endif
