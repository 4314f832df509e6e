/* The program tests/bench/pass_call_cost.sh measures: bench_loop() calls an empty function
 * `calls` times. Built once per instrumentation (none, shapetrace, XRay, -pg for uftrace); the
 * difference in instructions executed inside bench_loop, divided by the number of calls, is what
 * one instrumented call costs (entry and exit together). */
#include <stdlib.h>

__attribute__((noinline)) void empty(int i) { __asm__ volatile("" : : "r"(i)); }

__attribute__((noinline)) void bench_loop(int calls) {
  for (int i = 0; i < calls; ++i)
    empty(i);
}

int main(int argc, char **argv) {
  bench_loop(argc > 1 ? atoi(argv[1]) : 100000);
  return 0;
}
