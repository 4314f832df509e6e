// `shapetrace import --format dinamite|csv FILE -o DIR`: turns a text trace of (thread, function,
// direction, time) records from another tool into a recording, so that every shapetrace command
// and the analyzer work on it.
//
//   dinamite: whitespace-separated "THREAD FUNCTION DIRECTION TIME" per line, as DINAMITE writes
//             them; blank lines and lines starting with '#' are skipped
//   csv:      a header line "tid,func,dir,time_ns", then one record per line; a function name
//             containing commas or quotes is quoted ("a, b" with "" for a quote)
//
// DIRECTION is 0 (enter) or 1 (exit); TIME is an integer in nanoseconds, at most 2^61-1 (what the
// stream encodes exactly), that must not decrease within a thread. Function ids are assigned in
// order of first appearance.
#include "cli/command.h"
#include "trace_import.h"
#include "recording/recording.h"
#include "wire/codec.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <tuple>

namespace shapetrace::cli {
namespace {

constexpr size_t kEventsPerBatch = 4096;

struct ImportOptions {
  std::string format = "dinamite";
  std::string file;
  std::string out;
};

void writeRecording(const ParsedTrace& trace, const ImportOptions& o) {
  recording::RecordingWriter writer(o.out);
  const uint64_t process = std::hash<std::string>{}(o.file) | 1;
  uint64_t first = UINT64_MAX, last = 0, events = 0;
  for (const auto& [tid, ev] : trace.threads) {
    first = std::min(first, ev.front().timestamp);
    last = std::max(last, ev.back().timestamp);
    events += ev.size();
  }
  auto append = [&](wire::ItemBody body) {
    if (!writer.append(wire::encodeItem(wire::StreamItem{process, std::move(body)})))
      throw std::runtime_error(writer.error());
  };
  wire::ProcessStart start;
  start.executable = o.file;
  start.arguments = {"imported from " + o.format};
  start.start_ns = first;
  append(start);
  wire::ModuleTable table{"import:" + o.file, 0, {}};
  for (uint32_t id = 0; id < trace.functions.size(); ++id)
    table.functions.push_back({id, trace.functions[id], trace.functions[id], "", 0});
  append(table);
  for (const auto& [tid, ev] : trace.threads)
    append(wire::ThreadStart{tid, ev.front().timestamp, ""});
  // Batches of all threads, interleaved by their first event's time as a live stream would be.
  struct Chunk {
    uint32_t tid;
    uint64_t sequence;
    std::span<const Event> events;
  };
  std::vector<Chunk> chunks;
  for (const auto& [tid, ev] : trace.threads)
    for (size_t i = 0; i < ev.size(); i += kEventsPerBatch)
      chunks.push_back({tid, i / kEventsPerBatch,
                        std::span<const Event>(ev).subspan(i, std::min(kEventsPerBatch,
                                                                       ev.size() - i))});
  std::sort(chunks.begin(), chunks.end(), [](const Chunk& a, const Chunk& b) {
    return std::tuple(a.events.front().timestamp, a.tid, a.sequence) <
           std::tuple(b.events.front().timestamp, b.tid, b.sequence);
  });
  for (const Chunk& c : chunks)
    if (!writer.append(wire::encodeEventBatch(process, c.tid, c.sequence, c.events)))
      throw std::runtime_error(writer.error());
  for (const auto& [tid, ev] : trace.threads)
    append(wire::ThreadEnd{tid, ev.back().timestamp, ev.size(), 0,
                           (ev.size() + kEventsPerBatch - 1) / kEventsPerBatch});
  append(wire::ProcessEnd{last, events, 0, 0, wire::EndReason::Exit, ""});
  if (!writer.close())
    throw std::runtime_error(writer.error());
  std::fprintf(stderr, "shapetrace import: %llu events of %zu thread(s), %zu function(s) -> %s\n",
               (unsigned long long)events, trace.threads.size(), trace.functions.size(),
               o.out.c_str());
}

int runImport(const ImportOptions& o) {
  std::ifstream in(o.file);
  if (!in)
    throw std::runtime_error("cannot open " + o.file);
  ParsedTrace trace;
  if (o.format == "dinamite")
    parseDinamite(in, o.file, trace);
  else
    parseCsv(in, o.file, trace);
  if (trace.threads.empty())
    throw std::runtime_error(o.file + " holds no records");
  writeRecording(trace, o);
  return 0;
}

Runner setupImport(CLI::App& command) {
  auto o = std::make_shared<ImportOptions>();
  command.add_option("--format,-f", o->format, "dinamite (THREAD FUNCTION DIR TIME lines) or csv "
                                               "(header tid,func,dir,time_ns)")
      ->check(CLI::IsMember({"dinamite", "csv"}))
      ->default_val("dinamite");
  command.add_option("file", o->file, "the trace to import")->required();
  command.add_option("--out,-o", o->out, "recording directory to create")->required();
  return [o] { return runImport(*o); };
}

const Registration import{"import", "Convert a DINAMITE or CSV trace into a recording",
                          setupImport};

} // namespace
} // namespace shapetrace::cli
