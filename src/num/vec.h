/* vec -- elementwise array loops in AVX2 where the processor has it: each result is the one
 * the plain C expression named beside it gives (the build targets baseline x86-64, whose
 * compiler output for these loops is scalar) */
#ifndef AMLA_VEC_H
#define AMLA_VEC_H

/* o[i] = x[i] * s (o may be x). */
void vec_mul(double *o, const double *x, long n, double s);
/* o[i] = x[i] / s (o may be x). */
void vec_div(double *o, const double *x, long n, double s);
/* o[i] = f32(f32(o[i] * a) + t[i]), or with ts != 0 f32(f32(o[i] * a) + f32(t[i] * ts)), where
 * f32(y) = (double)(float)y. */
void vec_rescale_add32(double *o, const double *t, long n, double a, double ts);
/* The largest of m and every |x[i]|, as m = |x[i]| > m ? |x[i]| : m in any order (NaN skipped). */
double vec_absmax(const double *x, long n, double m);

#endif
