/* opts -- the option table: every `run` option once (name, value, default, help, where it may
 * be given), which drives the command line, experiment files' set and grid lines, variant
 * specs, the defaults and `run --help` */
#include "config/opts.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define OPTS_STR2(x) #x
#define OPTS_STR(x) OPTS_STR2(x)

int opts_parse_long(const char *opt, const char *s, long *out, err_t *e)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*s == 0 || *end != 0)
        return err_set(e, ERR_USAGE, "%s: '%s' is not an integer", opt, s);
    if (errno == ERANGE)
        return err_set(e, ERR_USAGE, "%s: '%s' is out of range", opt, s);
    *out = v;
    return ERR_OK;
}

int opts_parse_double(const char *opt, const char *s, double *out, err_t *e)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*s == 0 || *end != 0)
        return err_set(e, ERR_USAGE, "%s: '%s' is not a number", opt, s);
    if (!isfinite(v))
        return err_set(e, ERR_USAGE, "%s: '%s' is not a finite number", opt, s);
    *out = v;
    return ERR_OK;
}

int opts_parse_format(const char *opt, const char *s, run_out_t *out, err_t *e)
{
    static const char *const names[] = {"table", "csv", "json"};
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (run_out_t)i;
            return ERR_OK;
        }
    return err_set(e, ERR_USAGE, "%s: expected table, csv or json, got '%s'", opt, s);
}

static int parse_fmt(const char *opt, const char *s, fmt_id_t *out, err_t *e)
{
    int f = fmt_from_name(s);
    if (f < 0)
        return err_set(e, ERR_USAGE, "%s: unknown format '%s' (see 'amla-lab list')", opt, s);
    *out = (fmt_id_t)f;
    return ERR_OK;
}

static int parse_acc(const char *opt, const char *s, acc_model_t *out, err_t *e)
{
    int a = acc_from_name(s);
    if (a < 0)
        return err_set(e, ERR_USAGE, "%s: unknown accumulation model '%s' (see 'amla-lab list')", opt, s);
    *out = (acc_model_t)a;
    return ERR_OK;
}

static int parse_yes_no(const char *opt, const char *s, int *out, err_t *e)
{
    if (strcmp(s, "yes") != 0 && strcmp(s, "no") != 0)
        return err_set(e, ERR_USAGE, "%s: expected yes or no, got '%s'", opt, s);
    *out = strcmp(s, "yes") == 0;
    return ERR_OK;
}

/* ---- setters: one per kind of value; d->off and d->min/max say where and what ---- */

#define OPT_FIELD(c, d, type) ((type *)((char *)(c) + (d)->off))

static int set_long(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    long l;
    int rc = opts_parse_long(opt, val, &l, e);
    if (!rc && (l < d->min || l > d->max)) {
        if (d->max == LONG_MAX)
            return err_set(e, ERR_USAGE, d->min == 1 ? "%s must be positive, got %ld" : "%s must be non-negative, got %ld",
                           opt, l);
        return err_set(e, ERR_USAGE, "%s must be %ld to %ld, got %ld", opt, d->min, d->max, l);
    }
    if (!rc)
        *OPT_FIELD(c, d, long) = l;
    return rc;
}

/* N or Ni: a split count from 1 to 1024, i for the round-robin tiles of cuBLAS's xmma SIMT kernels */
static int set_split_k(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    (void)d;
    char num[32];
    size_t len = strlen(val);
    int inter = len > 1 && val[len - 1] == 'i';
    long l;
    if (len - (size_t)inter >= sizeof num)
        return err_set(e, ERR_USAGE, "%s: '%s' is not a split count (N or Ni, N from 1 to 1024)", opt, val);
    memcpy(num, val, len - (size_t)inter);
    num[len - (size_t)inter] = 0;
    if (opts_parse_long(opt, num, &l, e) || l < 1 || l > 1024)
        return err_set(e, ERR_USAGE, "%s: '%s' is not a split count (N or Ni, N from 1 to 1024)", opt, val);
    c->attn.split_k = l;
    c->attn.split_interleaved = inter;
    return ERR_OK;
}

static int set_int(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    long l;
    int rc = opts_parse_long(opt, val, &l, e);
    if (!rc && (l < d->min || l > d->max))
        return err_set(e, ERR_USAGE, "%s must be %ld to %ld, got %ld", opt, d->min, d->max, l);
    if (!rc)
        *OPT_FIELD(c, d, int) = (int)l;
    return rc;
}

static int set_seed(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    long l;
    (void)d;
    int rc = opts_parse_long(opt, val, &l, e);
    if (!rc && l < 0)
        return err_set(e, ERR_USAGE, "--seed must be non-negative, got %ld", l);
    if (!rc)
        c->seed = (uint64_t)l;
    return rc;
}

