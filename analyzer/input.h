// The analyzer's two inputs, written once for `analyze`, `report` and `live`: a recording on disk,
// and a live subscription to the collector's publish endpoint. Both feed an Analyzer item by item
// and count what was lost on the way as the analyzer's own diagnostics, so that every command
// reports damage and loss alike.
#pragma once

#include "analyzer.h"
#include "live_progress.h"
#include "live_receiver.h"
#include "recording/recording.h"

#include <zmq.hpp>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <cstdint>
#include <optional>
#include <map>
#include <string>
#include <string_view>

namespace shapetrace::analyzer {

// A stretch of a recording's time, [from, to): each end a time as scope.h's parseTime reads it
// (a number with a unit, from the recording's first event: "1.5s"; digits alone, absolute
// nanoseconds), empty for no bound.
struct TimeWindow {
  std::string from, to;
  bool whole() const { return from.empty() && to.empty(); }
};
// "FROM..TO", either side optional ("..5s", "10s.."): "2.5s..4s", "500ms..1500ms". Throws
// std::invalid_argument with what is wrong (no "..", a side that is not a time, FROM not before TO
// when both count from the same origin).
TimeWindow parseTimeWindow(std::string_view text);
// The time of the recording's first event (from the index, without reading the events); 0 for a
// recording without events.
uint64_t recordingStartNs(recording::RecordingReader& reader);
// The time of the recording's last event (each thread's last batch, found through the index, is
// decoded); 0 for a recording without events. With recordingStartNs, the span `info` prints.
uint64_t recordingEndNs(recording::RecordingReader& reader);

// Feeds only the calls of `window` to the analyzer: per thread, the events in the window, without
// the exits of calls entered before it (a call that started before the window is not in it; the
// calls it made in the window are, at the top of the thread's stack). Calls still open at the
// window's end stay open (counted as frames_open_at_thread_end). Other items pass unchanged.
class WindowFilter {
public:
  // `start_ns`: the recording's first event, where relative times count from.
  WindowFilter(const TimeWindow& window, uint64_t start_ns);
  // The item as the window lets it through; false when nothing of it is left.
  bool admit(wire::StreamItem& item);

private:
  uint64_t from_ns_, to_ns_;
  // Per thread: calls entered before the window still open, and calls entered in it still open.
  struct Depths {
    uint64_t before = 0, inside = 0;
  };
  std::map<std::pair<uint64_t, uint32_t>, Depths> depths_;
};

// Feeds every item of `reader`'s recording (of `window`) to `analyzer`; damaged stretches are counted
// (recording_damage, undecodable_messages) and each is reported on stderr as
// "shapetrace <command>: warning: segment N: ...".
void readRecording(recording::RecordingReader& reader, Analyzer& analyzer,
                   std::string_view command, const TimeWindow& window = {});
// "shapetrace <command>: warning: segment N: ..." on stderr for each damage `reader` met so far.
void warnOfDamage(const recording::RecordingReader& reader, std::string_view command);
// The same, then the input is over: the merged analysis of the whole recording.
Analysis analyzeRecording(recording::RecordingReader& reader, Analyzer& analyzer,
                          std::string_view command, const TimeWindow& window = {});
// Every command that reads a recording says so when it lost or repeated what was recorded:
// "shapetrace <command>: LOSS: ..." (scope.h inputLossLine) on stderr, nothing when it did not.
void warnOfLoss(const Analysis& analysis, std::string_view command);

// A run's analysis model (model_json.h) to compare with another: the analysis of a recording
// directory (restricted to `window`, with the settings and extensions given), or an analysis JSON
// file read as it is (a window is then an error). Throws std::runtime_error naming `path` when it
// is neither.
nlohmann::ordered_json loadRunModel(const std::string& path, const AnalysisSettings& settings,
                                    unsigned workers, std::vector<NamedExtension> extensions,
                                    std::string_view command, const TimeWindow& window = {});

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

  // Resuming from the collector's recording `dir` (a restarted `live --nats --recording`): feeds
  // every item recorded so far, then feed() skips the live items already fed and fills the live
  // items it did not receive from the recording. Exact because the collector records and then
  // publishes each item in one order: publish sequence numbers count recorded frames (those
  // retention deleted included, recording.h). Returns the items fed.
  uint64_t resumeFrom(const std::string& dir, Analyzer& analyzer);

  bool ended() const { return receiver_.ended(); }
  LiveProgress progress() const; // as of the last countLoss() for missed_items
  // Receives nothing more and feeds (and records, given `record`) what was received but not fed yet, saying how far it is on
  // stderr every second ("shapetrace <command>: ..."), until `abandon` returns true (a second
  // Ctrl-C): a live analysis that stops ends with everything it received, and no more.
  void catchUp(Analyzer& analyzer, const std::function<bool()>& abandon, const char* command,
               recording::RecordingWriter* record = nullptr);
  uint64_t items() const { return items_; }             // decoded and fed
  uint64_t undecodable() const { return undecodable_; } // not in the publish or the item format

private:
  // Feeds the recorded items with publish sequence in [from, to) from the recording; waits (up to
  // a few seconds) for those not on disk yet. Returns the sequence it reached.
  uint64_t feedRecorded(Analyzer& analyzer, uint64_t from, uint64_t to);
  // Feeds one decoded item; returns the events it carried.
  uint64_t consume(Analyzer& analyzer, wire::StreamItem item);

  zmq::context_t context_;
  LiveReceiver receiver_;
  std::string recording_; // resuming: the recording that fills what the subscription lacks
  uint64_t next_ = 0;     // resuming: the publish sequence of the next item to feed
  uint64_t filled_ = 0;   // items fed from the recording after resuming (not missed)
  // The last recorded frame read and its publish sequence: the next fill starts there instead of
  // at the beginning of the recording.
  struct Cursor {
    uint32_t segment = 0;
    uint64_t offset = 0, position = 0;
  };
  std::optional<Cursor> cursor_;
  uint64_t items_ = 0;
  uint64_t analysed_events_ = 0;
  uint64_t recorded_events_ = 0; // fed from the recording (resuming): received that way
  uint64_t undecodable_ = 0;
  uint64_t missed_counted_ = 0;
  uint64_t malformed_counted_ = 0;
};

} // namespace shapetrace::analyzer
