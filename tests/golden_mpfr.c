/* golden_mpfr -- the reference's own reference: attention entirely in MPFR (small shapes) */
#include "golden_mpfr.h"

#include <math.h>
#include <mpfr.h>
#include <stdlib.h>

#include "base/err.h"

typedef struct {
    double scale;
    long prec;
} golden_mpfr_arg_t;

static void golden_mpfr_group(double *o, const attn_group_t *g, void *varg)
{
    const golden_mpfr_arg_t *arg = varg;
    mpfr_prec_t prec = (mpfr_prec_t)arg->prec;
    mpfr_t sc, acc, t, m, l, *s = err_malloc((size_t)g->sk, sizeof(mpfr_t));
    mpfr_inits2(prec, sc, acc, t, m, l, (mpfr_ptr)0);
    for (long j = 0; j < g->sk; j++)
        mpfr_init2(s[j], prec);
    if (arg->scale > 0) {
        mpfr_set_d(sc, arg->scale, MPFR_RNDN);
    } else {
        mpfr_set_si(sc, g->dk, MPFR_RNDN);
        mpfr_rec_sqrt(sc, sc, MPFR_RNDN);
    }
    for (long r = 0; r < g->R; r++) {
        long lim = g->limit[r];
        for (long j = 0; j <= lim; j++) {
            mpfr_set_zero(s[j], 1);
            for (long k = 0; k < g->dk; k++) {
                mpfr_set_d(t, g->q[r * g->dk + k], MPFR_RNDN);
                mpfr_mul_d(t, t, g->k[j * g->dk + k], MPFR_RNDN);
                mpfr_add(s[j], s[j], t, MPFR_RNDN);
            }
            mpfr_mul(s[j], s[j], sc, MPFR_RNDN);
            if (j == 0 || mpfr_greater_p(s[j], m))
                mpfr_set(m, s[j], MPFR_RNDN);
        }
        mpfr_set_zero(l, 1);
        for (long j = 0; j <= lim; j++) {
            mpfr_sub(s[j], s[j], m, MPFR_RNDN);
            mpfr_exp(s[j], s[j], MPFR_RNDN);
            mpfr_add(l, l, s[j], MPFR_RNDN);
        }
        for (long c = 0; c < g->dv; c++) {
            mpfr_set_zero(acc, 1);
            for (long j = 0; j <= lim; j++) {
                mpfr_mul_d(t, s[j], g->v[j * g->dv + c], MPFR_RNDN);
                mpfr_add(acc, acc, t, MPFR_RNDN);
            }
            mpfr_div(acc, acc, l, MPFR_RNDN);
            o[r * g->dv + c] = mpfr_get_d(acc, MPFR_RNDN);
        }
    }
    for (long j = 0; j < g->sk; j++)
        mpfr_clear(s[j]);
    free(s);
    mpfr_clears(sc, acc, t, m, l, (mpfr_ptr)0);
}

void golden_attention_mpfr(double *o, const attn_input_t *in, double scale, long prec)
{
    golden_mpfr_arg_t arg = {scale, prec};
    attn_for_groups(o, in, golden_mpfr_group, &arg);
}

