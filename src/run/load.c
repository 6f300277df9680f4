/* load -- a --load case read once for run and check: its shape against the options given, the masks it can take,
 * V shared or not, its input format where FP8 codes with scales say it */
#include "run/run.h"

#include <stdio.h>

#include "config/opts.h"

int run_load_input(run_cfg_t *c, attn_batch_t *in, err_t *e)
{
    int rc = gen_load(in, c->load_dir, c->attn.in_format, c->shape.dv, e);
    if (rc)
        return rc;
    /* the case's own shape wins: an option that says otherwise is refused, not silently overridden (--dv is
     * V's width where there is no v.npy, and so taken) */
    const attn_shape_t *ls = &in->entry[0].s;
    long sq_max = 0; /* a varlen batch's longest sequence of queries (what its sq is) */
    for (long b = 0; b < in->n; b++)
        sq_max = in->entry[b].s.sq > sq_max ? in->entry[b].s.sq : sq_max;
    const struct {
        const char *name;
        long given, loaded;
    } sizes[] = {{"dk", c->shape.dk, ls->dk}, {"dv", c->shape.dv, ls->dv}, {"ctx", c->shape.sk, in->smax},
                 {"heads", c->shape.hq, ls->hq}, {"kv-heads", c->shape.hkv, ls->hkv}, {"sq", c->shape.sq, sq_max}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (opts_given(c, sizes[i].name) && sizes[i].given != sizes[i].loaded) {
            rc = err_set(e, ERR_USAGE, "--%s %ld: the case in %s has %s %ld (its arrays' shape); drop --%s",
                         sizes[i].name, sizes[i].given, c->load_dir, sizes[i].name, sizes[i].loaded, sizes[i].name);
            attn_batch_free(in);
            return rc;
        }
    if ((in->sparse_sq || in->token_rows) && c->shape.causal) {
        attn_batch_free(in);
        return err_set(e, ERR_USAGE, "--causal: a sparse %s case has no causal mask (each query token's keys are its "
                                     "indices)", in->sparse_sq ? "FP8" : "prefill");
    }
    /* bottom-right, an entry with fewer keys than query tokens has rows that see no key (an entry of no key at all,
     * seqlens 0, takes the kernels' no-key convention whole) */
    for (long b = 0; c->shape.causal == ATTN_CAUSAL_BOTTOM_RIGHT && b < in->n; b++) {
        const attn_shape_t *es = &in->entry[b].s;
        if (es->sq <= es->sk || (in->flashmla_layout && es->sk == 0))
            continue;
        char which[96] = "";
        if (in->flashmla_layout)
            snprintf(which, sizeof which, " (entry %ld, seqlens.npy)", b);
        else if (in->qoff)
            snprintf(which, sizeof which, " (sequence %ld, cu_seqlens_q.npy and cu_seqlens_k.npy)", b);
        rc = err_set(e, ERR_USAGE, "--causal (bottom-right): the case in %s has %ld queries and %ld keys%s, so its first "
                                   "rows see no key; PyTorch's is_causal is --causal=top-left", c->load_dir, es->sq,
                     es->sk, which);
        attn_batch_free(in);
        return rc;
    }
    /* V shared with K or not is the case's (the CSV's kv column, the kernels' envelopes), as its sizes are */
    int separate = 0;
    for (long b = 0; b < in->n && !separate; b++)
        separate = !attn_v_is_k(&in->entry[b]);
    if (opts_given(c, "kv") && separate != c->gen.kv_separate) {
        rc = err_set(e, ERR_USAGE, "--kv %s: in the case in %s V is %s; drop --kv", separate ? "shared" : "separate",
                     c->load_dir, separate ? "not K's first dv columns" : "K's first dv columns");
        attn_batch_free(in);
        return rc;
    }
    c->gen.kv_separate = separate;
    /* q, k and v all e4m3 codes beside scale files: the case's input format is e4m3 whatever --in-format says (the
     * kernels' FP8 paths take it from there); without --in-format, so it is taken */
    const attn_input_t *e0 = &in->entry[0];
    if (!opts_given(c, "in-format") && e0->scale[0] && e0->scale[1] && e0->scale[2])
        c->attn.in_format = c->gen.in_format = FMT_E4M3;
    int causal = c->shape.causal;
    c->shape = in->entry[0].s;
    c->shape.sk = in->smax;
    c->shape.sq = sq_max;
    c->shape.causal = causal;
    for (long i = 0; i < in->n; i++)
        in->entry[i].s.causal = causal;
    c->input = in;
    return ERR_OK;
}