/* A finite number; d->min = 1: it must be positive. */
static int set_double(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    double x;
    int rc = opts_parse_double(opt, val, &x, e);
    if (!rc && d->min == 1 && !(x > 0))
        return err_set(e, ERR_USAGE, "%s must be positive, got %s", opt, val);
    if (!rc)
        *OPT_FIELD(c, d, double) = x;
    return rc;
}

/* The MLA cache's shapes: non-negative (a rate at most 1); setting one leaves the profiles. */
static int set_mla(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    double x;
    int rc = opts_parse_double(opt, val, &x, e);
    if (!rc && (x < 0 || (d->max == 1 && x > 1)))
        return err_set(e, ERR_USAGE, "%s out of range: %s", opt, val);
    if (!rc) {
        *OPT_FIELD(c, d, double) = x;
        c->gen.mla.profile = 0;
    }
    return rc;
}

static int set_profile(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    long l;
    (void)d;
    int rc = opts_parse_long(opt, val, &l, e);
    if (!rc && (l < 1 || l > GEN_MLA_PROFILES))
        return err_set(e, ERR_USAGE, "--layer-profile must be 1 to %d, got %ld", GEN_MLA_PROFILES, l);
    if (!rc)
        gen_mla_profile(&c->gen.mla, (int)l);
    return rc;
}

static int set_scale(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    int rc = set_double(c, d, opt, val, e);
    /* the kernels hold the scale in binary32 */
    if (!rc && c->attn.scale > FLT_MAX)
        return err_set(e, ERR_USAGE, "--scale %s is not finite in fp32 (largest %g)", val, (double)FLT_MAX);
    return rc;
}

static int set_dist(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    (void)d;
    (void)opt;
    int g = gen_from_name(val);
    if (g < 0)
        return err_set(e, ERR_USAGE, "--dist: unknown distribution '%s' (see 'amla-lab list')", val);
    c->gen.dist = (gen_dist_t)g;
    return ERR_OK;
}

static int set_kv(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    (void)d;
    (void)opt;
    if (strcmp(val, "shared") != 0 && strcmp(val, "separate") != 0)
        return err_set(e, ERR_USAGE, "--kv: expected 'shared' or 'separate', got '%s'", val);
    c->gen.kv_separate = strcmp(val, "separate") == 0;
    return ERR_OK;
}

static int set_format(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    int rc = parse_fmt(opt, val, OPT_FIELD(c, d, fmt_id_t), e);
    if (!rc && d->off == offsetof(run_cfg_t, attn.in_format))
        c->gen.in_format = c->attn.in_format; /* inputs are generated in the input format */
    return rc;
}

static int set_acc(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    if (d->off) /* --acc-qk or --acc-pv */
        return parse_acc(opt, val, OPT_FIELD(c, d, acc_model_t), e);
    int rc = parse_acc(opt, val, &c->attn.acc_qk, e);
    c->attn.acc_pv = c->attn.acc_qk;
    return rc;
}

static int set_variants(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    (void)d;
    (void)opt;
    return opts_parse_variants(c, val, e);
}

/* Site lists "a,b": an empty list or entry is refused (--only '' would mean "no site rounds",
 * which is --exact all said by accident). */
static int set_sites(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    size_t n = strlen(val);
    if (n == 0 || val[0] == ',' || val[n - 1] == ',' || strstr(val, ",,"))
        return err_set(e, ERR_USAGE, "%s: empty site name in '%s' (see 'amla-lab list --sites VARIANT')", opt, val);
    *OPT_FIELD(c, d, const char *) = val;
    return ERR_OK;
}

static int set_yes_no(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    return parse_yes_no(opt, val, OPT_FIELD(c, d, int), e);
}

static int set_text(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    (void)opt;
    (void)e;
    *OPT_FIELD(c, d, const char *) = val;
    return ERR_OK;
}

static int set_out(run_cfg_t *c, const opts_def_t *d, const char *opt, const char *val, err_t *e)
{
    (void)d;
    return opts_parse_format(opt, val, &c->out, e);
}

/* ---- the table ---- */

#define OFF(field) offsetof(run_cfg_t, field)
#define V OPTS_VARIANT
#define NX OPTS_NOT_IN_EXPERIMENTS
#define F OPTS_FLAG

