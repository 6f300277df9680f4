/* opts_doc -- the option table written for the man page and docs/USAGE.md */
#include "config/opts.h"

#include <stdio.h>

/* Text as troff takes it: a backslash doubled, '-' as \- (a hyphen, not a minus, is what one types). */
static void opts_troff(FILE *f, const char *s)
{
    for (; *s; s++)
        if (*s == '\\')
            fputs("\\e", f);
        else if (*s == '-')
            fputs("\\-", f);
        else
            fputc(*s, f);
}

/* Text in a Markdown table cell: '|' escaped. */
static void opts_md(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputc('\\', f);
        fputc(*s, f);
    }
}

/* The option table for the man page (troff) or docs/USAGE.md (a Markdown table): the same names,
 * values, defaults and help as run --help, so the three cannot disagree. */
void opts_write_doc(FILE *f, opts_doc_t form)
{
    if (form == OPTS_DOC_MD)
        fputs("| option | default | meaning |\n| --- | --- | --- |\n", f);
    for (const opts_def_t *d = opts_table; d->name; d++) {
        const char *def = d->where & OPTS_FLAG ? "off" : d->def ? d->def : d->shown;
        if (form == OPTS_DOC_MD) {
            fprintf(f, "| `--%s", d->name);
            if (d->arg) {
                fputc(' ', f);
                opts_md(f, d->arg);
            }
            fputs("` | ", f);
            if (def)
                opts_md(f, def);
            fputs(" | ", f);
            opts_md(f, d->help);
            fputs(d->where & OPTS_VARIANT ? " (also per variant)" : "", f);
            fputs(" |\n", f);
        } else {
            fputs(".TP\n.B \\-\\-", f);
            opts_troff(f, d->name);
            if (d->arg) {
                fputs(" \\fI", f);
                opts_troff(f, d->arg);
                fputs("\\fR", f);
            }
            fputc('\n', f);
            opts_troff(f, d->help);
            if (def) {
                fputs(" [default: ", f);
                opts_troff(f, def);
                fputc(']', f);
            }
            fputs(d->where & OPTS_VARIANT ? " (also per variant)" : "", f);
            fputs(".\n", f);
        }
    }
}
