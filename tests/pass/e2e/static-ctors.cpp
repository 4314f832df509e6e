// Static constructors run before main and are traced with registered ids: every module's
// table is registered (constructor priority 2) before any ordinary constructor (65535) runs,
// across two modules, so even a constructor calling into the other module resolves.
// Also: the C constructor attribute, a SHAPETRACE_NO_INSTRUMENT function (absent), and a
// static destructor after main. _GLOBAL__sub_I_static_ctors.cpp is the function clang generates to
// run the file's dynamic initialisers: it runs, so it is recorded.
// RUN: %shapetrace_cxx -O1 %s %S/Inputs/ctor_helper.cpp -o %t
// RUN: %shapetrace_dump -o %t.events -- %t
// RUN: FileCheck %s --input-file %t.events --match-full-lines --strict-whitespace

// CHECK:exit status 0
// CHECK-NEXT:thread main
// CHECK-NEXT:  enter early()
// CHECK-NEXT:  exit early()
// CHECK-NEXT:  enter _GLOBAL__sub_I_static_ctors.cpp
// CHECK-NEXT:    enter Registry::Registry()
// CHECK-NEXT:      enter helperFromOtherModule(int)
// CHECK-NEXT:      exit helperFromOtherModule(int)
// CHECK-NEXT:    exit Registry::Registry()
// CHECK-NEXT:  exit _GLOBAL__sub_I_static_ctors.cpp
// CHECK-NEXT:  enter main
// CHECK-NEXT:    enter Registry::use()
// CHECK-NEXT:    exit Registry::use()
// CHECK-NEXT:  exit main
// CHECK-NEXT:  enter Registry::~Registry()
// CHECK-NEXT:  exit Registry::~Registry()
// CHECK-NOT:{{.}}

#include <cstdio>
#include <shapetrace/shapetrace.h>

int helperFromOtherModule(int x);

static volatile int state;

// Runs before Registry's constructor (lower priority number), still after the tables.
__attribute__((constructor(101), noinline)) void early() { state = 1; }

SHAPETRACE_NO_INSTRUMENT __attribute__((noinline)) void quiet() { state += 10; }

struct Registry {
  __attribute__((noinline)) Registry() { state = helperFromOtherModule(state); }
  __attribute__((noinline)) ~Registry() { std::fflush(stdout); }
  __attribute__((noinline)) int use() {
    quiet();
    return state;
  }
};

static Registry registry;

int main() {
  int value = registry.use();
  std::fflush(stdout);
  return value == 12 ? 0 : 1;
}
