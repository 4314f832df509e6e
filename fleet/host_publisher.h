// A host's side of the fleet (`shapetrace live --nats`): every window, the analysis thread encodes
// the analyzer's per-thread results as a summary (summary.h) and hands it here; a thread of its own
// publishes it to JetStream, so a slow or absent NATS never holds up the analysis.
//
// The outbox holds one summary, the latest not yet acknowledged: summaries are cumulative, so a
// newer one supersedes an unsent older one and nothing is lost (the fleet counts the sequence
// numbers it never saw as skipped). While NATS is away the host keeps analysing (and its collector
// recording); the latest summary goes out once NATS is back.
#pragma once

#include "analyzer.h"
#include "fleet/nats.h"
#include "fleet/summary.h"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace shapetrace::fleet {

struct PublisherStatus {
  uint64_t encoded = 0;    // summaries taken
  uint64_t published = 0;  // acknowledged by JetStream
  uint64_t superseded = 0; // replaced by a newer one before they could be sent
  uint64_t failures = 0;   // publish attempts that failed (NATS away, refused...)
  uint64_t last_bytes = 0; // size of the latest summary
  bool connected = false;
  std::string last_error; // of the latest failed attempt, "" once one succeeds
  std::string state_error; // the state file could not be written (a restart starts a new run)
};

class HostPublisher {
public:
  // `state_file` (may be empty): where the run and the latest sequence persist, so that a host
  // restarted on the same recording continues its run (`live --nats --recording`, docs/fleet.md
  // "Restarts"). Throws std::runtime_error when it exists but is not this host's state.
  HostPublisher(const NatsSettings& settings, std::string stream, std::string host,
                std::string recording, std::string state_file = "");
  ~HostPublisher(); // tries to deliver the last summary for a moment, then gives up
  HostPublisher(const HostPublisher&) = delete;
  HostPublisher& operator=(const HostPublisher&) = delete;

  // Whether the run continues one a previous process published (the state file held it).
  bool resumed() const { return resumed_; }
  uint64_t run() const { return run_; }
  // On the analysis thread: encodes the analyzer's current results as the next summary, with how
  // far the analysis is and whether it is the last (persists its sequence in the state file
  // first).
  void takeSummary(analyzer::Analyzer& analyzer, const analyzer::LiveProgress& progress = {},
                   bool final = false);
  PublisherStatus status() const;
  // Waits until every summary taken so far is acknowledged, or `timeout` passes.
  bool waitDelivered(std::chrono::milliseconds timeout);

private:
  struct Pending {
    uint64_t sequence = 0;
    wire::Bytes bytes;
  };
  void run(std::stop_token stop);

  void saveState();

  SummaryPublisher publisher_;
  const std::string host_, recording_, state_file_;
  uint64_t run_ = 0; // this publisher's run: message ids stay unique across restarts
  uint64_t sequence_ = 0;
  bool resumed_ = false;
  mutable std::mutex mutex_;
  std::condition_variable_any changed_;
  std::optional<Pending> outbox_;
  PublisherStatus status_;
  std::jthread thread_;
};

} // namespace shapetrace::fleet
