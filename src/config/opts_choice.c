/* opts_choice -- the option table's setters for options that name one of a few choices (--amla-form, --causal,
 * --flashmla-sched, --triton-decode, --build) */
#include "config/opts.h"

#include <string.h>

#define OPT_FIELD(c, d, type) ((type *)((char *)(c) + (d)->off))

int opts_set_amla_form(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    (void)d;
    (void)opt;
    if (strcmp(val, "paper") == 0)
        c->attn.amla_form = ATTN_AMLA_PAPER;
    else if (strcmp(val, "cann") == 0)
        c->attn.amla_form = ATTN_AMLA_CANN;
    else
        return err_set(e, ERR_USAGE, "--amla-form: expected 'cann' or 'paper', got '%s'", val);
    return ERR_OK;
}

int opts_set_flashmla_sched(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    (void)d;
    if (strcmp(val, "9241ae3") == 0)
        c->attn.flashmla_sched = ATTN_FMLA_SCHED_9241AE3;
    else if (strcmp(val, "9c5dfab") == 0)
        c->attn.flashmla_sched = ATTN_FMLA_SCHED_9C5DFAB;
    else
        return err_set(e, ERR_USAGE, "%s: expected 9241ae3 (FlashMLA's scheduler today) or 9c5dfab, got '%s'", opt, val);
    return ERR_OK;
}

int opts_set_build(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    (void)d;
    if (strcmp(val, "fast-math") == 0)
        c->attn.build = ATTN_BUILD_FAST_MATH;
    else if (strcmp(val, "ieee") == 0)
        c->attn.build = ATTN_BUILD_IEEE;
    else
        return err_set(e, ERR_USAGE, "%s: expected fast-math (built with --use_fast_math) or ieee (without), got '%s'",
                       opt, val);
    return ERR_OK;
}

int opts_set_triton_decode(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    (void)d;
    for (int i = 0; i < ATTN_TRITON_COUNT; i++)
        if (strcmp(val, attn_triton_decode_names[i]) == 0) {
            c->attn.triton_decode = i;
            return ERR_OK;
        }
    return err_set(e, ERR_USAGE, "%s: expected vllm, vllm-mla, vllm-e46a1de or sglang (whose Triton MLA decode), got '%s'",
                   opt, val);
}

/* --causal: yes or bottom-right (FlashAttention's alignment), top-left (PyTorch SDPA's is_causal), no */
int opts_set_causal(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    int *out = OPT_FIELD(c, d, int), was = *out;
    if (strcmp(val, "top-left") == 0)
        *out = ATTN_CAUSAL_TOP_LEFT;
    else if (strcmp(val, "bottom-right") == 0)
        *out = ATTN_CAUSAL_BOTTOM_RIGHT;
    else if (strcmp(val, "yes") != 0 && strcmp(val, "no") != 0)
        return err_set(e, ERR_USAGE, "%s: expected yes, no, bottom-right or top-left, got '%s'", opt, val);
    else
        *out = strcmp(val, "yes") == 0 ? ATTN_CAUSAL_BOTTOM_RIGHT : ATTN_CAUSAL_NONE;
    /* two masks on one command line (--causal --causal=top-left): which one was meant is not known */
    if (opts_given(c, d->name) && *out != was) {
        *out = was;
        return err_set(e, ERR_USAGE, "%s=%s: the mask was given already as %s; give one", opt, val, attn_causal_name(was));
    }
    return ERR_OK;
}
