/* t-opts -- the option table: the defaults DESIGN.md fixes, every option in --help, where each
 * may be given (variant specs, experiment files), flags, ranges */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config/opts.h"
#include "sweep/sweep.h"

int main(void)
{
    run_cfg_t *c = malloc(sizeof *c);
    err_t e = {0};
    run_cfg_default(c);
    /* the defaults as DESIGN.md states them (run options, defaults in brackets) */
    CHECK(c->shape.sk == 8192 && c->shape.hq == 128 && c->shape.sq == 1 && c->shape.dk == 576 && c->shape.dv == 512,
          "shape defaults");
    CHECK(c->shape.hkv == 1 && !c->shape.causal && !c->gen.kv_separate, "kv defaults");
    CHECK(c->gen.dist == GEN_NORMAL && c->gen.mean == 0 && c->gen.sigma == 1 && c->gen.low == -1 && c->gen.high == 1,
          "distribution defaults");
    CHECK(c->attn.in_format == FMT_BF16 && c->attn.out_format == FMT_BF16 && c->gen.in_format == FMT_BF16, "formats");
    CHECK(c->attn.block == 512 && c->samples == 10 && c->seed == 1 && c->threads == 0 && c->out == RUN_OUT_TABLE,
          "block, samples, seed, threads, format");
    CHECK(c->attn.acc_qk == ACC_FP32_FMA && c->attn.acc_pv == ACC_FP32_FMA, "accumulation");
    /* one row per seed paper's algorithm beside the non-flash standard (issue 30) */
    static const char *const lineup[] = {"standard", "base", "amla", "flashmla", "snapmla", "etap"};
    int same = c->show_golden && c->nvariants == 6;
    for (int i = 0; same && i < 6; i++)
        same = strcmp(c->vspec[i], lineup[i]) == 0;
    CHECK(same, "variants golden,standard,base,amla,flashmla,snapmla,etap");
    CHECK(c->attn.amla_form == ATTN_AMLA_CANN && c->attn.fa3_block && c->attn.fa3_hadamard && !c->attribute,
          "amla-form cann, fa3 on, no attribution");
    CHECK(c->attn.scale == 0 && !c->attn.exact && !c->attn.only && !c->load_dir, "unset options stay unset");

    /* every option is in --help, with its default where it has one */
    char *help = NULL;
    size_t hn = 0;
    FILE *m = open_memstream(&help, &hn);
    opts_write_help(m);
    fclose(m);
    for (const opts_def_t *d = opts_table; d->name; d++) {
        char want[128];
        snprintf(want, sizeof want, "--%s", d->name);
        CHECK(strstr(help, want) != NULL, "--help lacks %s", want);
        if (d->def && d->arg) {
            snprintf(want, sizeof want, "[%s]", d->def);
            CHECK(strstr(help, want) != NULL, "--help lacks %s's default %s", d->name, want);
        }
    }
    free(help);

    /* where options may be given: a variant spec takes only OPTS_VARIANT ones */
    for (const opts_def_t *d = opts_table; d->name; d++) {
        run_cfg_default(c);
        c->shape = (attn_shape_t){2, 1, 1, 64, 32, 16, 0};
        c->samples = 1;
        char spec[128];
        const char *val = d->def                              ? d->def
                          : d->arg && strstr(d->arg, "SITE")  ? "out_cast"
                          : d->arg && strstr(d->arg, "MODEL") ? "tc-hopper"
                                                              : "2";
        /* on a variant that reads it (a setting on one that does not is refused: tested in test_bad_input.py) */
        const char *readers = opts_variant_readers(d->name);
        int vl = readers ? (int)strcspn(readers, ",") : 4;
        snprintf(spec, sizeof spec, "%.*s:%s=%s", vl, readers ? readers : "base", d->name, val);
        e = (err_t){0};
        int rc = opts_set(c, "variants", spec, &e);
        if (!rc)
            rc = run_validate(c, &e);
        CHECK((rc == ERR_OK) == ((d->where & OPTS_VARIANT) != 0), "variant setting %s: rc %d (%s)", spec, rc, e.msg);
    }
    /* experiment files refuse the options the sweep sets itself */
    for (const opts_def_t *d = opts_table; d->name; d++) {
        char text[256];
        snprintf(text, sizeof text, "name t\nset ctx 64\nset heads 2\nset dk 32\nset dv 16\nset samples 1\nset %s %s\n",
                 d->name, d->def ? d->def : "2");
        e = (err_t){0};
        int rc = sweep_check_text("t.exp", text, strlen(text), &e);
        if (d->where & OPTS_NOT_IN_EXPERIMENTS)
            CHECK(rc == ERR_USAGE && strstr(e.msg, "cannot be set"), "experiment accepted set %s", d->name);
    }
    /* flags take yes|no outside the command line; ranges are enforced */
    run_cfg_default(c);
    CHECK(opts_set(c, "causal", "yes", &e) == ERR_OK && c->shape.causal, "causal yes");
    e = (err_t){0};
    CHECK(opts_set(c, "causal", "maybe", &e) == ERR_USAGE, "causal maybe accepted");
    static const char *const refused[][2] = {{"threads", "0"},   {"threads", "1025"}, {"ctx", "0"},
                                             {"sigma", "-1"},    {"seed", "-1"},      {"layer-profile", "9"},
                                             {"outlier-rate", "2"}, {"scale", "1e39"}, {"only", ""},
                                             {"exact", "a,,b"},  {"format", "xml"},   {"warp", "1"}};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        e = (err_t){0};
        CHECK(opts_set(c, refused[i][0], refused[i][1], &e) == ERR_USAGE && strstr(e.msg, refused[i][0]),
              "--%s %s: rc, message '%s'", refused[i][0], refused[i][1], e.msg);
    }
    free(c);
    return check_done("t-opts");
}
