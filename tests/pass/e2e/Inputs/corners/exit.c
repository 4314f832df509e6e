/* exit() called deep in the stack: the frames it leaves are still open, then the atexit handler
   and the destructor run as traced calls of their own (the corners of uftrace's s-exit and
   s-nested). at_exit and destructor end in a tail call, whose recording differs from uftrace's
   as exit.uftrace-difference says. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void report(const char *what) { puts(what); }
__attribute__((noinline)) static void at_exit(void) { report("atexit handler"); }
__attribute__((noinline, destructor)) static void destructor(void) { report("destructor"); }

__attribute__((noinline)) static void leave(int depth) {
  if (depth == 0) exit(0);
  leave(depth - 1);
  report("not reached");
}

int main(void) {
  atexit(at_exit);
  leave(3);
  return 1;
}