/* name, value, default (applied), default (shown only), where, setter, field, min, max, help */
const opts_def_t opts_table[] = {
    /* inputs */
    {"dist", "normal|uniform|fa3-outlier|mla", "normal", NULL, 0, set_dist, 0, 0, 0, "input distribution"},
    {"mean", "M", "0", NULL, 0, set_double, OFF(gen.mean), 0, 0, "normal and mla: mean"},
    {"sigma", "S", "1", NULL, 0, set_double, OFF(gen.sigma), 1, 0, "normal and mla: standard deviation"},
    {"low", "A", "-1", NULL, 0, set_double, OFF(gen.low), 0, 0, "uniform: lower bound"},
    {"high", "B", "1", NULL, 0, set_double, OFF(gen.high), 0, 0, "uniform: upper bound"},
    {"layer-profile", "1.." OPTS_STR(GEN_MLA_PROFILES), NULL, "none: the values below", 0, set_profile, 0, 0, 0,
     "mla: a layer profile (RoPE range, outlier rate, token spread)"},
    {"rope-dims", "N", OPTS_STR(GEN_MLA_ROPE_DIMS), NULL, 0, set_long, OFF(gen.mla.rope_dims), 0, LONG_MAX,
     "the last N dims of Dk are RoPE (mla inputs; FP8 variants keep them apart)"},
    {"rope-scale", "X", OPTS_STR(GEN_MLA_ROPE_SCALE), NULL, 0, set_mla, OFF(gen.mla.rope_scale), 0, 0,
     "mla: RoPE spread relative to sigma"},
    {"outlier-rate", "P", OPTS_STR(GEN_MLA_OUTLIER_RATE), NULL, 0, set_mla, OFF(gen.mla.outlier_rate), 0, 1,
     "mla: probability of a RoPE outlier"},
    {"outlier-scale", "X", OPTS_STR(GEN_MLA_OUTLIER_SCALE), NULL, 0, set_mla, OFF(gen.mla.outlier_scale), 0, 0,
     "mla: outliers' spread relative to RoPE's"},
    {"token-spread", "X", OPTS_STR(GEN_MLA_TOKEN_SPREAD), NULL, 0, set_mla, OFF(gen.mla.token_spread), 0, 0,
     "mla: spread of the per-token magnitude exp(N(0, X^2))"},
    {"samples", "N", "10", NULL, 0, set_long, OFF(samples), 1, LONG_MAX, "samples (a --load case: 1)"},
    {"seed", "N", "1", NULL, 0, set_seed, 0, 0, 0, "seed of every sample's stream"},
    {"ctx", "S2", "8192", NULL, 0, set_long, OFF(shape.sk), 1, LONG_MAX, "keys per KV head"},
    {"heads", "G", "128", NULL, 0, set_long, OFF(shape.hq), 1, LONG_MAX, "query heads"},
    {"kv-heads", "H", "1", NULL, 0, set_long, OFF(shape.hkv), 1, LONG_MAX, "KV heads (1 for MLA)"},
    {"sq", "N", "1", NULL, 0, set_long, OFF(shape.sq), 1, LONG_MAX, "query tokens per head"},
    {"dk", "D", "576", NULL, 0, set_long, OFF(shape.dk), 1, LONG_MAX, "head dim of Q and K"},
    {"dv", "D", "512", NULL, 0, set_long, OFF(shape.dv), 1, LONG_MAX, "head dim of V (V = K[..., :dv] unless separate)"},
    {"kv", "shared|separate", "shared", NULL, 0, set_kv, 0, 0, 0, "shared: V = K[..., :dv], MLA's latent cache"},
    {"causal", NULL, "no", NULL, F, opts_set_causal, OFF(shape.causal), 0, 0,
     "query token t sees keys j <= t + ctx - sq (bottom-right, FlashAttention's); --causal=top-left: j <= t "
     "(PyTorch SDPA's is_causal)"},
    {"load", "DIR", NULL, NULL, NX, set_text, OFF(load_dir), 0, 0,
     "read DIR/q.npy, k.npy and optionally v.npy (else V = K[..., :dv]), once; with seqlens.npy a batch in FlashMLA's layout, with cu_seqlens_q.npy FlashAttention's varlen layout"},
    /* arithmetic */
    {"in-format", "FMT", "bf16", NULL, 0, set_format, OFF(attn.in_format), 0, 0, "format of Q, K, V (and P for P.V)"},
    {"out-format", "FMT", "bf16", NULL, V, set_format, OFF(attn.out_format), 0, 0, "format of the output"},
    {"block", "B", "512", NULL, V, set_long, OFF(attn.block), 1, LONG_MAX,
     "KV tile in tokens (AMLA's block; the Hopper kernels' 64 is their own)"},
    {"scale", "X", NULL, "1/sqrt(dk)", V, set_scale, OFF(attn.scale), 1, 0, "softmax scale"},
    {"acc", "MODEL", "fp32-fma", NULL, V, set_acc, 0, 0, 0, "accumulation model of both products"},
    {"acc-qk", "MODEL", NULL, "--acc", V, set_acc, OFF(attn.acc_qk), 0, 0, "accumulation model of Q.K^T"},
    {"acc-pv", "MODEL", NULL, "--acc", V, set_acc, OFF(attn.acc_pv), 0, 0, "accumulation model of P.V"},
    {"variants", "a,b:key=value,...", "golden,standard,base,amla,flashmla,snapmla,etap", NULL, 0, set_variants, 0, 0,
     0, "variants to run ('all' for every one; the default: one per seed paper); golden is always the reference"},
    {"exact", "SITE,...", NULL, NULL, V, set_sites, OFF(attn.exact), 0, 0,
     "compute these rounding sites in fp64 ('all' for every site)"},
    {"only", "SITE,...", NULL, NULL, V, set_sites, OFF(attn.only), 0, 0, "round only at these sites"},
    {"attribute", NULL, "no", NULL, F, set_yes_no, OFF(attribute), 0, 0,
     "per site: the error with only it rounded, and the error removed when it is exact"},
    {"amla-form", "cann|paper", "cann", NULL, V, opts_set_amla_form, 0, 0, 0,
     "AMLA's compensation as the CANN kernel runs it (what the paper measured) or as Algorithm 2 prints it"},
    {"row-block", "N", NULL, "all rows", V, set_long, OFF(attn.row_block), 1, LONG_MAX, "fastattn: Cube row tile"},
    {"sub-block", "N", NULL, "all rows", V, set_long, OFF(attn.sub_block), 1, LONG_MAX, "fastattn: Vector row tile"},
    {"fa3-block", "yes|no", "yes", NULL, V, set_yes_no, OFF(attn.fa3_block), 0, 0, "fa3-fp8: block quantization"},
    {"fa3-hadamard", "yes|no", "yes", NULL, V, set_yes_no, OFF(attn.fa3_hadamard), 0, 0,
     "fa3-fp8: random-sign Hadamard (incoherent processing)"},
    {"sm-count", "N", "132", NULL, V, set_long, OFF(attn.sm_count), 1, 100000,
     "flashmla, flashmla-etap, flashmla-sparse, flashmla-dense-fp8, fa2, fa3, triton-mla (SGLang's): the GPU's SMs (132)"},
    {"sm-parts", "N", NULL, "the kernel's own choice", V, set_long, OFF(attn.sm_parts), 1, 100000,
     "flashmla, flashmla-etap, flashmla-sparse, flashmla-dense-fp8: SM parts; fa2, fa3 (<= 128), triton-mla: splits"},
    {"fa3-varlen", "yes|no", "no", NULL, V, set_yes_no, OFF(attn.fa3_varlen), 0, 0,
     "fa3: a varlen call (flash_attn_with_kvcache, seqused_k, cu_seqlens): FA3 shares the splits out per entry"},
    {"page-size", "N", "0", NULL, V, set_long, OFF(attn.page_size), 0, 1000000,
     "fa3: the paged KV cache's page size (0: contiguous; pages not a multiple of the key block are read without TMA)"},
    {"flashmla-sched", "9241ae3|9c5dfab", "9241ae3", NULL, V, opts_set_flashmla_sched, 0, 0, 0,
     "flashmla: the decode scheduler of FlashMLA 9241ae3 and later (no payload floor) or of 9c5dfab (10 blocks at least)"},
    {"build", "fast-math|ieee", "fast-math", NULL, V, opts_set_build, 0, 0, 0,
     "the CUDA kernels' build: --use_fast_math (their repositories' setup.py, SGLang) or without it (vLLM's FlashMLA)"},
    {"triton-decode", "vllm|vllm-mla|vllm-e46a1de|sglang", "vllm", NULL, V, opts_set_triton_decode, 0, 0, 0,
     "triton-mla: whose Triton MLA decode (they differ on an FP8 cache): vLLM 0155494's (V dequantized in fp32, P.V in "
     "TF32), vLLM's called with is_mla (V = the K tile), vLLM-kimi e46a1de's (V = the codes), SGLang's (per request "
     "get_num_kv_splits's splits over --sm-count, or sm-parts; cdiv(cdiv(len, n), 32) 32 keys a split; P.V in e4m3)"},
    {"split-k", "N|Ni", "1", NULL, V, set_split_k, 0, 0, 0,
     "sdpa-math: cuBLAS's split-K of P.V, N contiguous K ranges (CUTLASS SIMT, nvjet) or Ni K's 8-wide tiles "
     "round-robin (xmma SIMT); cuBLAS picks it by shape, check searches it"},
    /* output */
    {"format", "table|csv|json", "table", NULL, NX, set_out, 0, 0, 0, "how results are printed"},
    {"csv", "FILE", NULL, NULL, NX, set_text, OFF(csv_path), 0, 0, "per-sample rows to FILE"},
    {"dump", "DIR", NULL, NULL, NX, set_text, OFF(dump_dir), 0, 0, "sample 0's inputs and outputs as DIR/NAME.npy (NAME.lse.npy: Golden's and flashmla*, fa2, fa3, sdpa-efficient, "
     "sdpa-cudnn, triton-mla's log-sum-exp); FP8 codes with their scales as codes and NAME_scale.npy"},
    {"threads", "N", NULL, "all cores", NX, set_int, OFF(threads), 1, OPTS_MAX_THREADS,
     "threads (one sample each; never more than samples)"},
    {NULL, NULL, NULL, NULL, 0, NULL, 0, 0, 0, NULL},
};

