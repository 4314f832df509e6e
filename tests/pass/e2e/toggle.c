// Recording switched off and on at run time (shapetrace_set_enabled): each frame reads the flag
// once at its entry (which body runs, or the value its hooks test), and its exit is recorded
// exactly when its entry was. Calls entered while off are absent with both hooks, even when
// recording comes back on inside them; calls entered while on keep their exit, even when
// recording is off by the time they return. Every thread stays
// balanced, whatever the order of the switches.
// RUN: %shapetrace_cc -O2 %s -o %t
// RUN: %shapetrace_dump -o %t.events -- %t
// RUN: FileCheck %s --input-file %t.events --match-full-lines --strict-whitespace
// RUN: env SHAPETRACE_ENABLED=0 %shapetrace_dump -o %t.off.events -- %t
// RUN: FileCheck %s --check-prefix=OFF --input-file %t.off.events --match-full-lines --strict-whitespace
// The same with one body (each hook behind the entry's test) instead of two (the default):
// RUN: env SHAPETRACE_PASS_DETACHED=gate %shapetrace_cc -O2 %s -o %t.gate
// RUN: %shapetrace_dump -o %t.gate.events -- %t.gate
// RUN: FileCheck %s --input-file %t.gate.events --match-full-lines --strict-whitespace
// RUN: env SHAPETRACE_ENABLED=0 %shapetrace_dump -o %t.gate.off.events -- %t.gate
// RUN: FileCheck %s --check-prefix=OFF --input-file %t.gate.off.events --match-full-lines --strict-whitespace

// CHECK:exit status 0
// CHECK-NEXT:thread main
// CHECK-NEXT:  enter main
// CHECK-NEXT:    enter work
// CHECK-NEXT:    exit work
// CHECK-NEXT:    enter switch_off_inside
// CHECK-NEXT:      enter work
// CHECK-NEXT:      exit work
// CHECK-NEXT:    exit switch_off_inside
// CHECK-NEXT:    enter work
// CHECK-NEXT:    exit work
// CHECK-NEXT:    enter work
// CHECK-NEXT:    exit work
// CHECK-NEXT:  exit main
// CHECK-NOT:{{.}}

// Started off (SHAPETRACE_ENABLED=0): main and switch_on_inside are never recorded, the two
// work() calls after the switch are, as top-level calls of the thread.
// OFF:exit status 0
// OFF-NEXT:thread main
// OFF-NEXT:  enter work
// OFF-NEXT:  exit work
// OFF-NEXT:  enter work
// OFF-NEXT:  exit work
// OFF-NOT:{{.}}

#include <shapetrace/shapetrace.h>

static volatile int sink;

__attribute__((noinline)) void work(void) { sink = sink + 1; }

// Entered while on, returns while off: its exit is still recorded; the second work() is not.
__attribute__((noinline)) void switch_off_inside(void) {
  work();
  shapetrace_set_enabled(0);
  work();
}

// Entered while off: neither its enter nor its exit, but the work() after the switch is.
__attribute__((noinline)) void switch_on_inside(void) {
  shapetrace_set_enabled(1);
  work();
}

int main(void) {
  work();
  switch_off_inside();
  switch_on_inside();
  work();
  return 0;
}
