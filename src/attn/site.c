/* site -- resolving and describing named rounding sites */
#include "attn/site.h"

#include <stdio.h>
#include <string.h>

int site_listed(const char *list, const char *name)
{
    if (!list)
        return 0;
    size_t n = strlen(name);
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if ((len == n && strncmp(p, name, n) == 0) || (len == 3 && strncmp(p, "all", 3) == 0))
            return 1;
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}

int site_check_list(const char *list, const site_def_t *defs, const char *variant, const char *opt, err_t *e)
{
    if (!list)
        return ERR_OK;
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        int found = len == 3 && strncmp(p, "all", 3) == 0;
        for (const site_def_t *d = defs; d->name && !found; d++)
            found = strlen(d->name) == len && strncmp(p, d->name, len) == 0;
        if (!found)
            return err_set(e, ERR_USAGE, "%s: variant '%s' has no site '%.*s' (see 'amla-lab list --sites %s')",
                           opt, variant, (int)len, p, variant);
        if (!end)
            break;
        p = end + 1;
    }
    return ERR_OK;
}

void site_describe(char *buf, int n, const site_t *s)
{
    if (site_is_acc(s->def))
        snprintf(buf, (size_t)n, "%-12s %-44s acc %s%s", s->def->name, s->def->what,
                 acc_table[s->acc].name, s->exact ? " (exact: fp64)" : "");
    else
        snprintf(buf, (size_t)n, "%-12s %-44s %s %s%s%s", s->def->name, s->def->what,
                 fmt_table[s->fmt].name, fmt_round_names[s->mode], s->sat ? " satfinite" : "",
                 s->exact ? " (exact: fp64)" : "");
}
