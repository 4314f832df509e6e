// The thread-safe key-value store: the B+tree behind a reader-writer lock, a memory budget
// enforced by CLOCK eviction, and a bound on dirty pages enforced by making writers wait for the
// flusher.
//
// Reads (get, scan) share the lock; writes (put, delete) and eviction sweeps take it alone. A put
// is where the slow paths are, and each one is a function of its own so that a trace shows it:
//   - the insert overflows a leaf: splitLeaf (and maybe splitInternal, growRoot) inside the put;
//   - the store is over its memory budget: evictInline runs a CLOCK sweep inside the put (the
//     background evictor normally keeps memory under the high watermark, but a burst of inserts
//     can outrun it, as Redis's maxmemory eviction does inside a command);
//   - too much has been written since the last flush: waitForFlush blocks the put until the
//     flusher has made it durable (a write stall, as RocksDB's when its memtables are full).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "btree.h"

namespace kv {

struct StoreOptions {
  std::size_t memory_budget_bytes = 16u << 20;
  double high_watermark = 0.95; // the background evictor starts above this share of the budget
  double low_watermark = 0.90;  // and evicts down to this one
  // Puts wait for a flush once this many bytes were put since the last flush started; 0: never.
  std::size_t max_unflushed_bytes = 0;
  std::size_t leaf_capacity = 64;
  std::size_t fanout = 64;
};

// What a put did besides inserting, for the driver's latency breakdown.
struct PutOutcome {
  bool inserted = false;      // the key was new
  bool split = false;         // a leaf split
  bool evicted_inline = false; // the put had to evict to stay within budget
  bool waited_for_flush = false;
};

struct ScanOutcome {
  std::size_t entries = 0;
  std::size_t value_bytes = 0;
};

struct StoreCounters {
  std::uint64_t inline_evictions = 0;       // puts that evicted
  std::uint64_t inline_evicted_entries = 0;
  std::uint64_t background_sweeps = 0;
  std::uint64_t background_evicted_entries = 0;
  std::uint64_t flush_waits = 0;            // puts that waited for the flusher
};

// How puts that exceed the dirty-page bound wait for the flusher, and how the flusher learns that
// someone is waiting. Flushes are numbered: a waiter needs a flush that *starts* after its request.
class FlushSignal {
public:
  // Called by a writer: asks for a flush and waits until one that started later has completed
  // (or the signal is closed).
  void waitForFlush();
  // Called by the flusher: waits up to `interval` or until a flush is requested. Returns false
  // once the signal is closed.
  bool waitForWork(std::chrono::milliseconds interval);
  void flushStarted();
  void flushCompleted();
  // Releases every waiter and makes waitForWork return false.
  void close();

private:
  std::mutex mutex_;
  std::condition_variable work_;
  std::condition_variable done_;
  std::uint64_t started_ = 0;
  std::uint64_t completed_ = 0;
  bool requested_ = false;
  bool closed_ = false;
};

class Store {
public:
  explicit Store(const StoreOptions& options);

  std::optional<std::string> get(Key key) const;
  PutOutcome put(Key key, std::string value);
  bool erase(Key key);
  ScanOutcome scan(Key start, std::size_t limit) const;

  // Background eviction: sweeps in short slices (releasing the lock between them so requests keep
  // flowing) until memory is at most target_bytes. Returns the entries evicted.
  std::size_t evictDownTo(std::size_t target_bytes);
  bool aboveHighWatermark() const;
  std::size_t highWatermarkBytes() const;
  std::size_t lowWatermarkBytes() const;

  // For the flusher (its only caller): images of the dirty pages, or of every page.
  std::vector<PageImage> takeDirtyPages(bool all_pages);
  FlushSignal& flushSignal() { return flush_signal_; }

  std::size_t size() const;
  std::size_t memoryBytes() const;
  std::size_t leafCount() const;
  std::size_t height() const;
  BTreeCounters treeCounters() const;
  StoreCounters counters() const;
  std::string checkInvariants() const;
  const StoreOptions& options() const { return options_; }

private:
  void evictInline(std::size_t incoming_bytes);
  void waitForFlush();

  StoreOptions options_;
  mutable std::shared_mutex mutex_;
  BTree tree_;
  Key clock_hand_ = 0;                // guarded by mutex_ (exclusive)
  std::size_t unflushed_bytes_ = 0;   // written under mutex_ (exclusive), reset by the flusher
  FlushSignal flush_signal_;
  std::atomic<std::size_t> memory_bytes_{0}; // mirrors tree_.memoryBytes() for lock-free reads
  std::atomic<std::uint64_t> inline_evictions_{0};
  std::atomic<std::uint64_t> inline_evicted_entries_{0};
  std::atomic<std::uint64_t> background_sweeps_{0};
  std::atomic<std::uint64_t> background_evicted_entries_{0};
  std::atomic<std::uint64_t> flush_waits_{0};
};

} // namespace kv
