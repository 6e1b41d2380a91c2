#include "CLibFuzzer.h"

#include <stdio.h>
#include <stdlib.h>

// -sanitize=fuzzer links libFuzzer whole, and its own main refers to this function. SwiftPM
// points the program's entry at the driver's Swift main instead, so this is never called;
// it exists only so the link succeeds, and says so if it ever runs.
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    (void)data;
    (void)size;
    fputs("mediaengine-fuzz: libFuzzer's own main ran; start the program through its Swift main\n", stderr);
    abort();
}