/* every row has its bit in run_cfg_t.given */
_Static_assert(sizeof opts_table / sizeof opts_table[0] <= 65, "opts_table: more rows than run_cfg_t.given has bits");

/* Where --help starts a new section. */
static const struct { const char *first, *title; } opts_sections[] = {{"dist", "inputs"}, {"in-format", "arithmetic"},
                                                                     {"format", "output"}};

const opts_def_t *opts_find_flag(const char *arg, const char **val)
{
    const char *eq = strchr(arg, '=');
    size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
    for (const opts_def_t *d = opts_table; d->name; d++)
        if ((d->where & OPTS_FLAG) && strlen(d->name) == n && strncmp(d->name, arg, n) == 0) {
            *val = eq ? eq + 1 : "yes";
            return d;
        }
    return NULL;
}

const opts_def_t *opts_find(const char *name)
{
    for (const opts_def_t *d = opts_table; d->name; d++)
        if (strcmp(d->name, name) == 0)
            return d;
    return NULL;
}

int opts_set(run_cfg_t *c, const char *name, const char *val, err_t *e)
{
    const opts_def_t *d = opts_find(name);
    char opt[64];
    snprintf(opt, sizeof opt, "--%s", name);
    if (!d)
        return err_set(e, ERR_USAGE, "run: unknown option '%s' (see 'amla-lab run --help')", opt);
    int rc = d->set(c, d, opt, val, e);
    if (!rc)
        c->given |= (uint64_t)1 << (d - opts_table);
    return rc;
}

