// Two bodies per function (-shapetrace-detached=clone, the default): the ordinary body's tail call
// of its hooked copy must hand over every argument exactly, whichever body runs. The same calls
// give the same results recording (events checked), with recording off and built with the gate,
// at -O0 and -O2: variadic integers and doubles (in registers and on the stack), a struct returned
// through memory (sret), a struct in a general and a vector register, a call through a pointer.
// RUN: %shapetrace_cc -O2 %s -o %t.O2
// RUN: %shapetrace_dump -o %t.O2.events -- %t.O2 | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --input-file %t.O2.events --match-full-lines --strict-whitespace
// RUN: env SHAPETRACE_ENABLED=0 %t.O2 | FileCheck %s --check-prefix=OUT
// RUN: %shapetrace_cc -O0 %s -o %t.O0
// RUN: %shapetrace_dump -o %t.O0.events -- %t.O0 | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --input-file %t.O0.events --match-full-lines --strict-whitespace
// RUN: env SHAPETRACE_ENABLED=0 %t.O0 | FileCheck %s --check-prefix=OUT
// RUN: env SHAPETRACE_PASS_DETACHED=gate %shapetrace_cc -O2 %s -o %t.gate
// RUN: %shapetrace_dump -o %t.gate.events -- %t.gate | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --input-file %t.gate.events --match-full-lines --strict-whitespace
// The ordinary body and its copy are distinct symbols; the pointer is the function's own.
// RUN: nm %t.O2 | FileCheck %s --check-prefix=SYMBOLS
// SYMBOLS-DAG: T sum
// SYMBOLS-DAG: t sum.traced
// SYMBOLS-DAG: T twice
// SYMBOLS-DAG: t twice.traced

// OUT:sum 81.0
// OUT-NEXT:big 3 18
// OUT-NEXT:pair 2 7.0
// OUT-NEXT:indirect 42 1

// CHECK:exit status 0
// CHECK-NEXT:thread main
// CHECK-NEXT:  enter main
// CHECK-NEXT:    enter sum
// CHECK-NEXT:    exit sum
// CHECK-NEXT:    enter make_big
// CHECK-NEXT:    exit make_big
// CHECK-NEXT:    enter swap_pair
// CHECK-NEXT:    exit swap_pair
// CHECK-NEXT:    enter twice
// CHECK-NEXT:    exit twice
// CHECK-NEXT:  exit main
// CHECK-NOT:{{.}}

#include <stdarg.h>
#include <stdio.h>

struct big {
  long v[6];
};
struct pair {
  long a;
  double b;
};

// Variadic: the musttail call forwards the register save area's registers, %al (the number of
// vector registers used) and the arguments on the stack.
__attribute__((noinline)) double sum(int count, ...) {
  va_list ap;
  va_start(ap, count);
  double total = 0;
  for (int i = 0; i < count; ++i)
    total += i % 2 ? va_arg(ap, double) : (double)va_arg(ap, long);
  va_end(ap);
  return total;
}

// Returned through memory (sret): the caller's buffer pointer is forwarded.
__attribute__((noinline)) struct big make_big(long seed) {
  struct big b;
  for (int i = 0; i < 6; ++i)
    b.v[i] = seed * (i + 1);
  return b;
}

// Passed and returned in a general and a vector register.
__attribute__((noinline)) struct pair swap_pair(struct pair p) {
  struct pair r = {(long)p.b, (double)p.a};
  return r;
}

__attribute__((noinline)) long twice(long x) { return 2 * x; }

// Called through a pointer: the pointer is the function's own address, which decides per call.
long (*volatile indirect)(long) = twice;

int main(void) {
  printf("sum %.1f\n", sum(12, 1L, 2.5, 3L, 4.5, 5L, 6.5, 7L, 8.5, 9L, 10.5, 11L, 12.5));
  struct big b = make_big(3);
  printf("big %ld %ld\n", b.v[0], b.v[5]);
  struct pair p = swap_pair((struct pair){7, 2.0});
  printf("pair %ld %.1f\n", p.a, p.b);
  printf("indirect %ld %d\n", indirect(21), indirect == twice);
  return 0;
}
