// The text traces `shapetrace import` reads (import.cpp has the formats), parsed into per-thread
// events. Apart from the command so that the fuzzer (tests/collector/fuzz/import_fuzzer.cpp) reads
// them exactly as the command does.
#pragma once

#include "wire/event.h"

#include <cstdint>
#include <istream>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace shapetrace::cli {

struct ParsedTrace {
  std::vector<std::string> functions; // by id
  std::unordered_map<std::string, uint32_t> ids;
  std::map<uint32_t, std::vector<Event>> threads; // by thread id
  std::map<uint32_t, uint64_t> last_line;         // per thread, for error messages
};

// A record that cannot be read: "FILE:LINE: what".
class ImportError : public std::runtime_error {
public:
  ImportError(const std::string& file, size_t line, const std::string& what)
      : std::runtime_error(file + ":" + std::to_string(line) + ": " + what) {}
};

// Append `in`'s records to `trace`; `file` names it in errors. Throw ImportError.
void parseDinamite(std::istream& in, const std::string& file, ParsedTrace& trace);
void parseCsv(std::istream& in, const std::string& file, ParsedTrace& trace);

} // namespace shapetrace::cli
