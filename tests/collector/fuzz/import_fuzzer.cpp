// libFuzzer target for `shapetrace import`'s readers of DINAMITE and CSV traces (trace_import.h):
// every input is read as both formats.
//
// Oracles besides "no crash, no sanitizer report": a read either throws ImportError or gives a
// trace in which each thread's times never decrease, every function id names a function, each
// name has one id, and there are no more records than lines; and each thread's events survive
// the batch encoding `import` writes them with.
//
// Build and run (bounded, as CI does):
//   cmake --build build --target import_fuzzer
//   build/tests/collector/import_fuzzer -max_total_time=60 -rss_limit_mb=2048 \
//     tests/collector/fuzz/import_corpus
#include "cli/trace_import.h"
#include "wire/codec.h"
#include "wire/format_error.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <source_location>
#include <sstream>
#include <string>

using namespace shapetrace;

namespace {

// An oracle that failed names its line (then aborts: libFuzzer keeps the input).
void check(bool condition, std::source_location where = std::source_location::current()) {
  if (condition)
    return;
  std::fprintf(stderr, "check failed: %s:%u\n", where.file_name(), where.line());
  std::abort();
}

void checkTrace(const cli::ParsedTrace& trace, size_t lines) {
  check(trace.ids.size() == trace.functions.size());
  for (const auto& [name, id] : trace.ids)
    check(id < trace.functions.size() && trace.functions[id] == name && !name.empty());
  size_t records = 0;
  for (const auto& [tid, events] : trace.threads) {
    check(!events.empty());
    records += events.size();
    for (size_t i = 0; i < events.size(); ++i) {
      check(events[i].function_id < trace.functions.size());
      check(i == 0 || events[i - 1].timestamp <= events[i].timestamp);
    }
    const wire::StreamItem item = wire::decodeItem(wire::encodeEventBatch(1, tid, 0, events));
    check(std::get<wire::EventBatch>(item.body).events == events);
  }
  check(records <= lines);
}

void fuzzFormat(const std::string& text, bool csv) {
  std::istringstream in(text);
  cli::ParsedTrace trace;
  try {
    if (csv)
      cli::parseCsv(in, "fuzz.csv", trace);
    else
      cli::parseDinamite(in, "fuzz.txt", trace);
  } catch (const cli::ImportError&) {
    return;
  }
  checkTrace(trace, static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzzFormat(text, false);
  fuzzFormat(text, true);
  return 0;
}
