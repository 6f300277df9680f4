/* fuzz.h -- what every libFuzzer harness of amla-lab declares */
#ifndef AMLA_FUZZ_H
#define AMLA_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
