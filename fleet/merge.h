// The fleet's model: the latest summary of every host, merged exactly (fleet/summary.h).
//
// Summaries arrive in any order and more than once (a host re-sends what NATS did not acknowledge,
// JetStream redelivers to a restarted consumer): per host and run only a summary with a larger
// sequence than the one kept replaces it; an equal or smaller one is counted as a duplicate and
// dropped. A gap in a run's sequence is counted (the later summary already holds what the missed
// ones held). A host whose analyzer restarted publishes a new run: both runs' latest summaries are
// merged (each holds the events its analyzer saw).
#pragma once

#include "analysis.h"
#include "fleet/summary.h"

#include <map>
#include <string>
#include <vector>

namespace shapetrace::fleet {

struct FleetCounters {
  uint64_t accepted = 0;
  uint64_t duplicates = 0; // a (host, sequence) not newer than the host's latest
  uint64_t malformed = 0;  // not a summary this reader understands (counted by the caller)
  uint64_t skipped = 0;    // sequence numbers never received (superseded by a later summary)
};

class FleetModel {
public:
  enum class Offer { kAccepted, kDuplicate };
  Offer offer(HostSummary summary);
  void countMalformed() { ++counters_.malformed; }

  // The merged model of every host's latest summary; with `host`, of that host's only (all its
  // runs): the fleet view's per-host filter.
  analyzer::Analysis merge(const analyzer::AnalysisSettings& settings,
                           const std::string& host = "") const;
  // The host each merged thread came from, by thread key.
  std::map<analyzer::ThreadKey, std::string> threadHosts() const;

  const FleetCounters& counters() const { return counters_; }
  // How far the hosts' analyses were in their latest summaries, summed: "analysed X of Y events
  // received" over the fleet.
  analyzer::LiveProgress progress() const;
  // The hosts whose latest summary is not their last (still running, or the last one did not
  // arrive): the fleet's picture of them is as of that summary.
  std::vector<std::string> hostsWithoutFinalSummary() const;
  using HostRun = std::pair<std::string, uint64_t>;
  const std::map<HostRun, HostSummary>& hosts() const { return hosts_; }

private:
  std::map<HostRun, HostSummary> hosts_;
  FleetCounters counters_;
};

} // namespace shapetrace::fleet
