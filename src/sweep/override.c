/* override -- `sweep --samples N --set OPTION=VALUE`: an experiment file's text with its overrides applied, each
 * override checked against the option table first */
#include "sweep/sweep_int.h"

#include <stdlib.h>
#include <string.h>

#include "config/opts.h"

char *sweep_override_text(const char *text, size_t len, const sweep_overrides_t *ov, size_t *out_len, err_t *e)
{
    size_t cap = len + 256 + (size_t)ov->nsets * 320;
    char *out = err_malloc(cap, 1), note[1024] = "note quick run (sweep";
    size_t n = 0;
    for (int i = 0; i < ov->nsets; i++) {
        const char *eq = strchr(ov->sets[i], '=');
        if (!eq || eq == ov->sets[i] || !eq[1] || strlen(ov->sets[i]) > 256 || strpbrk(ov->sets[i], "\n\r#")) {
            free(out);
            return err_set(e, ERR_USAGE, "--set %s: need OPTION=VALUE (an `amla-lab run` option without its dashes)",
                           ov->sets[i]), NULL;
        }
        /* the option and its value checked here, where the error names --set, not a line the file lacks */
        char name[260];
        snprintf(name, sizeof name, "%.*s", (int)(eq - ov->sets[i]), ov->sets[i]);
        const opts_def_t *d = opts_find(name);
        run_cfg_t *scratch = err_malloc(1, sizeof *scratch);
        err_t se = {0};
        run_cfg_default(scratch);
        int bad = !d || (d->where & OPTS_NOT_IN_EXPERIMENTS) || opts_set(scratch, name, eq + 1, &se);
        free(scratch);
        if (bad)
            return free(out), err_set(e, ERR_USAGE, "--set %s: %s", ov->sets[i], !d ? "no such option (see 'amla-lab "
                   "run --help')" : d->where & OPTS_NOT_IN_EXPERIMENTS ? "not an option of experiment files" : se.msg),
                   NULL;
    }
    for (const char *p = text; p < text + len;) {
        const char *end = memchr(p, '\n', (size_t)(text + len - p));
        size_t l = end ? (size_t)(end - p) : (size_t)(text + len - p);
        const char *w = p;
        while (w < p + l && (*w == ' ' || *w == '\t'))
            w++;
        int drop = 0;
        if (l >= 5 && strncmp(w, "grid", 4) == 0 && (w[4] == ' ' || w[4] == '\t')) {
            const char *o = w + 4;
            while (*o == ' ' || *o == '\t')
                o++;
            size_t ol = strcspn(o, " \t\n");
            for (int i = 0; i < ov->nsets; i++) {
                size_t sl = (size_t)(strchr(ov->sets[i], '=') - ov->sets[i]);
                for (const char *q = o; q < o + ol;) { /* grid a,b,c: each of the options */
                    size_t ql = strcspn(q, ", \t\n");
                    if (ql == sl && strncmp(q, ov->sets[i], sl) == 0) {
                        free(out);
                        return err_set(e, ERR_USAGE, "--set %s: %.*s is a grid option of the experiment", ov->sets[i],
                                       (int)sl, q), NULL;
                    }
                    q += ql + (q[ql] == ',');
                }
            }
        }
        if (l >= 4 && strncmp(w, "set", 3) == 0 && (w[3] == ' ' || w[3] == '\t')) {
            const char *o = w + 3;
            while (*o == ' ' || *o == '\t')
                o++;
            size_t ol = strcspn(o, " \t\n");
            drop = ov->samples > 0 && ol == 7 && strncmp(o, "samples", 7) == 0;
            for (int i = 0; i < ov->nsets && !drop; i++)
                drop = (size_t)(strchr(ov->sets[i], '=') - ov->sets[i]) == ol && strncmp(o, ov->sets[i], ol) == 0;
        }
        if (!drop) {
            memcpy(out + n, p, l);
            n += l;
            out[n++] = '\n';
        }
        p += l + (end != NULL);
    }
    size_t nl = strlen(note);
    if (ov->samples > 0) {
        n += (size_t)snprintf(out + n, cap - n, "set samples %ld\n", ov->samples);
        nl += (size_t)snprintf(note + nl, sizeof note - nl, " --samples %ld", ov->samples);
    }
    for (int i = 0; i < ov->nsets; i++) {
        const char *eq = strchr(ov->sets[i], '=');
        n += (size_t)snprintf(out + n, cap - n, "set %.*s %s\n", (int)(eq - ov->sets[i]), ov->sets[i], eq + 1);
        if (nl < sizeof note)
            nl += (size_t)snprintf(note + nl, sizeof note - nl, " --set %s", ov->sets[i]);
    }
    n += (size_t)snprintf(out + n, cap - n, "%s): not the experiment as written\n", note);
    *out_len = n;
    return out;
}
