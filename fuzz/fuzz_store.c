/* fuzz_store -- libFuzzer target: the sample-store reader of a resumed sweep keeps only whole,
 * checksummed records of the right shape; whatever it keeps is a prefix of the input */
#include <stdlib.h>

#include "fuzz.h"
#include "sweep/sweep.h"

/* The experiment the store belongs to: 2 grid points x 2 samples x (golden, base). */
static const char FUZZ_EXP[] = "name f\nset ctx 64\nset heads 2\nset dk 32\nset dv 16\nset samples 2\n"
                               "set variants golden,base\ngrid sigma 1 2\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sweep_store_reader_t *r;
    err_t e = {0};
    if (!r && !(r = sweep_store_reader(FUZZ_EXP, sizeof FUZZ_EXP - 1, &e)))
        abort();
    long valid;
    int damaged;
    long n = sweep_store_read(r, (const char *)data, size, &valid, &damaged);
    if (n < 0 || valid < 0 || (size_t)valid > size || (!damaged && (size_t)valid != size))
        abort(); /* the reader's contract: a valid prefix, all of it unless damaged */
    return 0;
}
