/* vsettings -- each variant's own settings (NAME:KEY=VALUE...): the run's arithmetic with the spec's keys set
 * through the option table */
#include "config/opts.h"

#include <stdlib.h>
#include <string.h>

/* The settings only some variants read, and those variants (the files that read the field: src/attn/variants/):
 * on any other a setting changes nothing, and its CSV row would claim an arithmetic that did not run. */
#define VSET_SPLIT_KV "flashmla,flashmla-etap,flashmla-sparse,fa2,fa3,flashmla-dense-fp8,triton-mla"
static const struct {
    const char *key, *readers;
} vsettings_readers[] = {
    {"split-k", "sdpa-math"},
    {"amla-form", "amla,amla-nocomp,amla-premul"},
    {"row-block", "fastattn,fastattn-fp16acc"},
    {"sub-block", "fastattn,fastattn-fp16acc"},
    {"fa3-block", "fa3-fp8"},
    {"fa3-hadamard", "fa3-fp8"},
    {"sm-count", VSET_SPLIT_KV},
    {"sm-parts", VSET_SPLIT_KV},
    {"fa3-varlen", "fa3"},
    {"page-size", "fa3"},
    {"flashmla-sched", "flashmla"},
    {"triton-decode", "triton-mla"},
    {"build", ATTN_BUILD_VARIANTS},
};

const char *opts_variant_readers(const char *key)
{
    for (size_t i = 0; i < sizeof vsettings_readers / sizeof vsettings_readers[0]; i++)
        if (strcmp(vsettings_readers[i].key, key) == 0)
            return vsettings_readers[i].readers;
    return NULL;
}

static int vsettings_in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p; p = strchr(p, ','), p = p ? p + 1 : NULL)
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == 0))
            return 1;
    return 0;
}

int opts_variant_cfg(run_cfg_t *c, int v, run_cfg_t *scratch, err_t *e)
{
    const char *spec = c->vspec[v];
    const char *p = strchr(spec, ':');
    if (!p) {
        c->vcfg[v] = c->attn;
        return ERR_OK;
    }
    /* the settings a variant may carry write only attn fields: the scratch needs only those */
    run_cfg_t *c2 = scratch;
    c2->attn = c->attn;
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
        const opts_def_t *od = opts_find(keys[i]);
        if (!od || !(od->where & OPTS_VARIANT)) {
            rc = err_set(e, ERR_USAGE, "variant '%s': '%s' cannot be set per variant", spec, keys[i]);
            break;
        }
        for (int j = 0; j < i && !rc; j++)
            if (strcmp(keys[j], keys[i]) == 0)
                rc = err_set(e, ERR_USAGE, "variant '%s': '%s' is set twice", spec, keys[i]);
        const char *readers = opts_variant_readers(keys[i]), *name = attn_variants[c->variants[v]].name;
        if (!rc && readers && !vsettings_in_list(readers, name))
            rc = err_set(e, ERR_USAGE, "variant '%s': %s reads no '%s' (%s %s)", spec, name, keys[i],
                         strchr(readers, ',') ? "these do:" : "only", readers);
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
    return rc;
}

