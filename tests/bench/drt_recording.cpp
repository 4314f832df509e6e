// Writes one of the DRT paper's micro-benchmarks (analyzer/explain/microbenchmarks.h) as a
// recording, for `shapetrace explain` at the paper's scale (docs/BENCHMARKS.md):
//
//   drt_recording NAME DIR [--traces N]      (for example R_6400 /tmp/r6400)
//   shapetrace explain DIR --function trace --input size --no-shapes
//
// One thread calls `trace` once per trace of the benchmark: the call annotates its input as
// "size", calls each function the trace calls (f1..fn, then the dummies) as often as the generator
// says, 1 ns each, and lasts the trace's time in microseconds (at least its children's time plus
// 2 ns). --traces keeps the first N traces. Not a test: it makes no assertion.
#include "explain/microbenchmarks.h"
#include "recording/recording.h"
#include "wire/codec.h"
#include "wire/items.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace shapetrace;
using analyzer::drt::MicroBenchmark;

namespace {

constexpr uint64_t kProcess = 1;
constexpr uint32_t kThread = 1;
constexpr uint32_t kTrace = 1; // function ids: trace, then the benchmark's functions from 2

int fail(const std::string& message) {
  std::fprintf(stderr, "drt_recording: %s\n", message.c_str());
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 3 || std::strcmp(argv[1], "--help") == 0)
    return fail("usage: drt_recording NAME DIR [--traces N]");
  const std::string name = argv[1], dir = argv[2];
  uint32_t traces = UINT32_MAX;
  if (argc == 5 && std::strcmp(argv[3], "--traces") == 0)
    traces = static_cast<uint32_t>(std::stoul(argv[4]));
  const MicroBenchmark* bench = nullptr;
  for (const MicroBenchmark& b : analyzer::drt::paperMicroBenchmarks())
    if (b.name == name) bench = &b;
  if (bench == nullptr)
    return fail("unknown benchmark '" + name + "'");
  const auto generated = analyzer::drt::generateMicroBenchmark(*bench);
  traces = std::min(traces, bench->traces);

  recording::RecordingWriter writer(dir);
  auto append = [&](const wire::StreamItem& item) {
    if (!writer.append(wire::encodeItem(item)))
      throw std::runtime_error("cannot write to " + dir);
  };
  wire::ProcessStart start;
  start.pid = 1;
  start.executable = "/bench/" + name;
  append({kProcess, start});
  wire::ModuleTable table{"bench", 0, {}};
  table.functions.push_back({kTrace, "_Z5tracev", "trace()", "bench.cpp", 1});
  for (uint32_t f = 0; f < bench->all_functions; ++f) {
    const std::string fname = generated.features.names[f].substr(sizeof("calls of ") - 1);
    table.functions.push_back({kTrace + 1 + f, "_Z" + fname, fname, "bench.cpp", 2 + f});
  }
  append({kProcess, table});
  append({kProcess, wire::ThreadStart{kThread, 0, "main"}});

  // Per trace, the functions it calls and how often (the features are sparse columns).
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> calls(traces);
  for (uint32_t f = 0; f < bench->all_functions; ++f)
    for (const auto& entry : generated.features.columns[f])
      if (entry.point < traces)
        calls[entry.point].push_back({kTrace + 1 + f, static_cast<uint32_t>(entry.value)});

  uint64_t time = 1000, sequence = 0;
  wire::EventBatch batch{kThread, 0, {}, {}, {}};
  for (uint32_t t = 0; t < traces; ++t) {
    uint64_t children = 0;
    for (const auto& [f, count] : calls[t]) children += count;
    const double us = generated.points.times(t);
    const uint64_t duration =
        std::max<uint64_t>(children + 2, static_cast<uint64_t>(std::llround(std::max(0.0, us) * 1000)));
    const uint64_t end = time + duration;
    batch.events.push_back({time, kTrace, EventKind::Enter});
    batch.annotations.push_back({kThread, time, "size",
                                 static_cast<int64_t>(generated.points.inputs(t, 0)),
                                 static_cast<uint32_t>(batch.events.size())});
    uint64_t at = time + 1;
    for (const auto& [f, count] : calls[t])
      for (uint32_t i = 0; i < count; ++i) {
        batch.events.push_back({at, f, EventKind::Enter});
        batch.events.push_back({at + 1, f, EventKind::Exit});
        ++at;
      }
    batch.events.push_back({end, kTrace, EventKind::Exit});
    time = end + 100;
    if (batch.events.size() >= 65536 || t + 1 == traces) {
      batch.sequence = sequence++;
      append({kProcess, batch});
      batch.events.clear();
      batch.annotations.clear();
    }
  }
  append({kProcess, wire::ThreadEnd{kThread, time, 0, 0, sequence}});
  wire::ProcessEnd end;
  end.timestamp_ns = time;
  append({kProcess, end});
  if (!writer.close())
    return fail("cannot close " + dir);
  std::printf("%s: %u traces, %u functions, written to %s\n", name.c_str(), traces,
              bench->all_functions, dir.c_str());
  return 0;
}
