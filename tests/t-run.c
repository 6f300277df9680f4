/* t-run -- results are bit-identical for any thread count */
#include <string.h>

#include "check.h"
#include "run/run.h"

int main(void)
{
    run_cfg_t c;
    run_cfg_default(&c);
    c.shape = (attn_shape_t){16, 1, 1, 700, 64, 32, 0};
    c.attn.block = 64;
    c.samples = 6;
    c.seed = 11;
    err_t e = {0};
    if (run_validate(&c, &e) != 0) {
        CHECK(0, "validate: %s", e.msg);
        return check_done("t-run");
    }
    run_result_t r1, r2, r3;
    c.threads = 1;
    CHECK(run_execute(&r1, &c, &e) == 0, "run 1 thread");
    c.threads = 2;
    CHECK(run_execute(&r2, &c, &e) == 0, "run 2 threads");
    c.threads = 3;
    CHECK(run_execute(&r3, &c, &e) == 0, "run 3 threads");
    long n = c.samples * r1.nvariants;
    for (long i = 0; i < n; i++) {
        CHECK(memcmp(r1.rows[i].m, r2.rows[i].m, sizeof r1.rows[i].m) == 0, "row %ld differs 1 vs 2 threads", i);
        CHECK(memcmp(r1.rows[i].m, r3.rows[i].m, sizeof r1.rows[i].m) == 0, "row %ld differs 1 vs 3 threads", i);
    }
    /* samples differ from each other (the streams are per sample) */
    CHECK(r1.rows[1 * r1.nvariants + 2].m[METRIC_REL_FRO] != r1.rows[2 * r1.nvariants + 2].m[METRIC_REL_FRO],
          "samples 1 and 2 give the same error");
    run_result_free(&r1);
    run_result_free(&r2);
    run_result_free(&r3);
    return check_done("t-run");
}
