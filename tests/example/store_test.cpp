// The thread-safe store: the memory budget holds under concurrent puts (inline and background
// eviction), and throttled writers are released by the flusher.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <unistd.h>

#include "background.h"
#include "handler.h"
#include "store.h"

namespace kv {
namespace {

TEST(Store, InlineEvictionKeepsMemoryWithinTheBudget) {
  StoreOptions options;
  options.memory_budget_bytes = 64 * 1024;
  Store store(options);
  for (Key key = 0; key < 5000; ++key) {
    PutOutcome outcome = store.put(key, std::string(100, 'v'));
    ASSERT_LE(store.memoryBytes(), options.memory_budget_bytes) << "after key " << key;
    EXPECT_TRUE(outcome.inserted);
  }
  EXPECT_GT(store.counters().inline_evictions, 0u);
  EXPECT_LT(store.size(), 5000u);
  EXPECT_EQ(store.checkInvariants(), "");
  // The most recent key survives: it was just inserted, so its reference bit is set.
  EXPECT_TRUE(store.get(4999).has_value());
}

TEST(Store, BudgetHoldsWithConcurrentWritersAndTheBackgroundEvictor) {
  StoreOptions options;
  options.memory_budget_bytes = 256 * 1024;
  Store store(options);
  Evictor evictor(store, std::chrono::milliseconds(1));
  evictor.start();
  std::atomic<bool> over_budget{false};
  std::vector<std::thread> writers;
  for (unsigned t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      for (Key i = 0; i < 5000; ++i) {
        store.put(i * 4 + t, std::string(50 + i % 200, 'x'));
        if (store.memoryBytes() > options.memory_budget_bytes)
          over_budget = true;
        store.get(i * 4 + t);
      }
    });
  }
  for (auto& writer : writers)
    writer.join();
  evictor.stop();
  EXPECT_FALSE(over_budget.load());
  EXPECT_LE(store.memoryBytes(), options.memory_budget_bytes);
  EXPECT_EQ(store.checkInvariants(), "");
  StoreCounters counters = store.counters();
  EXPECT_GT(counters.inline_evicted_entries + counters.background_evicted_entries, 0u);
}

TEST(Store, BackgroundEvictionStopsAtTheLowWatermark) {
  StoreOptions options;
  options.memory_budget_bytes = 1u << 30; // no inline eviction
  Store store(options);
  for (Key key = 0; key < 2000; ++key)
    store.put(key, std::string(200, 'v'));
  std::size_t before = store.memoryBytes();
  std::size_t evicted = store.evictDownTo(before / 2);
  EXPECT_LE(store.memoryBytes(), before / 2);
  // CLOCK frees just enough: at most one entry more than needed.
  EXPECT_GT(store.memoryBytes() + BTree::entryCost(200), before / 2);
  EXPECT_EQ(store.size(), 2000u - evicted);
  EXPECT_EQ(store.counters().background_evicted_entries, evicted);
}

TEST(Store, AThrottledPutWaitsForAFlushAndTheFlusherReleasesIt) {
  StoreOptions options;
  options.max_unflushed_bytes = 10 * BTree::entryCost(100);
  Store store(options);
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("kvstore-store-test-" + std::to_string(::getpid()) + ".log");
  std::filesystem::remove(path);
  {
    CheckpointLog log(path);
    // A long interval: only the throttled puts' requests make the flusher run.
    Flusher flusher(store, log, std::chrono::milliseconds(3600 * 1000));
    flusher.start();
    unsigned waited = 0;
    for (Key key = 0; key < 100; ++key)
      waited += store.put(key, std::string(100, 'v')).waited_for_flush ? 1 : 0;
    // Every 11th put crosses the bound, waits, and the flush it waited for resets the count.
    EXPECT_EQ(waited, 9u);
    EXPECT_EQ(store.counters().flush_waits, 9u);
    flusher.stop();
    EXPECT_EQ(flusher.counters().flushes, 10u); // nine requested, one final
    EXPECT_EQ(replayPages(readCheckpoint(path).pages).size(), 100u);
  }
  std::filesystem::remove(path);
}

TEST(Store, StoppingTheFlusherReleasesWaitingWriters) {
  StoreOptions options;
  options.max_unflushed_bytes = 1;
  Store store(options);
  store.flushSignal().close(); // no flusher will ever run
  EXPECT_TRUE(store.put(1, "v").waited_for_flush); // returns instead of hanging
}

} // namespace
} // namespace kv

namespace kv {
namespace {

TEST(RequestHandler, ServesEachOperationAgainstTheStore) {
  StoreOptions options;
  options.leaf_capacity = 4;
  options.fanout = 4;
  Store store(options);
  RequestHandler handler(store, 0);
  auto request = [](Op op, Key key, std::uint32_t size = 0, std::uint32_t length = 0) {
    Request r;
    r.op = op;
    r.key = key;
    r.value_size = size;
    r.scan_length = length;
    return r;
  };
  EXPECT_FALSE(handler.serve(request(Op::kGet, 10)).hit);
  std::optional<PutPath> last_path;
  for (Key key = 1; key <= 5; ++key)
    last_path = handler.serve(request(Op::kPut, key * 10, 32)).put_path;
  EXPECT_EQ(last_path, PutPath::kSplit); // the fifth entry overflows a 4-entry leaf
  Response hit = handler.serve(request(Op::kGet, 30));
  EXPECT_TRUE(hit.hit);
  EXPECT_EQ(hit.value_bytes, 32u);
  Response scan = handler.serve(request(Op::kScan, 15, 0, 3));
  EXPECT_EQ(scan.entries, 3u); // 20, 30, 40
  EXPECT_EQ(scan.value_bytes, 96u);
  EXPECT_TRUE(handler.serve(request(Op::kDelete, 30)).hit);
  EXPECT_FALSE(handler.serve(request(Op::kDelete, 30)).hit);
  EXPECT_FALSE(handler.serve(request(Op::kGet, 30)).hit);
  EXPECT_FALSE(handler.serve(request(Op::kGet, 10)).put_path.has_value());
}

TEST(RequestHandler, ClassifiesAPutByItsSlowestPath) {
  PutOutcome outcome;
  EXPECT_EQ(classifyPut(outcome), PutPath::kPlain);
  outcome.split = true;
  EXPECT_EQ(classifyPut(outcome), PutPath::kSplit);
  outcome.evicted_inline = true;
  EXPECT_EQ(classifyPut(outcome), PutPath::kInlineEviction);
  outcome.waited_for_flush = true;
  EXPECT_EQ(classifyPut(outcome), PutPath::kFlushWait);
}

} // namespace
} // namespace kv
