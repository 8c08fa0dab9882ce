/*
 * libFuzzer entry for the workload reader (the mrc format and Chakra
 * traces as JSON): no crash, leak or hang on any input, and a refusal
 * leaves no object and says why. Built with `make fuzz` (clang).
 */
#include <stdint.h>
#include <stdlib.h>

#include "mrc/mrc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mrc_workload_t *w = NULL;
    if (mrc_workload_parse((const char *)data, size, "fuzz", &w) != MRC_OK) {
        if (w != NULL || mrc_last_error()[0] == '\0')
            abort();
        return 0;
    }
    mrc_workload_destroy(w);
    return 0;
}
