// A real program for the collector's end-to-end test, compiled with shapetrace-c++ (the clang
// plugin inserts the hooks, the runtime streams to SHAPETRACE_ENDPOINT).
//
//   instrumented_workers THREADS CALLS
//
// Each of THREADS threads calls work() CALLS times; work() calls leaf() twice. Prints
// "leaf calls N" (the count the program itself kept) and exits 0.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

std::atomic<long> g_leaf_calls{0};
volatile long g_sink = 0;

__attribute__((noinline)) void leaf(long i) {
  g_sink = g_sink + i;
  g_leaf_calls.fetch_add(1, std::memory_order_relaxed);
}

__attribute__((noinline)) void work(long i) {
  leaf(i);
  leaf(i + 1);
}

__attribute__((noinline)) void worker(long calls) {
  for (long i = 0; i < calls; ++i)
    work(i);
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: instrumented_workers THREADS CALLS\n");
    return 2;
  }
  const int threads = std::atoi(argv[1]);
  const long calls = std::atol(argv[2]);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back(worker, calls);
  for (std::thread& t : pool)
    t.join();
  std::printf("leaf calls %ld\n", g_leaf_calls.load());
  return 0;
}
