// The analyzer's benchmark: a synthetic multi-threaded trace written as a real recording, then
// analysed from disk.
//
//   analyzer_bench generate DIR [--events 100000000] [--threads 4] [--seed 1]
//   analyzer_bench measure DIR [--jobs N]
//
// generate: 300 functions in 6 levels of 50; each non-leaf function calls 2-4 functions of the
// next level: 90% of call sites are taken always, inside a loop whose repetition varies per call
// (1 to 1, 2, 4 or 8 times); the others are single optional calls, taken in some of the four
// request modes (8%) or rarely (2%, p = 0.0001). So shapes vary a little and repetition a lot. Each thread runs top-level "requests"
// (level-0 functions) until it has its share of the events. Durations: per-function base cost
// 20-200 ns with +-20% jitter, one call in 10000 twenty times slower (outliers). Events go out in
// batches of 4096 per thread, threads interleaved, through the collector's RecordingWriter.
//
// measure: times, in one process and on the same recording, (1) reading and decoding every item
// (the floor: what any consumer of the recording pays) and (2) the whole analysis (read, decode,
// analyse, merge, cluster, JSON model) with --jobs workers. Prints wall and CPU seconds and events
// per second per core. tests/bench/analyzer_bench.sh runs both plus `shapetrace analyze` under
// /usr/bin/time for peak memory; figures in docs/BENCHMARKS.md.
#include "analyzer.h"
#include "model_json.h"
#include "recording/recording.h"
#include "thread_analyzer.h"
#include "wire/codec.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using shapetrace::Event;
using shapetrace::EventKind;
namespace wire = shapetrace::wire;

constexpr uint32_t kLevels = 6;
constexpr uint32_t kPerLevel = 50;
constexpr uint32_t kFunctions = kLevels * kPerLevel;
constexpr size_t kBatchEvents = 4096;

struct CallSite {
  uint32_t callee;
  uint32_t max_reps;
  uint32_t modes;     // the request modes (bits 0-3) in which the call is made
  double probability; // and then with this probability
};

struct Program {
  std::vector<std::vector<CallSite>> sites; // per function
  std::vector<uint64_t> base_ns;            // per function
};

Program makeProgram(std::mt19937_64& rng) {
  Program p;
  p.sites.resize(kFunctions);
  p.base_ns.resize(kFunctions);
  for (uint32_t f = 0; f < kFunctions; ++f) {
    p.base_ns[f] = 20 + rng() % 181;
    const uint32_t level = f / kPerLevel;
    if (level + 1 == kLevels) continue;
    const uint32_t n = 2 + static_cast<uint32_t>(rng() % 3);
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t callee = (level + 1) * kPerLevel + static_cast<uint32_t>(rng() % kPerLevel);
      const uint32_t reps[] = {1, 1, 2, 4, 8};
      const uint64_t kind = rng() % 100;
      // Optional calls depend on the request's mode (as code paths depend on a request's kind), not
      // on a coin flip per call: flipped inside loops, every subset of a callee's variants would be
      // a new shape, far more variety than real programs show (the paper: ~1300 shapes in 100M
      // events). A few rare calls are coin flips and keep adding shapes slowly.
      if (kind < 90)
        p.sites[f].push_back({callee, reps[rng() % 5], 0xf, 1.0});
      else if (kind < 98)
        p.sites[f].push_back({callee, 1, static_cast<uint32_t>(rng() % 15 + 1), 1.0});
      else
        p.sites[f].push_back({callee, 1, 0xf, 0.0001});
    }
  }
  return p;
}

// One thread's calls, produced one event at a time so threads can be interleaved in batches.
class ThreadGenerator {
public:
  ThreadGenerator(const Program& program, uint64_t seed) : program_(program), rng_(seed) {}

  Event next() {
    if (stack_.empty()) {
      mode_ = static_cast<uint32_t>(rng_() % 4);
      return push(static_cast<uint32_t>(rng_() % kPerLevel));
    }
    for (;;) {
      Frame& top = stack_.back();
      if (top.reps_left > 0) {
        --top.reps_left;
        return push(program_.sites[top.function][top.site].callee);
      }
      if (++top.site < program_.sites[top.function].size()) {
        const CallSite& site = program_.sites[top.function][top.site];
        if ((site.modes >> mode_ & 1) != 0 &&
            (site.probability >= 1.0 || uniform_(rng_) < site.probability))
          top.reps_left = 1 + static_cast<uint32_t>(rng_() % site.max_reps);
        continue;
      }
      const uint32_t function = top.function;
      stack_.pop_back();
      time_ += cost(function) / 2;
      return Event{time_, function, EventKind::Exit};
    }
  }

private:
  struct Frame {
    uint32_t function;
    size_t site; // the call site being worked on; starts one before the first
    uint32_t reps_left;
  };

  uint64_t cost(uint32_t function) {
    const uint64_t base = program_.base_ns[function];
    uint64_t ns = base * 8 / 10 + rng_() % (base * 4 / 10 + 1);
    if (rng_() % 10000 == 0) ns *= 20;
    return ns;
  }
  Event push(uint32_t function) {
    time_ += cost(function) / 2;
    stack_.push_back(Frame{function, SIZE_MAX, 0});
    return Event{time_, function, EventKind::Enter};
  }

  const Program& program_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> uniform_{0.0, 1.0};
  std::vector<Frame> stack_;
  uint32_t mode_ = 0;
  uint64_t time_ = 1'000'000'000;
};

