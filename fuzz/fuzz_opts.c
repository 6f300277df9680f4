/* fuzz_opts -- libFuzzer target: `run` options and values (lines: OPTION, VALUE, OPTION, ...)
 * applied in order and the configuration validated: accepted or refused, never a crash */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "config/opts.h"
#include "run/run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    run_cfg_t *c = fuzz_small_cfg();
    err_t e = {0};
    char *save = NULL, *opt = strtok_r(text, "\n", &save);
    int rc = ERR_OK;
    while (opt && !rc) {
        char *val = strtok_r(NULL, "\n", &save);
        if (!val || strcmp(opt, "--load") == 0 || strcmp(opt, "--dump") == 0 || strcmp(opt, "--csv") == 0)
            break; /* paths: fuzz_load's business */
        rc = opts_run_option(c, opt, val, &e);
        opt = strtok_r(NULL, "\n", &save);
    }
    if (!rc)
        run_validate(c, &e);
    free(c);
    free(text);
    return 0;
}
