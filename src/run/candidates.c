/* candidates -- which emulations `check` tries on a case: the default list for its shape and formats (the split
 * counts the real schedulers would choose, cuBLAS's split-K counts), or the user's list; those whose real kernel
 * cannot run the case set aside with the reason */
#include "run/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/kernel.h"
#include "config/opts.h"

#define CHECK_SPLIT_MIN_KEYS 256 /* keys from which check tries sdpa-math's split-K counts */


/* The default candidates for c's shape and formats. */
static int check_default_candidates(const run_cfg_t *c, char (*out)[RUN_VSPEC_LEN])
{
    static const char *const fixed[] = {"standard", "standard:acc=tc-ampere", "standard:acc=tc-hopper", "base",
                                        "base:acc=tc-ampere", "base:acc=tc-hopper", "amla", "amla:amla-form=paper",
                                        "fastattn", "seesaw", "etap", "flashmla", "flashmla:flashmla-sched=9c5dfab", "flashmla:sm-parts=1",
                                        "flashmla:build=ieee", "flashmla:sm-parts=1:build=ieee",
                                        "flashmla-etap", "flashmla-etap:sm-parts=1", "fa2", "fa2:sm-parts=1"};
    int n = 0;
    if (c->input && c->input->token_rows) { /* a sparse prefill: its kernel in both builds, and Base and standard
                                               (tc-hopper) on the same valid keys */
        static const char *const prefill[] = {"flashmla-sparse-prefill", "flashmla-sparse-prefill:build=ieee",
                                              "base:acc=tc-hopper", "standard:acc=tc-hopper"};
        for (size_t i = 0; i < sizeof prefill / sizeof prefill[0]; i++)
            snprintf(out[n++], RUN_VSPEC_LEN, "%s", prefill[i]);
        return n;
    }
    if (c->input && c->input->sparse_sq) { /* an FP8 sparse cache: its kernel, its no-split path, and Base and
                                              standard (with tc-hopper) on the same dequantized cache */
        static const char *const sparse[] = {"flashmla-sparse", "flashmla-sparse:sm-parts=1", "flashmla-sparse:build=ieee",
                                             "flashmla-sparse:sm-parts=1:build=ieee", "base", "base:acc=tc-hopper",
                                             "standard", "standard:acc=tc-hopper"};
        for (size_t i = 0; i < sizeof sparse / sizeof sparse[0]; i++)
            snprintf(out[n++], RUN_VSPEC_LEN, "%s", sparse[i]);
        return n;
    }
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        snprintf(out[n++], RUN_VSPEC_LEN, "%s", fixed[i]);
    if (c->attn.in_format == FMT_FP16)
        snprintf(out[n++], RUN_VSPEC_LEN, "fastattn-fp16acc");
    /* flashmla's and flashmla-etap's split counts on the SM counts of other Hopper parts (H100 PCIe
     * 114, H20 78, ETAP's own target): the parts the kernel would choose there, where they differ
     * from --sm-count's (both kernels share get_mla_metadata's choice) */
    const attn_shape_t *s = &c->shape;
    if (s->dk != 576 || s->dv != 512) { /* not an MLA case: FlashAttention-3 (flash_attn_func, and a varlen or
                                            kvcache call), PyTorch's other SDPA backends */
        snprintf(out[n++], RUN_VSPEC_LEN, "fa3");
        snprintf(out[n++], RUN_VSPEC_LEN, "fa3:sm-parts=1"); /* flash_attn_func's default num_splits */
        snprintf(out[n++], RUN_VSPEC_LEN, "fa3:fa3-varlen=yes");
        snprintf(out[n++], RUN_VSPEC_LEN, "sdpa-efficient");
        snprintf(out[n++], RUN_VSPEC_LEN, "sdpa-cudnn");
        snprintf(out[n++], RUN_VSPEC_LEN, "sdpa-math");
        /* cuBLAS splits the math path's P.V by shape (seen from 300 keys on, 4, 5 and 8 ways): the counts
         * 2 to 8 and 16, as the xmma SIMT kernels' round-robin tiles and as contiguous ranges */
        for (int inter = 1; s->sk >= CHECK_SPLIT_MIN_KEYS && inter >= 0; inter--)
            for (long k = 2; k <= 16; k = k < 8 ? k + 1 : 2 * k)
                snprintf(out[n++], RUN_VSPEC_LEN, "sdpa-math:split-k=%ld%s", k, inter ? "i" : "");
        return n;
    }
    snprintf(out[n++], RUN_VSPEC_LEN, "fa3:fa3-varlen=yes"); /* its q_v decode (flash_attn_with_kvcache, qv=q_nope) */
    snprintf(out[n++], RUN_VSPEC_LEN, "fa3:sm-parts=1");
    snprintf(out[n++], RUN_VSPEC_LEN, "triton-mla"); /* vLLM's TRITON_MLA: 4 splits, 1 under batch invariance */
    snprintf(out[n++], RUN_VSPEC_LEN, "triton-mla:sm-parts=1");
    /* the other vLLM files and calls (an FP8 cache's V and P.V differ) */
    snprintf(out[n++], RUN_VSPEC_LEN, "triton-mla:triton-decode=vllm-mla");
    snprintf(out[n++], RUN_VSPEC_LEN, "triton-mla:triton-decode=vllm-e46a1de");
    /* SGLang's Triton decode: get_num_kv_splits's splits, or static ones (max_kv_splits: 256 on Hopper) */
    snprintf(out[n++], RUN_VSPEC_LEN, "triton-mla:triton-decode=sglang");
    snprintf(out[n++], RUN_VSPEC_LEN, "triton-mla:triton-decode=sglang:sm-parts=256");
    if (c->attn.in_format == FMT_E4M3) { /* an FP8 cache: vLLM's FlashMLA dense FP8 decode */
        snprintf(out[n++], RUN_VSPEC_LEN, "flashmla-dense-fp8");
        snprintf(out[n++], RUN_VSPEC_LEN, "flashmla-dense-fp8:sm-parts=1");
    }
    long rows = (s->sq * s->hq / s->hkv + 63) / 64, own = c->attn.sm_count / s->hkv / rows;
    long sms[2] = {114, 78}, seen[3] = {own, 1, 0};
    for (int i = 0; i < 2; i++) {
        long p = sms[i] / s->hkv / rows;
        if (p > 1 && p != seen[0] && p != seen[1] && p != seen[2]) {
            snprintf(out[n++], RUN_VSPEC_LEN, "flashmla:sm-parts=%ld", p);
            snprintf(out[n++], RUN_VSPEC_LEN, "flashmla-etap:sm-parts=%ld", p);
            seen[2] = p;
        }
    }
    return n;
}

