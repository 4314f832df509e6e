// An exception thrown through three frames: each frame records an unwind exit, innermost first,
// then the frame that catches it returns normally. The middle frame catches only int: the
// exception passes it without a match, which the unwinder does silently unless the landing pad
// is a cleanup (the pass makes it one). Destructors run during unwinding are traced inside the
// frame they belong to. Same sequence at -O0 and -O2 (everything is noinline).
// RUN: %shapetrace_cxx -O0 %s -o %t.O0
// RUN: %shapetrace_dump -o %t.O0.events -- %t.O0 | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --input-file %t.O0.events --match-full-lines --strict-whitespace
// RUN: %shapetrace_cxx -O2 %s -o %t.O2
// RUN: %shapetrace_dump -o %t.O2.events -- %t.O2 | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --input-file %t.O2.events --match-full-lines --strict-whitespace

// OUT: caught boom

// CHECK:exit status 0
// CHECK-NEXT:thread main
// CHECK-NEXT:  enter main
// CHECK-NEXT:    enter catcher()
// CHECK-NEXT:      enter outer()
// CHECK-NEXT:        enter Guard::Guard()
// CHECK-NEXT:        exit Guard::Guard()
// CHECK-NEXT:        enter middle()
// CHECK-NEXT:          enter thrower()
// CHECK-NEXT:          unwind thrower()
// CHECK-NEXT:        unwind middle()
// CHECK-NEXT:        enter Guard::~Guard()
// CHECK-NEXT:        exit Guard::~Guard()
// CHECK-NEXT:      unwind outer()
// CHECK-NEXT:      enter report(std::exception const&)
// CHECK-NEXT:      exit report(std::exception const&)
// CHECK-NEXT:    exit catcher()
// CHECK-NEXT:  exit main
// CHECK-NOT:{{.}}

#include <cstdio>
#include <stdexcept>

struct Guard {
  __attribute__((noinline)) Guard() { std::fflush(stdout); }
  __attribute__((noinline)) ~Guard() { std::fflush(stdout); }
};

__attribute__((noinline)) void thrower() { throw std::runtime_error("boom"); }

__attribute__((noinline)) void middle() {
  try {
    thrower();
  } catch (int) {
    std::puts("not an int");
  }
}

__attribute__((noinline)) void outer() {
  Guard guard;
  middle();
  std::puts("not reached");
}

__attribute__((noinline)) void report(const std::exception &e) { std::printf("caught %s\n", e.what()); }

__attribute__((noinline)) int catcher() {
  try {
    outer();
  } catch (const std::exception &e) {
    report(e);
    return 0;
  }
  return 1;
}

int main() {
  // Not `return catcher();`: at -O2 that is a tail call, recorded after main's exit (tailcall.c).
  int status = catcher();
  std::fflush(stdout);
  return status;
}
