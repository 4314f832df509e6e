// A module's code can run before the module's own constructor: here a library's constructor calls
// into the executable, whose constructors run last. The runtime registers every module of the
// objects loaded with it at its own start (through the pass's ELF note, .note.shapetrace), so
// the executable's function is named like every other, never an unregistered id.
// RUN: %shapetrace_cc -O1 -shared -fPIC %S/Inputs/early_lib.c -o %t.lib.so
// RUN: %shapetrace_cc -O1 %s %t.lib.so -o %t
// RUN: readelf -n %t | FileCheck %s --check-prefix=NOTE
// Linkers keep the note when they collect unused sections (nothing refers to it).
// RUN: %shapetrace_cc -O1 -ffunction-sections -fdata-sections -Wl,--gc-sections %s %t.lib.so -o %t.gc
// RUN: readelf -n %t.gc | FileCheck %s --check-prefix=NOTE
// RUN: %shapetrace_dump -o %t.events -- %t
// RUN: FileCheck %s --input-file %t.events --match-full-lines --strict-whitespace

// NOTE: shapetrace 0x00000004

// CHECK:exit status 0
// CHECK-NEXT:thread main
// CHECK-NEXT:  enter lib_init
// CHECK-NEXT:    enter lib_setup
// CHECK-NEXT:      enter exe_callback
// CHECK-NEXT:      exit exe_callback
// CHECK-NEXT:    exit lib_setup
// CHECK-NEXT:  exit lib_init
// CHECK-NEXT:  enter main
// CHECK-NEXT:  exit main
// CHECK-NOT:{{.}}

static volatile int calls;

__attribute__((noinline)) void exe_callback(int x) { calls += x; }

int main(void) { return calls == 1 ? 0 : 1; }
