/* opts -- parsing option values into a run configuration (command line, experiment files) */
#include "config/opts.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* "a,b:key=value,c": registry names, each optionally followed by overrides. */
static int parse_variants(run_cfg_t *c, const char *s, err_t *e)
{
    c->nvariants = 0;
    c->show_golden = 0;
    int ngolden = 0;
    const char *p = s;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char tok[RUN_VSPEC_LEN];
        if (len == 0 || len >= sizeof tok)
            return err_set(e, ERR_USAGE, "--variants: empty or too long entry in '%s'", s);
        memcpy(tok, p, len);
        tok[len] = 0;
        p = end ? end + 1 : p + len;
        if (strcmp(tok, "golden") == 0) {
            c->show_golden = 1;
            ngolden++;
            continue;
        }
        if (strcmp(tok, "all") == 0) {
            c->show_golden = 1;
            ngolden++;
            for (int i = 0; i < attn_variant_count && c->nvariants < RUN_MAX_VARIANTS; i++) {
                c->variants[c->nvariants] = i;
                snprintf(c->vspec[c->nvariants++], RUN_VSPEC_LEN, "%s", attn_variants[i].name);
            }
            continue;
        }
        char name[RUN_VSPEC_LEN];
        size_t nl = strcspn(tok, ":");
        memcpy(name, tok, nl);
        name[nl] = 0;
        int v = attn_find(name);
        if (v < 0)
            return err_set(e, ERR_USAGE, "--variants: unknown variant '%s' (see 'amla-lab list')", name);
        if (c->nvariants == RUN_MAX_VARIANTS)
            return err_set(e, ERR_USAGE, "--variants: more than %d variants", RUN_MAX_VARIANTS);
        c->variants[c->nvariants] = v;
        memcpy(c->vspec[c->nvariants++], tok, len + 1);
    }
    if (c->nvariants == 0 && !c->show_golden)
        return err_set(e, ERR_USAGE, "--variants: empty list");
    /* the same run twice would only duplicate rows (and, with 'all', hide a typo) */
    if (ngolden > 1)
        return err_set(e, ERR_USAGE, "--variants: golden is listed twice in '%s'", s);
    for (int a = 0; a < c->nvariants; a++)
        for (int b = a + 1; b < c->nvariants; b++)
            if (strcmp(c->vspec[a], c->vspec[b]) == 0)
                return err_set(e, ERR_USAGE, "--variants: '%s' is listed twice in '%s'", c->vspec[a], s);
    return ERR_OK;
}

int opts_variant_cfg(run_cfg_t *c, int v, err_t *e)
{
    static const char *const allowed[] = {"amla-form", "block", "acc", "acc-qk", "acc-pv", "exact", "only",
                                          "out-format", "scale", "row-block", "sub-block", "fa3-block",
                                          "fa3-hadamard", NULL};
    const char *spec = c->vspec[v];
    const char *p = strchr(spec, ':');
    if (!p) {
        c->vcfg[v] = c->attn;
        return ERR_OK;
    }
    run_cfg_t *c2 = malloc(sizeof *c2);
    if (!c2)
        return err_set(e, ERR_IO, "out of memory");
    *c2 = *c;
    int rc = ERR_OK, sets_exact = 0, sets_only = 0;
    char kv[RUN_VSPEC_LEN];
    char *keys[OPTS_MAX_OVERRIDES];
    snprintf(kv, sizeof kv, "%s", p + 1);
    int nk = 0;
    /* "name:" and "name::k=v" have an empty override: a typo, not a default */
    for (char *t = kv, *end; !rc; t = end + 1) {
        end = strchr(t, ':');
        if (end)
            *end = 0;
        if (!*t)
            rc = err_set(e, ERR_USAGE, "variant '%s': empty setting (write NAME:KEY=VALUE[:KEY=VALUE])", spec);
        else if (nk == OPTS_MAX_OVERRIDES)
            rc = err_set(e, ERR_USAGE, "variant '%s': more than %d settings", spec, OPTS_MAX_OVERRIDES);
        else
            keys[nk++] = t;
        if (!end)
            break;
    }
    for (int i = 0; i < nk && !rc; i++) {
        char *eq = strchr(keys[i], '=');
        if (!eq) {
            rc = err_set(e, ERR_USAGE, "variant '%s': override '%s' is not key=value", spec, keys[i]);
            break;
        }
        *eq = 0;
        int ok = 0;
        for (int k = 0; allowed[k]; k++)
            ok |= strcmp(keys[i], allowed[k]) == 0;
        if (!ok) {
            rc = err_set(e, ERR_USAGE, "variant '%s': '%s' cannot be set per variant", spec, keys[i]);
            break;
        }
        for (int j = 0; j < i && !rc; j++)
            if (strcmp(keys[j], keys[i]) == 0)
                rc = err_set(e, ERR_USAGE, "variant '%s': '%s' is set twice", spec, keys[i]);
        sets_exact |= strcmp(keys[i], "exact") == 0;
        sets_only |= strcmp(keys[i], "only") == 0;
        char opt[64];
        snprintf(opt, sizeof opt, "--%s", keys[i]);
        err_t oe = {0};
        if (!rc && opts_run_option(c2, opt, eq + 1, &oe))
            rc = err_set(e, ERR_USAGE, "variant '%s': %s", spec, oe.msg);
    }
    /* a variant's own exact= or only= replaces the run's --exact/--only (they do not mix) */
    if (!rc && sets_exact && sets_only)
        rc = err_set(e, ERR_USAGE, "variant '%s': exact= and only= cannot be combined", spec);
    if (!rc && sets_exact)
        c2->attn.only = NULL;
    if (!rc && sets_only)
        c2->attn.exact = NULL;
    if (!rc && c2->attn.scale == 0)
        c2->attn.scale = c->attn.scale;
    if (!rc) {
        c->vcfg[v] = c2->attn;
        /* --exact and --only point into the scratch copy: keep the lists in c */
        if (c2->attn.exact && c2->attn.exact != c->attn.exact) {
            snprintf(c->vexact[v], RUN_VSPEC_LEN, "%s", c2->attn.exact);
            c->vcfg[v].exact = c->vexact[v];
        }
        if (c2->attn.only && c2->attn.only != c->attn.only) {
            snprintf(c->vonly[v], RUN_VSPEC_LEN, "%s", c2->attn.only);
            c->vcfg[v].only = c->vonly[v];
        }
    }
    free(c2);
    return rc;
}

