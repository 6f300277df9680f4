/* compare -- the metrics of one array against a reference, as a table, CSV or JSON */
#include "report/compare.h"

#include "report/json.h"

void report_compare(FILE *f, run_out_t out, const char *const paths[2], long n, const double m[METRIC_COUNT],
                    long ident)
{
    if (out == RUN_OUT_TABLE) {
        for (int k = 0; k < METRIC_COUNT; k++)
            fprintf(f, "%-10s %.17g\n", metric_names[k], m[k]);
        fprintf(f, "%-10s %ld of %ld\n", "identical", ident, n);
    } else if (out == RUN_OUT_CSV) {
        fprintf(f, "a,b,n");
        for (int k = 0; k < METRIC_COUNT; k++)
            fprintf(f, ",%s", metric_names[k]);
        fprintf(f, ",identical\n%s,%s,%ld", paths[0], paths[1], n);
        for (int k = 0; k < METRIC_COUNT; k++)
            fprintf(f, ",%.17g", m[k]);
        fprintf(f, ",%ld\n", ident);
    } else {
        fprintf(f, "{\"n\": %ld", n);
        for (int k = 0; k < METRIC_COUNT; k++) {
            fprintf(f, ", \"%s\": ", metric_names[k]);
            json_num(f, m[k]);
        }
        fprintf(f, ", \"identical\": %ld}\n", ident);
    }
}
