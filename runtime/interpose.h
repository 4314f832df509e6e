// A libc function the runtime replaces for the program: exported from libshapetrace-rt.so
// (exports.map lists each), which the program links before libc, so its calls reach ours first.
#pragma once

#define SHAPETRACE_INTERPOSE extern "C" __attribute__((visibility("default")))
