// The std::string_view twin of string_args_target.c for tests/bench/string_args_bench.sh: the same
// 48-byte path passed as a view (two registers on x86-64), recorded not at all or as its text
// (`take_view@arg1/s`, built with -g: the pass finds the view from the debug information). Prints
// ns per call of the loop.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string_view>

__attribute__((noinline)) int take_view(std::string_view path, int n) {
  asm volatile("" : : "r"(path.data()), "r"(path.size()) : "memory");
  return n + 1;
}

int main(int argc, char** argv) {
  const long calls = argc > 1 ? std::atol(argv[1]) : 200000;
  const std::string_view path = "/var/lib/service/objects/2f/8a/object-000123.bin"; // 48 bytes
  timespec from{}, to{};
  int sum = 0;
  clock_gettime(CLOCK_MONOTONIC, &from);
  for (long i = 0; i < calls; ++i)
    sum += take_view(path, int(i));
  clock_gettime(CLOCK_MONOTONIC, &to);
  const double ns = double(to.tv_sec - from.tv_sec) * 1e9 + double(to.tv_nsec - from.tv_nsec);
  std::printf("%.1f %d\n", ns / double(calls), sum & 1);
  return 0;
}
