/* The program tests/bench/jump_cost.sh measures: bench_setjmp() calls setjmp `n` times in an
 * instrumented frame; bench_longjmp() does `n` times a setjmp and a longjmp out of three
 * instrumented frames. The instructions executed inside each, divided by n, are what a setjmp
 * and a setjmp + longjmp cost (the runtime interposes both, jumps.cpp). */
#include <setjmp.h>
#include <stdlib.h>

static jmp_buf env;
static volatile int sink;

__attribute__((noinline)) void set_only(void) {
  if (setjmp(env) == 0)
    sink = 1;
}

__attribute__((noinline)) void bench_setjmp(int n) {
  for (int i = 0; i < n; ++i)
    set_only();
}

__attribute__((noinline)) void level3(void) { longjmp(env, 1); }
__attribute__((noinline)) void level2(void) { level3(); sink = 2; }
__attribute__((noinline)) void level1(void) { level2(); sink = 3; }

__attribute__((noinline)) void jump_once(void) {
  if (setjmp(env) == 0)
    level1();
}

__attribute__((noinline)) void bench_longjmp(int n) {
  for (int i = 0; i < n; ++i)
    jump_once();
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 100000;
  bench_setjmp(n);
  bench_longjmp(n);
  return 0;
}
