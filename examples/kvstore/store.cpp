// Store: locking, the memory budget (inline and background CLOCK eviction) and write throttling
// on dirty pages (see store.h for why each slow path exists).
#include "store.h"

#include <algorithm>

namespace kv {
namespace {

// Entries a background sweep examines per lock hold: small enough that a request waiting for the
// lock waits for one slice, not for the whole eviction.
constexpr std::size_t kSweepSlice = 512;

} // namespace

void FlushSignal::waitForFlush() {
  std::unique_lock lock(mutex_);
  std::uint64_t target = started_ + 1;
  requested_ = true;
  work_.notify_one();
  done_.wait(lock, [&] { return completed_ >= target || closed_; });
}

bool FlushSignal::waitForWork(std::chrono::milliseconds interval) {
  std::unique_lock lock(mutex_);
  work_.wait_for(lock, interval, [&] { return requested_ || closed_; });
  return !closed_;
}

void FlushSignal::flushStarted() {
  std::lock_guard lock(mutex_);
  ++started_;
  requested_ = false;
}

void FlushSignal::flushCompleted() {
  std::lock_guard lock(mutex_);
  ++completed_;
  done_.notify_all();
}

void FlushSignal::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  work_.notify_all();
  done_.notify_all();
}

Store::Store(const StoreOptions& options)
    : options_(options), tree_(options.leaf_capacity, options.fanout) {}

std::optional<std::string> Store::get(Key key) const {
  std::shared_lock lock(mutex_);
  const std::string* value = tree_.find(key);
  if (!value)
    return std::nullopt;
  return *value;
}

PutOutcome Store::put(Key key, std::string value) {
  PutOutcome outcome;
  bool stall = false;
  {
    std::unique_lock lock(mutex_);
    std::size_t incoming = BTree::entryCost(value.size());
    if (tree_.memoryBytes() + incoming > options_.memory_budget_bytes) {
      evictInline(incoming);
      outcome.evicted_inline = true;
    }
    std::uint64_t splits_before = tree_.counters().leaf_splits;
    outcome.inserted = tree_.insert(key, std::move(value));
    outcome.split = tree_.counters().leaf_splits != splits_before;
    memory_bytes_.store(tree_.memoryBytes(), std::memory_order_relaxed);
    unflushed_bytes_ += incoming;
    stall = options_.max_unflushed_bytes != 0 && unflushed_bytes_ > options_.max_unflushed_bytes;
  }
  if (stall) {
    waitForFlush();
    outcome.waited_for_flush = true;
  }
  return outcome;
}

// Runs with the exclusive lock held: frees room for the incoming entry plus 1% of the budget, so
// that the next puts do not all land here too.
void Store::evictInline(std::size_t incoming_bytes) {
  std::size_t budget = options_.memory_budget_bytes;
  std::size_t target = budget - std::min(budget, incoming_bytes + budget / 100);
  std::size_t excess = tree_.memoryBytes() > target ? tree_.memoryBytes() - target : 0;
  SweepResult sweep = tree_.sweepClock(&clock_hand_, excess, tree_.size() * 2 + 1);
  inline_evictions_.fetch_add(1, std::memory_order_relaxed);
  inline_evicted_entries_.fetch_add(sweep.evicted, std::memory_order_relaxed);
}

void Store::waitForFlush() {
  flush_waits_.fetch_add(1, std::memory_order_relaxed);
  flush_signal_.waitForFlush();
}

bool Store::erase(Key key) {
  std::unique_lock lock(mutex_);
  bool erased = tree_.erase(key);
  memory_bytes_.store(tree_.memoryBytes(), std::memory_order_relaxed);
  return erased;
}

ScanOutcome Store::scan(Key start, std::size_t limit) const {
  std::shared_lock lock(mutex_);
  ScanOutcome outcome;
  outcome.entries = tree_.scan(start, limit, [&](Key, std::string_view value) {
    outcome.value_bytes += value.size();
  });
  return outcome;
}

std::size_t Store::evictDownTo(std::size_t target_bytes) {
  std::size_t evicted = 0;
  for (;;) {
    std::unique_lock lock(mutex_);
    std::size_t memory = tree_.memoryBytes();
    if (memory <= target_bytes)
      break;
    SweepResult sweep = tree_.sweepClock(&clock_hand_, memory - target_bytes, kSweepSlice);
    memory_bytes_.store(tree_.memoryBytes(), std::memory_order_relaxed);
    evicted += sweep.evicted;
    if (sweep.examined == 0)
      break; // nothing left to sweep
  }
  background_sweeps_.fetch_add(1, std::memory_order_relaxed);
  background_evicted_entries_.fetch_add(evicted, std::memory_order_relaxed);
  return evicted;
}

std::size_t Store::highWatermarkBytes() const {
  return static_cast<std::size_t>(static_cast<double>(options_.memory_budget_bytes) *
                                  options_.high_watermark);
}

std::size_t Store::lowWatermarkBytes() const {
  return static_cast<std::size_t>(static_cast<double>(options_.memory_budget_bytes) *
                                  options_.low_watermark);
}

bool Store::aboveHighWatermark() const {
  return memory_bytes_.load(std::memory_order_relaxed) > highWatermarkBytes();
}

// A shared lock is enough: only writers (excluded here) set dirty bits and count unflushed bytes,
// and the flusher is the only caller, so nobody else clears them concurrently. Readers keep going
// while pages are copied.
std::vector<PageImage> Store::takeDirtyPages(bool all_pages) {
  std::shared_lock lock(mutex_);
  unflushed_bytes_ = 0;
  return tree_.takeDirtyPages(all_pages);
}

std::size_t Store::size() const {
  std::shared_lock lock(mutex_);
  return tree_.size();
}

std::size_t Store::memoryBytes() const { return memory_bytes_.load(std::memory_order_relaxed); }

std::size_t Store::leafCount() const {
  std::shared_lock lock(mutex_);
  return tree_.leafCount();
}

std::size_t Store::height() const {
  std::shared_lock lock(mutex_);
  return tree_.height();
}

BTreeCounters Store::treeCounters() const {
  std::shared_lock lock(mutex_);
  return tree_.counters();
}

StoreCounters Store::counters() const {
  StoreCounters counters;
  counters.inline_evictions = inline_evictions_.load(std::memory_order_relaxed);
  counters.inline_evicted_entries = inline_evicted_entries_.load(std::memory_order_relaxed);
  counters.background_sweeps = background_sweeps_.load(std::memory_order_relaxed);
  counters.background_evicted_entries =
      background_evicted_entries_.load(std::memory_order_relaxed);
  counters.flush_waits = flush_waits_.load(std::memory_order_relaxed);
  return counters;
}

std::string Store::checkInvariants() const {
  std::shared_lock lock(mutex_);
  return tree_.checkInvariants();
}

} // namespace kv
