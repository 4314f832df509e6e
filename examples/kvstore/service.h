// The service and its driver: builds the store, warms it, starts the evictor, the flusher and the
// worker threads, feeds the workers from a client thread for the requested time, then stops
// everything (a last checkpoint included) and returns what happened.
//
// Threads and what they do (their names show in ps, gdb and shapetrace):
//   client     draws requests (deterministic given the seed) and deals them round-robin to the
//              workers' bounded queues;
//   worker-N   pops requests and serves them: get, put, delete, scan; all workers run the same code
//              and so share call shapes;
//   evictor    CLOCK sweeps when memory is above the high watermark;
//   flusher    appends dirty pages to the checkpoint log, on a timer or when a put is throttled.
#pragma once

#include "background.h"
#include "handler.h"
#include "latency.h"
#include "store.h"
#include "workload.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>

namespace kv {

struct ServiceOptions {
  double seconds = 10;
  // When not 0: exactly this many requests, however long they take (a fixed amount of work, for
  // benchmarks), instead of as many as `seconds` allows.
  std::uint64_t requests = 0;
  unsigned workers = 4;
  std::uint64_t keys = 200000;
  std::uint64_t seed = 1;
  std::filesystem::path data_dir = "kvstore-data";
  std::size_t memory_budget_bytes = 16u << 20;
  std::size_t max_unflushed_bytes = 4u << 20;
  std::chrono::milliseconds flush_interval{1000};
  std::chrono::milliseconds evictor_period{50};
  double zipf_theta = 0.99;
  std::size_t queue_depth = 128;
};

struct RunReport {
  double seconds = 0;
  std::uint64_t requests = 0;
  std::array<LatencyHistogram, 4> by_op;               // indexed by Op
  std::array<LatencyHistogram, kPutPaths> by_put_path; // indexed by PutPath
  LatencyHistogram all;
  std::uint64_t get_hits = 0;
  std::uint64_t failed_requests = 0;
  std::uint64_t preloaded = 0;
  std::size_t entries = 0;
  std::size_t memory_bytes = 0;
  std::size_t leaves = 0;
  std::size_t height = 0;
  BTreeCounters tree;
  StoreCounters store;
  FlusherCounters flusher;
  std::uint64_t checkpoint_bytes = 0;
  std::filesystem::path checkpoint_path;
};

// Runs the service; throws std::runtime_error (or CheckpointError) on a set-up failure such as an
// unwritable data directory.
RunReport runService(const ServiceOptions& options);

} // namespace kv