/* Candidates from a comma-separated list ("all": every registered variant). */
static int check_list_candidates(const char *list, char (*out)[RUN_VSPEC_LEN], err_t *e)
{
    int n = 0;
    if (strcmp(list, "all") == 0) {
        for (int i = 0; i < attn_variant_count && n < CHECK_MAX_CAND; i++)
            snprintf(out[n++], RUN_VSPEC_LEN, "%s", attn_variants[i].name);
        return n;
    }
    size_t total = strlen(list);
    if (total && list[total - 1] == ',')
        return err_set(e, ERR_USAGE, "--candidates: an empty name at the end of '%s'", list), -1;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= RUN_VSPEC_LEN)
            return err_set(e, ERR_USAGE, "--candidates: %s name in '%s'", len ? "too long a" : "an empty", list), -1;
        if (n == CHECK_MAX_CAND)
            return err_set(e, ERR_USAGE, "--candidates: more than %d", CHECK_MAX_CAND), -1;
        memcpy(out[n], p, len);
        out[n][len] = 0;
        if (strcmp(out[n], "golden") == 0 || strcmp(out[n], "all") == 0)
            return err_set(e, ERR_USAGE, "--candidates: %s", out[n][0] == 'g' ? "golden is the reference every candidate "
                           "is measured against, not a candidate" : "'all' stands alone"), -1;
        for (int i = 0; i < n; i++)
            if (strcmp(out[i], out[n]) == 0)
                return err_set(e, ERR_USAGE, "--candidates: '%s' is listed twice in '%s'", out[n], list), -1;
        n++;
        p += len + (p[len] == ',');
    }
    return n ? n : (err_set(e, ERR_USAGE, "--candidates: empty list"), -1);
}

int check_candidates(run_cfg_t *c, const char *list, check_skip_t *skip, int *nskip, err_t *e)
{
    char(*cand)[RUN_VSPEC_LEN] = err_malloc(CHECK_MAX_CAND, sizeof *cand);
    char *joined = err_calloc(CHECK_MAX_CAND * RUN_VSPEC_LEN, 1);
    run_cfg_t *t = err_malloc(1, sizeof *t);
    int ncand = list ? check_list_candidates(list, cand, e) : check_default_candidates(c, cand);
    int rc = ncand < 0 ? ERR_USAGE : ERR_OK;
    *nskip = 0;
    /* each candidate on its own: one that does not apply to the case is named, not fatal */
    for (int i = 0; i < ncand && !rc; i++) {
        *t = *c;
        err_t ve = {0};
        int bad = opts_parse_variants(t, cand[i], &ve) || run_validate(t, &ve);
        /* a default candidate whose real kernel does not run this case is named, not run */
        if (!bad && !list &&
            attn_kernel_outside(t->variants[0], &t->vcfg[0], &t->shape, t->gen.kv_separate, t->input, ve.msg,
                                sizeof ve.msg))
            bad = 1;
        if (bad) {
            if (list && strcmp(list, "all") != 0) {
                rc = err_set(e, ERR_USAGE, "--candidates: %s", ve.msg);
                break;
            }
            snprintf(skip[*nskip].variant, sizeof skip[*nskip].variant, "%s", cand[i]);
            snprintf(skip[(*nskip)++].reason, sizeof skip[0].reason, "%s", ve.msg);
            continue;
        }
        strcat(joined, joined[0] ? "," : "");
        strcat(joined, cand[i]);
    }
    if (!rc && !joined[0])
        rc = err_set(e, ERR_USAGE, "check: no candidate applies to %s", c->load_dir ? c->load_dir : "the case");
    if (!rc)
        rc = opts_parse_variants(c, joined, e);
    if (!rc)
        rc = run_validate(c, e);
    free(cand);
    free(joined);
    free(t);
    return rc;
}
