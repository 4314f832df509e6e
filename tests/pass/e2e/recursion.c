// Recursion: every recorded call has its enter and its exit, nested. fib(3) calls fib(2), which
// calls fib(1) and fib(0), then fib(1). At -O2 the default (after-inlining) mode records what
// runs: tail-recursion elimination has turned the second recursive call into a loop, so only
// the first one is a call. Before-inlining mode records the source-level calls at -O2 too.
// RUN: %shapetrace_cc -O0 %s -o %t.O0
// RUN: %shapetrace_dump -o %t.O0.events -- %t.O0
// RUN: FileCheck %s --check-prefix=SOURCE --input-file %t.O0.events --match-full-lines --strict-whitespace
// RUN: %shapetrace_cc -O2 %s -o %t.O2
// RUN: %shapetrace_dump -o %t.O2.events -- %t.O2
// RUN: FileCheck %s --check-prefix=O2 --input-file %t.O2.events --match-full-lines --strict-whitespace
// RUN: env SHAPETRACE_PASS_MODE=before-inlining %shapetrace_cc -O2 %s -o %t.O2.source
// RUN: %shapetrace_dump -o %t.O2.source.events -- %t.O2.source
// RUN: FileCheck %s --check-prefix=SOURCE --input-file %t.O2.source.events --match-full-lines --strict-whitespace

// SOURCE:exit status 0
// SOURCE-NEXT:thread main
// SOURCE-NEXT:  enter main
// SOURCE-NEXT:    enter fib
// SOURCE-NEXT:      enter fib
// SOURCE-NEXT:        enter fib
// SOURCE-NEXT:        exit fib
// SOURCE-NEXT:        enter fib
// SOURCE-NEXT:        exit fib
// SOURCE-NEXT:      exit fib
// SOURCE-NEXT:      enter fib
// SOURCE-NEXT:      exit fib
// SOURCE-NEXT:    exit fib
// SOURCE-NEXT:  exit main
// SOURCE-NOT:{{.}}

// O2:exit status 0
// O2-NEXT:thread main
// O2-NEXT:  enter main
// O2-NEXT:    enter fib
// O2-NEXT:      enter fib
// O2-NEXT:        enter fib
// O2-NEXT:        exit fib
// O2-NEXT:      exit fib
// O2-NEXT:    exit fib
// O2-NEXT:  exit main
// O2-NOT:{{.}}

__attribute__((noinline)) int fib(int n) {
  if (n < 2)
    return n;
  return fib(n - 1) + fib(n - 2);
}

int main(void) {
  // volatile: -O2 must not fold fib(3) into a constant.
  volatile int n = 3;
  return fib(n) == 2 ? 0 : 1;
}
