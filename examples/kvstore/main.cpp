// kvstore: runs the example key-value service under a Zipfian workload for a given time and prints
// its throughput, latency percentiles (per operation, and for puts per slow path) and what the
// store did (splits, evictions, flushes). See docs/example.md.
#include "service.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>

namespace {

struct Flags {
  kv::ServiceOptions service;
  double memory_mib = 16;
  unsigned flush_ms = 1000;
  double max_unflushed_mib = 4;
};

void addFlags(CLI::App& app, Flags& flags) {
  kv::ServiceOptions& s = flags.service;
  app.add_option("--seconds", s.seconds, "How long the workload runs")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 86400.0));
  app.add_option("--requests", s.requests,
                 "Serve exactly this many requests, then stop, instead of running for --seconds "
                 "(0: for --seconds); a fixed amount of work for benchmarks")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1} << 40));
  app.add_option("--threads", s.workers, "Worker threads serving requests")
      ->capture_default_str()
      ->check(CLI::Range(1u, 256u));
  app.add_option("--keys", s.keys, "Size of the key space the workload draws from")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{2}, std::uint64_t{100000000}));
  app.add_option("--seed", s.seed, "Seed of the request stream (same seed, same requests)")
      ->capture_default_str();
  app.add_option("--data-dir", s.data_dir,
                 "Directory for the checkpoint log (created if missing; DIR/checkpoint.log is "
                 "replaced)")
      ->capture_default_str()
      ->check([](const std::string& dir) { return dir.empty() ? "must not be empty" : ""; });
  app.add_option("--memory-mib", flags.memory_mib, "Memory budget of the store, in MiB")
      ->capture_default_str()
      ->check(CLI::Range(0.0625, 65536.0));
  app.add_option("--flush-ms", flags.flush_ms, "Checkpoint interval, in milliseconds")
      ->capture_default_str()
      ->check(CLI::Range(1u, 3600000u));
  app.add_option("--max-unflushed-mib", flags.max_unflushed_mib,
                 "Puts wait for a flush once this much was written since the last one (0: never)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 65536.0));
  app.add_option("--zipf", s.zipf_theta, "Skew of the key popularity (Zipf exponent)")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 0.999));
}

double micros(std::uint64_t nanoseconds) {
  return static_cast<double>(nanoseconds) / 1000.0;
}

void printRow(const char* name, const kv::LatencyHistogram& h) {
  std::printf("  %-16s %10llu %9.2f %9.2f %9.2f %9.2f %10.2f\n", name,
              static_cast<unsigned long long>(h.count()), micros(h.quantile(0.5)),
              micros(h.quantile(0.9)), micros(h.quantile(0.99)), micros(h.quantile(0.999)),
              micros(h.max()));
}

void printReport(const kv::ServiceOptions& options, const kv::RunReport& r) {
  auto count = [](std::uint64_t n) { return static_cast<unsigned long long>(n); };
  std::printf("kvstore: %u workers, %llu keys, seed %llu, %.2f s\n", options.workers,
              count(options.keys), count(options.seed), r.seconds);
  std::printf("requests: %llu (%.0f per second), %llu failed, get hit rate %.1f%%\n",
              count(r.requests), static_cast<double>(r.requests) / r.seconds,
              count(r.failed_requests),
              r.by_op[0].count() ? 100.0 * static_cast<double>(r.get_hits) /
                                       static_cast<double>(r.by_op[0].count())
                                 : 0.0);
  std::printf(
      "latency (microseconds)   count       p50       p90       p99     p99.9        max\n");
  for (kv::Op op : {kv::Op::kGet, kv::Op::kPut, kv::Op::kDelete, kv::Op::kScan})
    printRow(kv::opName(op), r.by_op[static_cast<std::size_t>(op)]);
  printRow("all", r.all);
  std::printf("puts by slow path\n");
  for (std::size_t i = 0; i < kv::kPutPaths; ++i)
    printRow(kv::putPathName(static_cast<kv::PutPath>(i)), r.by_put_path[i]);
  std::printf("store: %zu entries, %.1f of %.1f MiB, %zu leaves, height %zu, %llu preloaded\n",
              r.entries, static_cast<double>(r.memory_bytes) / (1 << 20),
              static_cast<double>(options.memory_budget_bytes) / (1 << 20), r.leaves, r.height,
              count(r.preloaded));
  std::printf("splits: %llu leaf, %llu internal, %llu root\n", count(r.tree.leaf_splits),
              count(r.tree.internal_splits), count(r.tree.root_splits));
  std::printf("eviction: %llu entries in the background, %llu inline in %llu puts\n",
              count(r.store.background_evicted_entries), count(r.store.inline_evicted_entries),
              count(r.store.inline_evictions));
  std::printf(
      "flush: %llu flushes, %llu pages, %.1f MiB written, %llu rewrites, %llu puts waited\n",
      count(r.flusher.flushes), count(r.flusher.pages_written),
      static_cast<double>(r.flusher.bytes_written) / (1 << 20), count(r.flusher.rewrites),
      count(r.store.flush_waits));
  std::printf("checkpoint: %s (%llu bytes)\n", r.checkpoint_path.c_str(),
              count(r.checkpoint_bytes));
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvstore: a multi-threaded key-value store serving a Zipfian workload, the "
               "example service for shapetrace"};
  Flags flags;
  addFlags(app, flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    std::fprintf(stderr, "kvstore: %s\nRun 'kvstore --help' for the options.\n", error.what());
    return 2;
  }
  flags.service.memory_budget_bytes = static_cast<std::size_t>(flags.memory_mib * 1024.0 * 1024.0);
  flags.service.flush_interval = std::chrono::milliseconds(flags.flush_ms);
  flags.service.max_unflushed_bytes =
      static_cast<std::size_t>(flags.max_unflushed_mib * 1024.0 * 1024.0);
  try {
    kv::RunReport report = kv::runService(flags.service);
    printReport(flags.service, report);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kvstore: %s\n", error.what());
    return 1;
  }
  return 0;
}