uint64_t argValue(int argc, char** argv, const char* name, uint64_t fallback) {
  for (int i = 0; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::stoull(argv[i + 1]);
  return fallback;
}

int generate(const std::string& dir, uint64_t events, uint32_t threads, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Program program = makeProgram(rng);
  shapetrace::recording::RecordingWriter writer(dir);
  wire::ModuleTable table{"synthetic", 0, {}};
  for (uint32_t f = 0; f < kFunctions; ++f) {
    const std::string name = "level" + std::to_string(f / kPerLevel) + "_fn" + std::to_string(f);
    table.functions.push_back({f, "_Z" + name, name + "()", "synthetic.cpp", f + 1});
  }
  writer.append(wire::encodeItem({1, table}));
  std::vector<ThreadGenerator> generators;
  for (uint32_t t = 0; t < threads; ++t) {
    generators.emplace_back(program, seed * 1000 + t);
    writer.append(wire::encodeItem({1, wire::ThreadStart{t + 1, 0, "worker-" + std::to_string(t)}}));
  }
  std::vector<Event> batch(kBatchEvents);
  std::vector<uint64_t> sequence(threads, 0);
  uint64_t written = 0;
  while (written < events) {
    for (uint32_t t = 0; t < threads && written < events; ++t) {
      for (Event& e : batch)
        e = generators[t].next();
      writer.append(wire::encodeEventBatch(1, t + 1, sequence[t]++, batch));
      written += batch.size();
    }
  }
  if (!writer.close()) {
    std::fprintf(stderr, "analyzer_bench: %s\n", writer.error().c_str());
    return 1;
  }
  std::printf("wrote %llu events of %u threads to %s\n", static_cast<unsigned long long>(written),
              threads, dir.c_str());
  return 0;
}

double cpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

struct Timing {
  double wall = 0, cpu = 0;
};

template <typename F> Timing timed(F&& work) {
  const auto start = std::chrono::steady_clock::now();
  const double cpu = cpuSeconds();
  work();
  return Timing{std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                cpuSeconds() - cpu};
}

void report(const char* what, uint64_t events, Timing t) {
  std::printf("%-34s %8.2f s wall %8.2f s cpu %8.1f M events/s %8.1f M events/s per core\n", what,
              t.wall, t.cpu, static_cast<double>(events) / t.wall / 1e6,
              static_cast<double>(events) / t.cpu / 1e6);
}

int measure(const std::string& dir, unsigned jobs) {
  shapetrace::analyzer::keepFreedMemory();
  uint64_t events = 0;
  const Timing decode = timed([&] {
    shapetrace::recording::RecordingReader reader(dir);
    while (auto item = reader.nextItem())
      if (auto* b = std::get_if<wire::EventBatch>(&item->body)) events += b->events.size();
  });
  report("read + decode only", events, decode);
  {
    // The per-thread core alone, on events already decoded in memory: no I/O, no allocation.
    std::map<uint32_t, std::vector<Event>> by_thread;
    shapetrace::recording::RecordingReader reader(dir);
    uint64_t core_events = 0;
    while (auto item = reader.nextItem())
      if (auto* b = std::get_if<wire::EventBatch>(&item->body)) {
        auto& v = by_thread[b->thread];
        if (v.size() > 20'000'000) continue; // bound the memory this takes
        v.insert(v.end(), b->events.begin(), b->events.end());
        core_events += b->events.size();
      }
    const Timing core = timed([&] {
      for (auto& [thread, thread_events] : by_thread) {
        shapetrace::analyzer::ThreadAnalyzer analyzer;
        analyzer.onEvents(thread_events);
      }
    });
    report("ThreadAnalyzer core (in memory)", core_events, core);
  }
  std::string json;
  Timing stream, finishing;
  const Timing analyze = timed([&] {
    shapetrace::analyzer::Analyzer analyzer({}, jobs);
    stream = timed([&] {
      shapetrace::recording::RecordingReader reader(dir);
      while (auto item = reader.nextItem())
        analyzer.consume(std::move(*item));
      analyzer.finish();
    });
    finishing = timed([&] { json = shapetrace::analyzer::toJson(analyzer.snapshot()).dump(); });
  });
  const std::string label = "whole analysis, jobs " + std::to_string(jobs);
  report("  of which the stream (per thread)", events, stream);
  std::printf("  of which merge, clustering, JSON  %8.2f s wall %8.2f s cpu\n", finishing.wall, finishing.cpu);
  report(label.c_str(), events, analyze);
  const auto model = nlohmann::json::parse(json);
  std::printf("shapes %s, dag nodes %s, clusters %s, ribbons %s, outliers kept %zu, json %zu bytes\n",
              model["summary"]["shapes"].dump().c_str(), model["summary"]["dag_nodes"].dump().c_str(),
              model["summary"]["clusters"].dump().c_str(), model["summary"]["ribbons"].dump().c_str(),
              model["outliers"].size(), json.size());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: analyzer_bench generate DIR [--events N] [--threads T] [--seed S]\n"
                         "       analyzer_bench measure DIR [--jobs N]\n");
    return 2;
  }
  const std::string mode = argv[1], dir = argv[2];
  try {
    if (mode == "generate")
      return generate(dir, argValue(argc, argv, "--events", 100'000'000),
                      static_cast<uint32_t>(argValue(argc, argv, "--threads", 4)),
                      argValue(argc, argv, "--seed", 1));
    if (mode == "measure")
      return measure(dir, static_cast<unsigned>(argValue(
                              argc, argv, "--jobs", std::max(1u, std::thread::hardware_concurrency()))));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "analyzer_bench: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "analyzer_bench: unknown mode '%s'\n", mode.c_str());
  return 2;
}
