// The flame extension's per-call cost with and without its time slices (flame_slices.h): a
// FlameSink behind the call stream (call_stack.h) on a synthetic thread of service-like requests
// (a handler calling a few levels of helpers, about 300 distinct stacks), per event. The report's
// scope trees (report/scope_trees.h) are a replay of the recording: their cost is measured end to
// end by tests/bench/report_bench.sh (report with and without --flame-scope-events).
//
//   build/tests/bench/flame_slices_bench [--benchmark_min_time=2]
#include "call_stack.h"
#include "flame/flame_extension.h"

#include <benchmark/benchmark.h>

#include <random>
#include <vector>

namespace shapetrace::analyzer {
namespace {

// Requests: function 0 calls 2-5 of functions 1-12, each of which calls 0-3 of 13-40, and so on
// three levels down; 5 ns to 2 us between events, so a run spans many slices.
std::vector<Event> requests(size_t events) {
  std::mt19937 rng(11);
  std::vector<Event> out;
  uint64_t time = 1'000'000'000;
  auto call = [&](auto&& self, uint32_t function, int level) -> void {
    out.push_back({time += 5 + rng() % 2000, function, EventKind::Enter});
    if (level < 3)
      for (uint32_t n = rng() % (level == 0 ? 4 : 3) + (level == 0 ? 2 : 0); n-- > 0;)
        self(self, 1 + static_cast<uint32_t>(level) * 12 + rng() % 12, level + 1);
    out.push_back({time += 5 + rng() % 2000, function, EventKind::Exit});
  };
  while (out.size() < events)
    call(call, 0, 0);
  return out;
}

void BM_FlameSink(benchmark::State& state) {
  static const std::vector<Event> events = requests(1'000'000);
  const auto slices = static_cast<uint32_t>(state.range(0));
  for (auto _ : state) {
    FlameSink sink(FlameExtension::kDefaultMaxNodes, slices);
    CallStack<FlameSink> stack(sink);
    stack.onEvents(events);
    stack.onEnd();
    benchmark::DoNotOptimize(sink.tree().size());
    state.PauseTiming(); // the counters read the slices: not the sink's cost
    if (sink.slices() != nullptr)
      state.counters["slices"] = static_cast<double>(sink.slices()->slices().size());
    state.counters["nodes"] = static_cast<double>(sink.tree().size());
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events.size()));
}
// 0: the flame tree alone; 64: with the time slices (the default).
BENCHMARK(BM_FlameSink)->Arg(0)->Arg(64)->Unit(benchmark::kMillisecond);

} // namespace
} // namespace shapetrace::analyzer

BENCHMARK_MAIN();
