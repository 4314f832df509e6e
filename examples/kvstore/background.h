// The store's two background threads, each with its own behaviour in a trace:
//   - Evictor: wakes every few milliseconds and, when memory is above the high watermark, runs
//     CLOCK sweeps down to the low watermark;
//   - Flusher: every flush interval, or at once when a writer is throttled, copies the dirty pages
//     and appends them to the checkpoint log with fdatasync; rewrites the log when it has grown to
//     several times the live data; writes a last checkpoint when stopped.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "checkpoint.h"
#include "store.h"

namespace kv {

// Names the calling thread for the OS (ps, gdb) and, when the program runs under shapetrace, for
// the trace.
void nameThread(const char* name);

class Evictor {
public:
  Evictor(Store& store, std::chrono::milliseconds period);
  ~Evictor();
  void start();
  void stop();
  std::uint64_t wakeups() const { return wakeups_.load(std::memory_order_relaxed); }

private:
  void run();

  Store& store_;
  std::chrono::milliseconds period_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::atomic<std::uint64_t> wakeups_{0};
  std::thread thread_;
};

struct FlusherCounters {
  std::uint64_t flushes = 0;
  std::uint64_t pages_written = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t rewrites = 0;
};

class Flusher {
public:
  // rewrite_factor: rewrite the log once it is this many times the live data (and at least
  // rewrite_min_bytes).
  Flusher(Store& store, CheckpointLog& log, std::chrono::milliseconds interval,
          double rewrite_factor = 4.0, std::uint64_t rewrite_min_bytes = 64u << 20);
  ~Flusher();
  void start();
  // Releases throttled writers, stops the thread and writes a final checkpoint.
  void stop();
  // One flush, on the calling thread (the thread uses it; tests call it directly).
  void flushOnce();
  FlusherCounters counters() const;

private:
  void run();
  void rewriteIfLarge();

  Store& store_;
  CheckpointLog& log_;
  std::chrono::milliseconds interval_;
  double rewrite_factor_;
  std::uint64_t rewrite_min_bytes_;
  mutable std::mutex counters_mutex_;
  FlusherCounters counters_;
  std::thread thread_;
};

} // namespace kv
