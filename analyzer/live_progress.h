// How far a live analysis is: a headline figure wherever its model is shown ("analysed X of Y
// events received": the live page and terminal, /metrics, a host's fleet summary and the fleet
// view), so that lag is never mistaken for a complete view.
#pragma once

#include <cstdint>

namespace shapetrace::analyzer {

struct LiveProgress {
  uint64_t received_events = 0; // received from the collector (resuming: read from its recording too)
  uint64_t analysed_events = 0; // of those, fed to the analysis
  uint64_t waiting_events = 0;  // received, waiting in the receiver's queue
  uint64_t missed_items = 0;    // published by the collector, never received (live_items_missed)

  LiveProgress& operator+=(const LiveProgress& other) {
    received_events += other.received_events;
    analysed_events += other.analysed_events;
    waiting_events += other.waiting_events;
    missed_items += other.missed_items;
    return *this;
  }
};

} // namespace shapetrace::analyzer
