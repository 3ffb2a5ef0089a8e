// libFuzzer's driver, for a program that has a `main` of its own (a Swift executable does).
// Linked from libFuzzer's runtime, which `-sanitize=fuzzer` adds.
#ifndef SLUICE_CLIBFUZZER_H
#define SLUICE_CLIBFUZZER_H

#include <stddef.h>
#include <stdint.h>

/// Parses libFuzzer's command line (`argc`, `argv`) and runs `callback` on the inputs it makes;
/// returns the process's exit status.
int LLVMFuzzerRunDriver(int *argc, char ***argv,
                        int (*callback)(const uint8_t *data, size_t size));

#endif
