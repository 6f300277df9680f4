/* resolve -- a run configuration's defaults and its resolution (each variant's own settings): the part of
 * config that reads the option table, so that config/config.c needs none of config/opts.c */
#include "config/config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "config/opts.h"

void run_cfg_default(run_cfg_t *c)
{
    memset(c, 0, sizeof *c);
    c->shape.hq = c->shape.hkv = 1; /* set again by the table (kept valid while it runs) */
    gen_mla_default(&c->gen.mla);
    opts_defaults(c); /* every default lives in the option table (config/opts.c) */
    c->experiment = "run";
}

int run_resolve(run_cfg_t *out, const run_cfg_t *user, err_t *e)
{
    int rc = run_cfg_check(user, e);
    if (rc)
        return rc;
    if (out != user)
        *out = *user;
    run_cfg_t *c = out;
    const attn_shape_t *s = &c->shape;
    /* --attribute multiplies the variant runs, and every run's output is held at once */
    int rc3 = run_expand_attribution(c, e);
    if (rc3)
        return rc3;
    double mem = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    int threads = c->threads;
#ifdef _OPENMP
    if (threads == 0)
        threads = omp_get_max_threads();
#endif
    if (threads <= 0)
        threads = 1;
    if (threads > c->samples)
        threads = (int)c->samples;
    double need = run_sample_bytes(c) * threads;
    if (mem > 0 && need > mem)
        return err_set(e, ERR_USAGE, "shape needs %.3g GiB for %d thread(s), more than the %.3g GiB of memory",
                       need / 0x1p30, threads, mem / 0x1p30);
    if (c->attn.scale == 0)
        c->attn.scale = 1.0 / sqrt((double)s->dk);
    /* RoPE dims as given must leave some dims to the content, on every input (a loaded case's dk included);
     * mla inputs need it of the default too */
    if ((opts_given(c, "rope-dims") || (c->gen.dist == GEN_MLA && !c->load_dir)) && c->gen.mla.rope_dims >= s->dk)
        return err_set(e, ERR_USAGE, "--rope-dims %ld must be below %s %ld", c->gen.mla.rope_dims,
                       c->load_dir ? "the loaded case's dk" : "--dk", s->dk);
    /* FP8 variants keep the last rope_dims of Dk apart; the default on a head too small for it: none */
    c->attn.rope_dims = c->gen.mla.rope_dims < s->dk ? c->gen.mla.rope_dims : 0;
    /* --split-k is cuBLAS's split of sdpa-math's P.V: without that variant it would change nothing */
    int splits = 0;
    for (int v = 0; v < c->nvariants; v++)
        splits |= strcmp(attn_variants[c->variants[v]].name, "sdpa-math") == 0;
    if (opts_given(c, "split-k") && c->attn.split_k > 1 && !splits)
        return err_set(e, ERR_USAGE, "--split-k: no selected variant splits (it is sdpa-math's P.V, as cuBLAS splits it)");
    /* each variant's own configuration, and its --exact sites checked before any work */
    run_cfg_t *scratch = err_malloc(1, sizeof *scratch);
    for (int v = 0; v < c->nvariants && !rc; v++) {
        rc = opts_variant_cfg(c, v, scratch, e);
        attn_stats_t st;
        attn_ctx_t ctx;
        if (!rc)
            rc = attn_ctx_init(&ctx, c->variants[v], &c->vcfg[v], &st, e);
    }
    free(scratch);
    return rc;
}

int run_validate(run_cfg_t *c, err_t *e)
{
    return run_resolve(c, c, e);
}
