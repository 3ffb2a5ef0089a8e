// The declaration is all this module provides (see include/CLibFuzzer.h); SwiftPM wants a
// source file in a C target.
#include "CLibFuzzer.h"
