// A request loop for the explain end to end (explain.test). Every request annotates its size; a
// request whose id is a multiple of 3 takes the slow path, decompress(), which takes far longer per
// byte. `shapetrace explain --function serve --input size` must find the two lines and
// a tree that names decompress. With the arguments "run N [slow]" it is one run of input N instead
// (the across-runs mode): the run annotates N and serves N small requests; with "slow" each one
// decompresses and then waits 2 ms. A wait, not a loop: the runs' wall time must stay linear in N
// while other tests load the machine (a loop's time doubles when the CPU is shared).
// Built at -O0, so that every call stays a call.
#include <shapetrace/shapetrace.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile unsigned sink;

__attribute__((noinline)) static void spin(long n) {
  for (long i = 0; i < n; ++i)
    sink += (unsigned)i;
}
// Waits rather than loops, 20 us per unit: a loop's time doubles whenever other tests share the
// CPU, and the two lines must stay apart however loaded the machine is.
__attribute__((noinline)) static void decompress(long size) { usleep((useconds_t)(20 * size)); }
__attribute__((noinline)) static void serve(int id, long size) {
  shapetrace_annotate("size", size);
  if (id % 3 == 0)
    decompress(size);
  else
    spin(200 * size);
}

int main(int argc, char** argv) {
  if (argc > 2 && strcmp(argv[1], "run") == 0) {
    const long n = atol(argv[2]);
    const int slow = argc > 3 && strcmp(argv[3], "slow") == 0;
    shapetrace_annotate("n", n);
    for (long i = 0; i < n; ++i) {
      serve(slow ? 0 : 1, 1);
      if (slow) usleep(2000);
    }
    printf("run %ld%s\n", n, slow ? " slow" : "");
    return 0;
  }
  for (int id = 0; id < 600; ++id)
    serve(id, 1 + (id * 37) % 200);
  printf("served 600\n");
  return 0;
}
