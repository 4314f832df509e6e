// Tail calls: at -O2 `return next(x)` is a jump, so the caller's exit is recorded before the
// callee's enter (as XRay does); at -O0 there is no tail call and the callee nests. The jump
// survives instrumentation, including through the shared return block -O2 makes of
// `n == 0 ? 1 : is_odd(n - 1)`: 200000 mutually recursive tail calls run on a thread with a
// 64 KiB stack, which 200000 real frames (at least 3 MB) would overflow.
// RUN: %shapetrace_cc -O0 -pthread %s -o %t.O0
// RUN: %shapetrace_dump -o %t.O0.events -- %t.O0 3
// RUN: FileCheck %s --check-prefix=O0 --input-file %t.O0.events --match-full-lines --strict-whitespace
// RUN: %shapetrace_cc -O2 -pthread %s -o %t.O2
// RUN: %shapetrace_dump -o %t.O2.events -- %t.O2 3
// RUN: FileCheck %s --check-prefix=O2 --input-file %t.O2.events --match-full-lines --strict-whitespace
// RUN: %shapetrace_dump --balance -o %t.deep -- %t.O2 200000
// RUN: FileCheck %s --check-prefix=DEEP --input-file %t.deep

// O0:exit status 0
// O0-NEXT:thread main
// O0-NEXT:  enter main
// O0-NEXT:    enter run
// O0-NEXT:      enter is_even
// O0-NEXT:        enter is_odd
// O0-NEXT:          enter is_even
// O0-NEXT:            enter is_odd
// O0-NEXT:            exit is_odd
// O0-NEXT:          exit is_even
// O0-NEXT:        exit is_odd
// O0-NEXT:      exit is_even
// O0-NEXT:    exit run
// O0-NEXT:  exit main
// O0-NOT:{{.}}

// O2:exit status 0
// O2-NEXT:thread main
// O2-NEXT:  enter main
// O2-NEXT:    enter run
// O2-NEXT:      enter is_even
// O2-NEXT:      exit is_even
// O2-NEXT:      enter is_odd
// O2-NEXT:      exit is_odd
// O2-NEXT:      enter is_even
// O2-NEXT:      exit is_even
// O2-NEXT:      enter is_odd
// O2-NEXT:      exit is_odd
// O2-NEXT:    exit run
// O2-NEXT:  exit main
// O2-NOT:{{.}}

// DEEP: exit status 0
// DEEP-NEXT: thread main: 1 enters, 1 exits, 0 unwind exits, 0 abandoned exits, balanced
// DEEP-NEXT: thread {{.+}}: 200002 enters, 200002 exits, 0 unwind exits, 0 abandoned exits, balanced

#include <pthread.h>
#include <stdlib.h>

int is_odd(unsigned n);
__attribute__((noinline)) int is_even(unsigned n) { return n == 0 ? 1 : is_odd(n - 1); }
__attribute__((noinline)) int is_odd(unsigned n) { return n == 0 ? 0 : is_even(n - 1); }

static unsigned depth;
static int correct;

__attribute__((noinline)) void *run(void *unused) {
  (void)unused;
  correct = (is_even(depth) == 0) == (int)(depth % 2);
  return 0;
}

int main(int argc, char **argv) {
  depth = (unsigned)atoi(argv[1]);
  if (depth < 1000) { // the sequence tests: on the main thread
    run(0);
    return !correct;
  }
  pthread_attr_t small_stack;
  pthread_attr_init(&small_stack);
  pthread_attr_setstacksize(&small_stack, 64 * 1024);
  pthread_t thread;
  if (pthread_create(&thread, &small_stack, run, 0) != 0)
    return 2;
  pthread_join(thread, 0);
  return !correct;
}