/* Options of `run` that take a value, and how to store it. */
int opts_run_option(run_cfg_t *c, const char *opt, const char *val, err_t *e)
{
    long l;
    int rc = ERR_OK;
#define LONGOPT(name, field)                                  \
    if (strcmp(opt, name) == 0) {                             \
        rc = opts_parse_long(opt, val, &l, e);                     \
        if (!rc && l <= 0)                                    \
            rc = err_set(e, ERR_USAGE, "%s must be positive, got %ld", opt, l); \
        if (!rc)                                              \
            field = l;                                        \
        return rc;                                            \
    }
    LONGOPT("--samples", c->samples)
    LONGOPT("--ctx", c->shape.sk)
    LONGOPT("--heads", c->shape.hq)
    LONGOPT("--kv-heads", c->shape.hkv)
    LONGOPT("--sq", c->shape.sq)
    LONGOPT("--dk", c->shape.dk)
    LONGOPT("--dv", c->shape.dv)
    LONGOPT("--block", c->attn.block)
    LONGOPT("--row-block", c->attn.row_block)
    LONGOPT("--sub-block", c->attn.sub_block)
#undef LONGOPT
    if (strcmp(opt, "--threads") == 0) {
        rc = opts_parse_long(opt, val, &l, e);
        if (!rc && (l < 1 || l > OPTS_MAX_THREADS))
            rc = err_set(e, ERR_USAGE, "--threads must be 1 to %d, got %ld", OPTS_MAX_THREADS, l);
        if (!rc)
            c->threads = (int)l;
        return rc;
    }
    if (strcmp(opt, "--seed") == 0) {
        rc = opts_parse_long(opt, val, &l, e);
        if (!rc && l < 0)
            rc = err_set(e, ERR_USAGE, "--seed must be non-negative, got %ld", l);
        if (!rc)
            c->seed = (uint64_t)l;
        return rc;
    }
    if (strcmp(opt, "--mean") == 0)
        return opts_parse_double(opt, val, &c->gen.mean, e);
    if (strcmp(opt, "--sigma") == 0) {
        rc = opts_parse_double(opt, val, &c->gen.sigma, e);
        if (!rc && !(c->gen.sigma > 0))
            rc = err_set(e, ERR_USAGE, "--sigma must be positive, got %s", val);
        return rc;
    }
    if (strcmp(opt, "--layer-profile") == 0) {
        rc = opts_parse_long(opt, val, &l, e);
        if (!rc && (l < 1 || l > GEN_MLA_PROFILES))
            rc = err_set(e, ERR_USAGE, "--layer-profile must be 1 to %d, got %ld", GEN_MLA_PROFILES, l);
        if (!rc)
            gen_mla_profile(&c->gen.mla, (int)l);
        return rc;
    }
    if (strcmp(opt, "--rope-dims") == 0) {
        rc = opts_parse_long(opt, val, &l, e);
        if (!rc && l < 0)
            rc = err_set(e, ERR_USAGE, "--rope-dims must be non-negative, got %ld", l);
        if (!rc)
            c->gen.mla.rope_dims = l;
        return rc;
    }
    {
        static const char *const mla_opts[] = {"--rope-scale", "--outlier-rate", "--outlier-scale", "--token-spread"};
        double *fields[] = {&c->gen.mla.rope_scale, &c->gen.mla.outlier_rate, &c->gen.mla.outlier_scale,
                            &c->gen.mla.token_spread};
        for (int i = 0; i < 4; i++)
            if (strcmp(opt, mla_opts[i]) == 0) {
                double d;
                rc = opts_parse_double(opt, val, &d, e);
                if (!rc && (d < 0 || (i == 1 && d > 1)))
                    rc = err_set(e, ERR_USAGE, "%s out of range: %s", opt, val);
                if (!rc) {
                    *fields[i] = d;
                    c->gen.mla.profile = 0;
                }
                return rc;
            }
    }
    if (strcmp(opt, "--low") == 0)
        return opts_parse_double(opt, val, &c->gen.low, e);
    if (strcmp(opt, "--high") == 0)
        return opts_parse_double(opt, val, &c->gen.high, e);
    if (strcmp(opt, "--scale") == 0) {
        rc = opts_parse_double(opt, val, &c->attn.scale, e);
        if (!rc && !(c->attn.scale > 0))
            rc = err_set(e, ERR_USAGE, "--scale must be positive, got %s", val);
        /* the kernels hold the scale in binary32 */
        if (!rc && c->attn.scale > FLT_MAX)
            rc = err_set(e, ERR_USAGE, "--scale %s is not finite in fp32 (largest %g)", val, (double)FLT_MAX);
        return rc;
    }
    if (strcmp(opt, "--dist") == 0) {
        int d = gen_from_name(val);
        if (d < 0)
            return err_set(e, ERR_USAGE, "--dist: unknown distribution '%s' (see 'amla-lab list')", val);
        c->gen.dist = (gen_dist_t)d;
        return ERR_OK;
    }
    if (strcmp(opt, "--kv") == 0) {
        if (strcmp(val, "shared") != 0 && strcmp(val, "separate") != 0)
            return err_set(e, ERR_USAGE, "--kv: expected 'shared' or 'separate', got '%s'", val);
        c->gen.kv_separate = strcmp(val, "separate") == 0;
        return ERR_OK;
    }
    if (strcmp(opt, "--in-format") == 0) {
        rc = parse_fmt(opt, val, &c->attn.in_format, e);
        c->gen.in_format = c->attn.in_format;
        return rc;
    }
    if (strcmp(opt, "--out-format") == 0)
        return parse_fmt(opt, val, &c->attn.out_format, e);
    if (strcmp(opt, "--acc") == 0) {
        rc = parse_acc(opt, val, &c->attn.acc_qk, e);
        c->attn.acc_pv = c->attn.acc_qk;
        return rc;
    }
    if (strcmp(opt, "--acc-qk") == 0)
        return parse_acc(opt, val, &c->attn.acc_qk, e);
    if (strcmp(opt, "--acc-pv") == 0)
        return parse_acc(opt, val, &c->attn.acc_pv, e);
    if (strcmp(opt, "--variants") == 0)
        return parse_variants(c, val, e);
    if (strcmp(opt, "--amla-form") == 0) {
        if (strcmp(val, "paper") == 0)
            c->attn.amla_form = ATTN_AMLA_PAPER;
        else if (strcmp(val, "cann") == 0)
            c->attn.amla_form = ATTN_AMLA_CANN;
        else
            return err_set(e, ERR_USAGE, "--amla-form: expected 'paper' or 'cann', got '%s'", val);
        return ERR_OK;
    }
    if (strcmp(opt, "--exact") == 0 || strcmp(opt, "--only") == 0) {
        /* site lists: "a,b"; an empty list or entry is refused (--only '' would mean "no site
         * rounds", which is --exact all said by accident) */
        size_t n = strlen(val);
        if (n == 0 || val[0] == ',' || val[n - 1] == ',' || strstr(val, ",,"))
            return err_set(e, ERR_USAGE, "%s: empty site name in '%s' (see 'amla-lab list --sites VARIANT')", opt, val);
        *(strcmp(opt, "--exact") == 0 ? &c->attn.exact : &c->attn.only) = val;
        return ERR_OK;
    }
    if (strcmp(opt, "--fa3-block") == 0 || strcmp(opt, "--fa3-hadamard") == 0) {
        if (strcmp(val, "yes") != 0 && strcmp(val, "no") != 0)
            return err_set(e, ERR_USAGE, "%s: expected yes or no, got '%s'", opt, val);
        *(strcmp(opt, "--fa3-block") == 0 ? &c->attn.fa3_block : &c->attn.fa3_hadamard) = strcmp(val, "yes") == 0;
        return ERR_OK;
    }
    if (strcmp(opt, "--attribute") == 0) {
        if (strcmp(val, "yes") != 0 && strcmp(val, "no") != 0)
            return err_set(e, ERR_USAGE, "--attribute: expected yes or no, got '%s'", val);
        c->attribute = strcmp(val, "yes") == 0;
        return ERR_OK;
    }
    if (strcmp(opt, "--load") == 0) {
        c->load_dir = val;
        return ERR_OK;
    }
    if (strcmp(opt, "--dump") == 0) {
        c->dump_dir = val;
        return ERR_OK;
    }
    if (strcmp(opt, "--csv") == 0) {
        c->csv_path = val;
        return ERR_OK;
    }
    if (strcmp(opt, "--format") == 0)
        return opts_parse_format(opt, val, &c->out, e);
    return err_set(e, ERR_USAGE, "run: unknown option '%s' (see 'amla-lab run --help')", opt);
}

