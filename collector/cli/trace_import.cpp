// The DINAMITE and CSV readers of `shapetrace import` (trace_import.h; import.cpp has the formats).
#include "trace_import.h"

#include "wire/event_codec.h"

#include <charconv>
#include <sstream>

namespace shapetrace::cli {
namespace {

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
  if (time > wire::kMaxEventTimestampNs)
    throw ImportError(file, line, "time " + std::to_string(time) +
                                      " is past the latest a recording holds (" +
                                      std::to_string(wire::kMaxEventTimestampNs) + " ns)");
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

} // namespace

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

namespace {

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

} // namespace

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

} // namespace shapetrace::cli
