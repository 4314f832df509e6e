// The analyzer's two inputs, written once for `analyze`, `report` and `live`: a recording on disk,
// and a live subscription to the collector's publish endpoint. Both feed an Analyzer item by item
// and count what was lost on the way as the analyzer's own diagnostics, so that every command
// reports damage and loss alike.
#pragma once

#include "analyzer.h"
#include "fanout/fanout.h"
#include "recording/recording.h"

#include <zmq.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace shapetrace::analyzer {

// Feeds every item of `reader`'s recording to `analyzer`; damaged stretches are counted
// (recording_damage, undecodable_messages) and each is reported on stderr as
// "shapetrace <command>: warning: segment N: ...".
void readRecording(recording::RecordingReader& reader, Analyzer& analyzer,
                   std::string_view command);
// The same, then the input is over: the merged analysis of the whole recording.
Analysis analyzeRecording(recording::RecordingReader& reader, Analyzer& analyzer,
                          std::string_view command);

// A subscription to a collector's --publish endpoint (CURVE when SHAPETRACE_CURVE_SERVER_KEY is
// set). It only connects: whether a collector is there is known once an item arrives.
class LiveInput {
public:
  // Throws zmq::error_t for an endpoint ZeroMQ rejects.
  explicit LiveInput(const std::string& endpoint);

  // Waits up to `timeout` for the next item and feeds it to `analyzer` (and, given `record`,
  // appends it to that recording first). False when none came (a timeout, the collector's end
  // marker, an undecodable message).
  bool feed(Analyzer& analyzer, std::chrono::milliseconds timeout,
            recording::RecordingWriter* record = nullptr);
  // Brings the analyzer's loss counts (live_items_missed, undecodable_messages) up to date.
  void countLoss(Analyzer& analyzer);

  bool ended() const { return subscriber_.ended(); }
  uint64_t items() const { return items_; }             // decoded and fed
  uint64_t undecodable() const { return undecodable_; } // not in the publish or the item format

private:
  zmq::context_t context_;
  fanout::Subscriber subscriber_;
  uint64_t items_ = 0;
  uint64_t undecodable_ = 0;
  uint64_t missed_counted_ = 0;
  uint64_t malformed_counted_ = 0;
};

} // namespace shapetrace::analyzer
