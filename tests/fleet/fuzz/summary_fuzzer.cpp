// libFuzzer target for the fleet's reading of a summary (fleet/summary.h decodeSummary) and what
// `shapetrace fleet` does with one it accepts (fleet/merge.h: offer and merge).
//
// An input is the summary's Cap'n Proto message; the target compresses it as a host would, so
// that mutations reach the message. Inputs whose first byte is odd are also decoded as they are
// (a frame that is not zstd, or a hostile zstd header).
//
// Oracles besides "no crash, no sanitizer report, no memory past -rss_limit_mb": decodeSummary
// throws FormatError and nothing else; a summary it accepts re-encodes to a summary that decodes
// and re-encodes to the same bytes; and the fleet merges it.
//
// Build and run (bounded, as CI does):
//   cmake --build build --target summary_fuzzer
//   build/tests/fleet/summary_fuzzer -max_total_time=60 -rss_limit_mb=2048 \
//     build/tests/fleet/summary_fuzzer_corpus
#include "fleet/merge.h"
#include "fleet/summary.h"
#include "wire/format_error.h"

#include <cstdio>
#include <cstdlib>
#include <source_location>
#include <optional>

using namespace shapetrace;

namespace {

// An oracle that failed names its line (then aborts: libFuzzer keeps the input).
void check(bool condition, std::source_location where = std::source_location::current()) {
  if (condition)
    return;
  std::fprintf(stderr, "check failed: %s:%u\n", where.file_name(), where.line());
  std::abort();
}

std::optional<fleet::HostSummary> decode(std::span<const std::byte> bytes) {
  try {
    return fleet::decodeSummary(bytes);
  } catch (const wire::FormatError&) {
    return std::nullopt;
  }
}

wire::Bytes encode(const fleet::HostSummary& summary) {
  analyzer::Analyzer::MergeInputs inputs;
  for (const fleet::HostThread& thread : summary.threads)
    inputs.threads.push_back({thread.key, thread.name, thread.ended, &thread.result});
  inputs.functions = &summary.functions;
  inputs.input_diagnostics = summary.diagnostics;
  return fleet::encodeSummary(summary.header, inputs);
}

void fuzzSummary(std::span<const std::byte> compressed) {
  std::optional<fleet::HostSummary> summary = decode(compressed);
  if (!summary)
    return;
  const wire::Bytes again = encode(*summary);
  const std::optional<fleet::HostSummary> decoded_again = decode(again);
  check(decoded_again.has_value());
  check(encode(*decoded_again) == again);
  fleet::FleetModel fleet;
  check(fleet.offer(std::move(*summary)) == fleet::FleetModel::Offer::kAccepted);
  fleet.merge(analyzer::AnalysisSettings{});
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  fuzzSummary(fleet::compressSummary(bytes));
  if (size > 0 && (data[0] & 1))
    fuzzSummary(bytes);
  return 0;
}
