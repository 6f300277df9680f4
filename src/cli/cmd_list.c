/* cmd_list -- `amla-lab list`: variants, formats, modes, distributions, models, sites */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "config/opts.h"
#include "attn/attn.h"
#include "config/config.h"
#include "data/gen.h"
#include "num/acc/acc.h"
#include "num/fmt/fmt.h"
#include "ref/golden.h"
#include "run/metric.h"

static const char LIST_USAGE[] =
    "usage: amla-lab list [--sites VARIANT | --options [text|md|man]]\n"
    "Prints what the lab knows by name, one per line with a summary: the variants (for --variants,\n"
    "check's --candidates and experiment files), the number formats and the other names they go\n"
    "by (--in-format, --out-format, cast --to), the rounding modes, the input distributions\n"
    "(--dist), the accumulation models (--acc, --acc-qk, --acc-pv) and the metrics (the CSV's\n"
    "columns). --sites VARIANT: the variant's rounding sites in the order it meets them, each with\n"
    "its format and what it rounds (the names --exact and --only take). --options [text|md|man]:\n"
    "every run option with its value, default and meaning (run --help's table; md and man are the\n"
    "README's and the man page's copies of it).\n";


int cmd_list(int argc, char **argv)
{
    if (argc == 1 && strcmp(argv[0], "--help") == 0) {
        fputs(LIST_USAGE, stdout);
        return cli_finish_stdout(0);
    }
    if (argc == 2 && strcmp(argv[0], "--sites") == 0) {
        int vi = attn_find(argv[1]);
        if (vi < 0)
            return cli_usage_error("list --sites: unknown variant '%s'%s", argv[1], "");
        run_cfg_t c;
        run_cfg_default(&c);
        attn_stats_t st;
        attn_ctx_t ctx;
        err_t e = {0};
        attn_ctx_init(&ctx, vi, &c.attn, &st, &e);
        printf("# sites of %s (with the defaults: --in-format %s --out-format %s --acc %s)\n", argv[1],
               fmt_table[c.attn.in_format].name, fmt_table[c.attn.out_format].name,
               acc_table[c.attn.acc_qk].name);
        for (int i = 0; i < ctx.nsites; i++) {
            char buf[256];
            site_describe(buf, sizeof buf, &ctx.site[i]);
            printf("%s\n", buf);
        }
        return cli_finish_stdout(0);
    }
    if (argc <= 2 && argc >= 1 && strcmp(argv[0], "--options") == 0) {
        const char *form = argc == 2 ? argv[1] : "text";
        if (strcmp(form, "text") == 0)
            opts_write_help(stdout);
        else if (strcmp(form, "md") == 0 || strcmp(form, "man") == 0)
            opts_write_doc(stdout, form[1] == 'd' ? OPTS_DOC_MD : OPTS_DOC_MAN);
        else
            return cli_usage_error("list --options: FORM must be text, md or man, got '%s'%s", form, "");
        return cli_finish_stdout(0);
    }
    if (argc != 0)
        return cli_usage_error("list: unexpected argument '%s'%s", argv[0], " (see 'amla-lab list --help')");
    printf("variants:\n  %-18s %s\n", "golden", GOLDEN_SUMMARY);
    for (int i = 0; i < attn_variant_count; i++)
        printf("  %-18s %s\n", attn_variants[i].name, attn_variants[i].summary);
    printf("formats:\n");
    for (int i = 0; i < FMT_COUNT; i++)
        printf("  %-18s %s%s%s%s\n", fmt_table[i].name, fmt_table[i].summary, fmt_alias_list((fmt_id_t)i)[0] ? " (also: " : "",
               fmt_alias_list((fmt_id_t)i), fmt_alias_list((fmt_id_t)i)[0] ? ")" : "");
    printf("rounding modes:\n");
    for (int i = 0; i < FMT_ROUND_COUNT; i++)
        printf("  %-18s %s\n", fmt_round_names[i], fmt_round_summaries[i]);
    printf("distributions:\n");
    for (int i = 0; i < GEN_COUNT; i++)
        printf("  %-18s %s\n", gen_table[i].name, gen_table[i].summary);
    printf("accumulation models (default for both products: fp32-fma):\n");
    for (int i = 0; i < ACC_COUNT; i++)
        printf("  %-18s %s\n", acc_table[i].name, acc_table[i].summary);
    printf("metrics:\n");
    for (int i = 0; i < METRIC_COUNT; i++)
        printf("  %s\n", metric_names[i]);
    return cli_finish_stdout(0);
}