int opts_given(const run_cfg_t *c, const char *name)
{
    const opts_def_t *d = opts_find(name);
    return d && (c->given >> (d - opts_table) & 1);
}

int opts_run_option(run_cfg_t *c, const char *opt, const char *val, err_t *e)
{
    if (strncmp(opt, "--", 2) != 0)
        return err_set(e, ERR_USAGE, "run: unknown option '%s' (see 'amla-lab run --help')", opt);
    return opts_set(c, opt + 2, val, e);
}

void opts_defaults(run_cfg_t *c)
{
    for (const opts_def_t *d = opts_table; d->name; d++)
        if (d->def) {
            err_t e = {0};
            if (d->set(c, d, d->name, d->def, &e))
                abort(); /* a default the table cannot parse: a broken invariant */
        }
}

void opts_write_help(FILE *f)
{
    fputs("usage: amla-lab run [options]   (every option also as --opt=value)\n", f);
    for (const opts_def_t *d = opts_table; d->name; d++) {
        for (size_t s = 0; s < sizeof opts_sections / sizeof opts_sections[0]; s++)
            if (strcmp(d->name, opts_sections[s].first) == 0)
                fprintf(f, "%s:\n", opts_sections[s].title);
        char lead[96];
        int n = snprintf(lead, sizeof lead, "  --%s%s%s", d->name, d->arg ? " " : "", d->arg ? d->arg : "");
        const char *def = d->def ? d->def : d->shown;
        if (def && !(d->where & OPTS_FLAG))
            snprintf(lead + n, sizeof lead - (size_t)n, " [%s]", def);
        fprintf(f, "%-40s %s\n", lead, d->help);
    }
    fputs("A variant may carry its own settings: NAME:KEY=VALUE[:KEY=VALUE] with KEY one of", f);
    for (const opts_def_t *d = opts_table; d->name; d++)
        if (d->where & OPTS_VARIANT)
            fprintf(f, " %s", d->name);
    fputs(".\n", f);
}
