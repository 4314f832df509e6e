// `shapetrace import --format dinamite|csv FILE -o DIR`: turns a text trace of (thread, function,
// direction, time) records from another tool into a recording, so that every shapetrace command
// and the analyzer work on it.
//
//   dinamite: whitespace-separated "THREAD FUNCTION DIRECTION TIME" per line, as DINAMITE writes
//             them; blank lines and lines starting with '#' are skipped
//   csv:      a header line "tid,func,dir,time_ns", then one record per line; a function name
//             containing commas or quotes is quoted ("a, b" with "" for a quote)
//
// DIRECTION is 0 (enter) or 1 (exit); TIME is an integer in nanoseconds that must not decrease
// within a thread. Function ids are assigned in order of first appearance.
#include "cli/command.h"
#include "recording/recording.h"
#include "wire/codec.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_map>

namespace shapetrace::cli {
namespace {

constexpr size_t kEventsPerBatch = 4096;

struct ImportOptions {
  std::string format = "dinamite";
  std::string file;
  std::string out;
};

struct ParsedTrace {
  std::vector<std::string> functions; // by id
  std::unordered_map<std::string, uint32_t> ids;
  std::map<uint32_t, std::vector<Event>> threads; // by thread id
  std::map<uint32_t, uint64_t> last_line;         // per thread, for error messages
};

class ImportError : public std::runtime_error {
public:
  ImportError(const std::string& file, size_t line, const std::string& what)
      : std::runtime_error(file + ":" + std::to_string(line) + ": " + what) {}
};

template <typename T> bool parseInteger(std::string_view text, T& value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

void addRecord(ParsedTrace& trace, const std::string& file, size_t line,
               std::string_view tid_text, const std::string& function, std::string_view dir_text,
               std::string_view time_text) {
  uint32_t tid = 0;
  uint64_t time = 0;
  if (!parseInteger(tid_text, tid))
    throw ImportError(file, line, "thread '" + std::string(tid_text) +
                                      "' is not a non-negative integer");
  if (function.empty())
    throw ImportError(file, line, "empty function name");
  if (dir_text != "0" && dir_text != "1")
    throw ImportError(file, line, "direction '" + std::string(dir_text) +
                                      "' must be 0 (enter) or 1 (exit)");
  if (!parseInteger(time_text, time))
    throw ImportError(file, line, "time '" + std::string(time_text) +
                                      "' is not a non-negative integer (nanoseconds)");
  auto [it, inserted] = trace.ids.try_emplace(function, static_cast<uint32_t>(trace.functions.size()));
  if (inserted)
    trace.functions.push_back(function);
  std::vector<Event>& events = trace.threads[tid];
  if (!events.empty() && time < events.back().timestamp)
    throw ImportError(file, line,
                      "time " + std::to_string(time) + " of thread " + std::to_string(tid) +
                          " is earlier than its previous record (line " +
                          std::to_string(trace.last_line[tid]) + ", time " +
                          std::to_string(events.back().timestamp) +
                          "); records of a thread must be in time order");
  events.push_back(Event{time, it->second, dir_text == "0" ? EventKind::Enter : EventKind::Exit});
  trace.last_line[tid] = line;
}

void parseDinamite(std::istream& in, const std::string& file, ParsedTrace& trace) {
  std::string text;
  for (size_t line = 1; std::getline(in, text); ++line) {
    std::istringstream fields(text);
    std::vector<std::string> f;
    for (std::string field; fields >> field;)
      f.push_back(field);
    if (f.empty() || f[0][0] == '#')
      continue;
    if (f.size() != 4)
      throw ImportError(file, line, "expected 4 fields (thread function direction time), got " +
                                        std::to_string(f.size()));
    addRecord(trace, file, line, f[0], f[1], f[2], f[3]);
  }
}

// Splits one CSV line; quoted fields may hold commas and doubled quotes.
std::vector<std::string> splitCsv(const std::string& text, const std::string& file, size_t line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"' && fields.back().empty()) {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  if (quoted)
    throw ImportError(file, line, "unterminated quoted field");
  return fields;
}

void parseCsv(std::istream& in, const std::string& file, ParsedTrace& trace) {
  std::string text;
  size_t line = 0;
  bool header = false;
  while (std::getline(in, text)) {
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    auto f = splitCsv(text, file, line);
    for (std::string& field : f) {
      field.erase(0, field.find_first_not_of(" \t"));
      field.erase(field.find_last_not_of(" \t") + 1);
    }
    if (!header) {
      if (f != std::vector<std::string>{"tid", "func", "dir", "time_ns"})
        throw ImportError(file, line, "expected the header 'tid,func,dir,time_ns'");
      header = true;
      continue;
    }
    if (f.size() != 4)
      throw ImportError(file, line,
                        "expected 4 fields (tid,func,dir,time_ns), got " + std::to_string(f.size()));
    addRecord(trace, file, line, f[0], f[1], f[2], f[3]);
  }
  if (!header)
    throw ImportError(file, line ? line : 1, "empty file: expected the header 'tid,func,dir,time_ns'");
}

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
