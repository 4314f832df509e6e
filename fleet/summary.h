// A host's summary for the fleet view: its analysis so far as per-thread results, encoded with
// stream/schema/summary.capnp (docs/fleet.md). The summary is cumulative, so the latest one of a
// host stands for everything the host analysed; merging the latest summary of every host with the
// analyzer's own merge (analysis.h) gives the model one analyzer computes over all their events.
#pragma once

#include "analyzer.h"
#include "live_progress.h"
#include "thread_result.h"
#include "wire/codec.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace shapetrace::fleet {

// Where a summary comes from and which one it is.
struct SummaryHeader {
  std::string host;
  uint64_t sequence = 0;     // 1, 2, ... per host
  int64_t window_end_ns = 0; // CLOCK_REALTIME when it was taken
  std::string recording;     // the host's recording directory, "" when unknown
  uint64_t run = 0;          // drawn when the host's publisher starts (a restart is a new run)
  analyzer::LiveProgress progress{}; // the host's analysis when the summary was taken
  bool final = false;              // the host's last summary (its analysis stopped)
};

struct HostThread {
  analyzer::ThreadKey key;
  std::string name;
  bool ended = false;
  analyzer::ThreadResult result; // without the DAG (not carried)
};

struct HostSummary {
  SummaryHeader header;
  analyzer::FunctionTables functions; // of the processes of `threads`
  std::vector<HostThread> threads;
  analyzer::Diagnostics diagnostics; // counted before the threads
};

// Encodes the analyzer's current per-thread results, with the functions their processes named: a
// Cap'n Proto message compressed as one zstd frame (timeline cells and histograms compress ~10x).
wire::Bytes encodeSummary(const SummaryHeader& header,
                          const analyzer::Analyzer::MergeInputs& inputs);

// Decodes and validates a summary (Cap'n Proto's limits, then every id against what it refers to).
// Throws wire::FormatError, and nothing else, for bytes that are not a valid summary.
HostSummary decodeSummary(std::span<const std::byte> message);

// The zstd frame of a Cap'n Proto message, as encodeSummary() sends it.
wire::Bytes compressSummary(std::span<const std::byte> message);

// The largest summary decodeSummary() reads, once decompressed.
inline constexpr size_t kMaxSummaryBytes = size_t{256} << 20;

} // namespace shapetrace::fleet
