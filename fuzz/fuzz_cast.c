/* fuzz_cast -- libFuzzer target: `amla-lab cast`'s input stream (any bytes), as numbers or,
 * with the first byte's low bit, as binary32 bit patterns; rounded or refused, never a crash */
#include <stdio.h>

#include "num/fmt/cast.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    if (size < 3)
        return 0;
    FILE *in = fmemopen((void *)(data + 2), size - 2, "r");
    if (!in)
        return 0;
    fmt_rng_t rng;
    fmt_rng_seed(&rng, 1);
    fmt_id_t to = (fmt_id_t)(data[1] % FMT_COUNT);
    err_t e = {0};
    if (to != FMT_FP64)
        cast_stream(in, sink, to, (fmt_round_t)((data[0] >> 1) % FMT_ROUND_COUNT), (data[0] >> 5) & 1, data[0] & 1,
                    &rng, &e);
    fclose(in);
    return 0;
}
