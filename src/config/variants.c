/* variants -- the --variants list: names, specs as given, golden, duplicates */
#include "config/opts.h"

#include <stdlib.h>
#include <string.h>

int opts_parse_variants(run_cfg_t *c, const char *s, err_t *e)
{
    c->nvariants = 0;
    c->show_golden = 0;
    int ngolden = 0;
    const char *p = s;
    if (*p && s[strlen(s) - 1] == ',')
        return err_set(e, ERR_USAGE, "--variants: an empty entry at the end of '%s'", s);
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
