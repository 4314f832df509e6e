// The function whose argument tests/bench/string_args_bench.sh records three ways: not at all, as
// a pointer (`take@arg1`) and as a string (`take@arg1/s`). Prints ns per call of the loop.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) int take(const char* path, int n) {
  __asm__ volatile("" : : "r"(path) : "memory");
  return n + 1;
}

int main(int argc, char** argv) {
  const long calls = argc > 1 ? atol(argv[1]) : 200000;
  const char* path = "/var/lib/service/objects/2f/8a/object-000123.bin"; // 48 bytes
  struct timespec from, to;
  int sum = 0;
  clock_gettime(CLOCK_MONOTONIC, &from);
  for (long i = 0; i < calls; ++i)
    sum += take(path, (int)i);
  clock_gettime(CLOCK_MONOTONIC, &to);
  const double ns = (double)(to.tv_sec - from.tv_sec) * 1e9 + (double)(to.tv_nsec - from.tv_nsec);
  printf("%.1f %d\n", ns / (double)calls, sum & 1);
  return 0;
}
