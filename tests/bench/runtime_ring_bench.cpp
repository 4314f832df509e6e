// The hot path's ring against Boost.Lockfree's spsc_queue, the default choice: cost of
// one push (what every hook pays) and of draining in bulk (what the drain thread pays), for the
// same 16-byte Events and the same capacity. Single-threaded, so the figure is the instructions
// themselves, not cache-line traffic between cores (the two designs touch the same lines).
//
//   build/tests/bench/runtime_ring_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include "ring.h"

#include <benchmark/benchmark.h>
#include <boost/lockfree/spsc_queue.hpp>

#include <vector>

namespace {

using shapetrace::Event;
using shapetrace::EventKind;
constexpr size_t kCapacity = 1 << 16;
constexpr size_t kBurst = 4096; // events pushed between two drains

void EventRingPushAndDrain(benchmark::State& state) {
  std::vector<Event> slots(kCapacity);
  shapetrace::rt::EventRing ring(slots.data(), kCapacity);
  uint64_t sum = 0, ticks = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < kBurst; ++i)
      benchmark::DoNotOptimize(ring.tryPush(Event{++ticks, uint32_t(i), EventKind::Enter}));
    const uint64_t head = ring.readable();
    for (uint64_t i = ring.released(); i < head; ++i)
      sum += ring.at(i).timestamp;
    ring.release(head);
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(int64_t(state.iterations() * kBurst));
}
BENCHMARK(EventRingPushAndDrain);

void BoostSpscPushAndDrain(benchmark::State& state) {
  boost::lockfree::spsc_queue<Event, boost::lockfree::capacity<kCapacity>> queue;
  std::vector<Event> out(kBurst);
  uint64_t sum = 0, ticks = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < kBurst; ++i)
      benchmark::DoNotOptimize(queue.push(Event{++ticks, uint32_t(i), EventKind::Enter}));
    const size_t n = queue.pop(out.data(), kBurst);
    for (size_t i = 0; i < n; ++i)
      sum += out[i].timestamp;
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(int64_t(state.iterations() * kBurst));
}
BENCHMARK(BoostSpscPushAndDrain);

} // namespace

BENCHMARK_MAIN();
