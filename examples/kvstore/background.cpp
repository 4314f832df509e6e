// The evictor and flusher threads (see background.h).
#include "background.h"

#include <pthread.h>

#include "shapetrace/shapetrace.h"

// Weak: the program links and runs without the shapetrace runtime, and names its threads in the
// trace when the runtime is linked in.
#pragma weak shapetrace_set_thread_name

namespace kv {

void nameThread(const char* name) {
  pthread_setname_np(pthread_self(), name);
  if (&shapetrace_set_thread_name != nullptr)
    shapetrace_set_thread_name(name);
}

Evictor::Evictor(Store& store, std::chrono::milliseconds period)
    : store_(store), period_(period) {}

Evictor::~Evictor() { stop(); }

void Evictor::start() { thread_ = std::thread([this] { run(); }); }

void Evictor::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

void Evictor::run() {
  nameThread("evictor");
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, period_, [&] { return stopping_; })) {
    lock.unlock();
    wakeups_.fetch_add(1, std::memory_order_relaxed);
    if (store_.aboveHighWatermark())
      store_.evictDownTo(store_.lowWatermarkBytes());
    lock.lock();
  }
}

Flusher::Flusher(Store& store, CheckpointLog& log, std::chrono::milliseconds interval,
                 double rewrite_factor, std::uint64_t rewrite_min_bytes)
    : store_(store), log_(log), interval_(interval), rewrite_factor_(rewrite_factor),
      rewrite_min_bytes_(rewrite_min_bytes) {}

Flusher::~Flusher() { stop(); }

void Flusher::start() { thread_ = std::thread([this] { run(); }); }

void Flusher::stop() {
  store_.flushSignal().close();
  if (thread_.joinable())
    thread_.join();
}

void Flusher::run() {
  nameThread("flusher");
  while (store_.flushSignal().waitForWork(interval_))
    flushOnce();
  flushOnce(); // the final checkpoint
}

void Flusher::flushOnce() {
  FlushSignal& signal = store_.flushSignal();
  signal.flushStarted();
  std::vector<PageImage> pages = store_.takeDirtyPages(false);
  std::uint64_t bytes = pages.empty() ? 0 : log_.append(pages);
  {
    std::lock_guard lock(counters_mutex_);
    ++counters_.flushes;
    counters_.pages_written += pages.size();
    counters_.bytes_written += bytes;
  }
  rewriteIfLarge();
  signal.flushCompleted();
}

// The log only grows; once it is several times the live data, replace it by one image per leaf.
void Flusher::rewriteIfLarge() {
  auto live = static_cast<double>(store_.memoryBytes());
  std::uint64_t size = log_.sizeBytes();
  if (size < rewrite_min_bytes_ || static_cast<double>(size) < rewrite_factor_ * live)
    return;
  std::uint64_t bytes = log_.rewrite(store_.takeDirtyPages(true));
  std::lock_guard lock(counters_mutex_);
  ++counters_.rewrites;
  counters_.bytes_written += bytes;
}

FlusherCounters Flusher::counters() const {
  std::lock_guard lock(counters_mutex_);
  return counters_;
}

} // namespace kv
