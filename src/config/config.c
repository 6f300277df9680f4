/* config -- a run configuration's checks, memory and attribution runs (its defaults and resolution, which read
 * the option table, are config/resolve.c) */
#include "config/config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif


double run_sample_bytes(const run_cfg_t *c)
{
    const attn_shape_t *s = &c->shape;
    double rows = (double)s->hq * (double)s->sq;
    double in = rows * (double)s->dk + (double)s->hkv * (double)s->sk * (double)(s->dk + s->dv);
    /* a loaded batch: every entry's outputs and log-sum-exps are held at once */
    double batch = c->input ? (double)c->input->n : 1;
    double out = batch * rows * (double)(s->dv + 1) * (double)(c->nvariants + 2);
    double work = rows / (double)(s->hkv > 0 ? s->hkv : 1) * (double)s->sk * 2.0 + rows * (double)s->dv * 2.0;
    return 8.0 * (in + out + work);
}

int run_expand_attribution(run_cfg_t *c, err_t *e)
{
    if (!c->attribute || c->expanded)
        return ERR_OK;
    int n0 = c->nvariants;
    for (int v = 0; v < n0; v++) {
        for (const site_def_t *d = attn_variants[c->variants[v]].sites; d->name; d++)
            for (int mode = RUN_ATTR_ONLY; mode <= RUN_ATTR_EXACT; mode++) {
                if (c->nvariants == RUN_MAX_VARIANTS)
                    return err_set(e, ERR_USAGE, "--attribute: more than %d variant runs; select fewer variants",
                                   RUN_MAX_VARIANTS);
                int k = c->nvariants++;
                c->variants[k] = c->variants[v];
                char parent[RUN_VSPEC_LEN];
                memcpy(parent, c->vspec[v], sizeof parent);
                int n = snprintf(c->vspec[k], RUN_VSPEC_LEN, "%s:%s=%s", parent,
                                 mode == RUN_ATTR_ONLY ? "only" : "exact", d->name);
                if (n >= RUN_VSPEC_LEN)
                    return err_set(e, ERR_USAGE, "--attribute: variant spec '%s' too long", c->vspec[v]);
                c->vparent[k] = v;
                c->vmode[k] = mode;
                c->vsite[k] = d->name;
            }
    }
    c->expanded = 1;
    return ERR_OK;
}

static int run_check_size(long v, const char *opt, err_t *e)
{
    if (v <= 0)
        return err_set(e, ERR_USAGE, "%s must be positive, got %ld", opt, v);
    return ERR_OK;
}

/* What the user gave, checked without changing it. */
int run_cfg_check(const run_cfg_t *c, err_t *e)
{
    const attn_shape_t *s = &c->shape;
    int rc = run_check_size(s->hq, "--heads", e);
    if (!rc) rc = run_check_size(s->sq, "--sq", e);
    /* a loaded sparse case whose every entry has no valid key has no keys at all: O = 0, LSE = +inf */
    if (!rc && !(c->load_dir && c->input && c->input->sparse_sq && s->sk == 0))
        rc = run_check_size(s->sk, "--ctx", e);
    if (!rc) rc = run_check_size(s->dk, "--dk", e);
    if (!rc) rc = run_check_size(s->dv, "--dv", e);
    if (!rc) rc = run_check_size(c->attn.block, "--block", e);
    if (!rc) rc = run_check_size(c->samples, "--samples", e);
    if (rc)
        return rc;
    if (c->threads < 0)
        return err_set(e, ERR_USAGE, "--threads must be positive, got %d", c->threads);
    if (c->attn.exact && c->attn.only)
        return err_set(e, ERR_USAGE, "--exact and --only cannot be combined (with --only every site not listed is "
                                     "already exact)");
    if (s->hkv <= 0 || s->hq % s->hkv != 0)
        return err_set(e, ERR_USAGE, "%ld query heads is not a multiple of %ld KV heads", s->hq, s->hkv);
    if (!c->load_dir && !c->gen.kv_separate && s->dv > s->dk)
        return err_set(e, ERR_USAGE, "--dv %ld exceeds --dk %ld with --kv shared (V = K[:, :dv])", s->dv, s->dk);
    if (s->causal == ATTN_CAUSAL_BOTTOM_RIGHT && s->sq > s->sk)
        return err_set(e, ERR_USAGE, "--causal (bottom-right) needs --sq (%ld) <= --ctx (%ld); --causal=top-left "
                                     "masks from the first key", s->sq, s->sk);
    if (c->gen.dist == GEN_UNIFORM && !(c->gen.low < c->gen.high))
        return err_set(e, ERR_USAGE, "--low (%g) must be below --high (%g)", c->gen.low, c->gen.high);
    if ((c->gen.dist == GEN_NORMAL || c->gen.dist == GEN_MLA) && !(c->gen.sigma > 0))
        return err_set(e, ERR_USAGE, "--sigma must be positive, got %g", c->gen.sigma);
    /* generated inputs that all round to zero in the input format: an attention of zeros, metrics 0 / 0 */
    if (!c->load_dir) {
        const fmt_t *F = &fmt_table[c->gen.in_format];
        double tiny = ldexp(1.0, F->emin - F->prec), reach = c->gen.dist == GEN_UNIFORM
                                                                  ? fmax(fabs(c->gen.low), fabs(c->gen.high))
                                                                  : fabs(c->gen.mean) + 8 * c->gen.sigma;
        if (reach < tiny)
            return err_set(e, ERR_USAGE, "%s: every input rounds to 0 in %s (a magnitude of %g or less does)",
                           c->gen.dist == GEN_UNIFORM ? "--low and --high" : "--sigma", F->name, tiny);
    }
    /* sizes: every product below must stay far from overflow and within memory */
    double elems[] = {(double)s->hq * s->sq * s->dk, (double)s->hkv * s->sk * s->dk,
                      (double)s->hkv * s->sk * s->dv, (double)s->hq * s->sq * s->dv,
                      (double)s->hq / s->hkv * s->sq * s->sk};
    for (size_t i = 0; i < sizeof elems / sizeof elems[0]; i++)
        if (elems[i] > 0x1p40)
            return err_set(e, ERR_USAGE, "shape too large: an array of %.3g elements", elems[i]);
    return ERR_OK;
}

const char *run_slot_name(const run_cfg_t *c, int v)
{
    return v == 0 ? "golden" : c->vspec[v - 1];
}
