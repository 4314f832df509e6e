// A known call sequence, then SIGKILL from the program itself (no handler runs, nothing is
// flushed). Its first call is flushed so that the collector knows the process; everything after
// stays in the thread's ring (the drain wakes once a second under SHAPETRACE_DRAIN_INTERVAL_US=
// 1000000), and only the collector finishing the ring after the death can record it.
#include <shapetrace/shapetrace.h>
#include <signal.h>

__attribute__((noinline)) void leaf(int i) { __asm__ volatile("" ::"r"(i) : "memory"); }

__attribute__((noinline)) void step(int i) {
  leaf(i);
  leaf(i + 1);
}

__attribute__((noinline)) void die(void) { raise(SIGKILL); }

__attribute__((noinline)) void deeper(int depth) {
  if (depth == 0)
    die();
  else
    deeper(depth - 1);
}

int main(void) {
  step(0);
  shapetrace_flush(10000);
  for (int i = 1; i <= 3; ++i)
    step(i);
  deeper(2);
  return 0;
}
