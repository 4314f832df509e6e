// Recording and live inputs of the analyzer.
#include "input.h"

#include "model_json.h"
#include "scope.h"
#include "wire/codec.h"
#include "wire/format_error.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <thread>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

namespace shapetrace::analyzer {

namespace {

// Each thread's bytes of event batches, from the recording's index: the work the analyzer plans
// its workers by. A frame's size is the distance to the next one (the last frame of a segment,
// of unknown size, is left out).
std::map<ThreadKey, uint64_t> batchBytesByThread(recording::RecordingReader& reader) {
  std::map<ThreadKey, uint64_t> bytes;
  for (uint32_t position = 0; position < reader.segmentCount(); ++position) {
    const std::vector<recording::IndexRecord>& index =
        reader.index(reader.segmentNumber(position));
    for (size_t i = 0; i + 1 < index.size(); ++i)
      if (index[i].kind == static_cast<uint8_t>(wire::ItemKind::EventBatch) &&
          index[i + 1].offset > index[i].offset)
        bytes[ThreadKey{index[i].process, index[i].thread}] += index[i + 1].offset - index[i].offset;
  }
  return bytes;
}

} // namespace

void readRecording(recording::RecordingReader& reader, Analyzer& analyzer,
                   std::string_view command, const TimeWindow& window) {
  // Read whole, a recording holds every thread from its first batch; a window leaves some out.
  if (window.whole()) analyzer.readsFromStart();
  analyzer.planWorkers(batchBytesByThread(reader));
  std::optional<WindowFilter> filter;
  if (!window.whole()) filter.emplace(window, recordingStartNs(reader));
  while (auto item = reader.nextItem())
    if (!filter || filter->admit(*item)) analyzer.consume(std::move(*item));
  analyzer.count(Stat::recording_damage, reader.damage().size());
  if (const auto& deleted = reader.retention())
    analyzer.count(Stat::retention_deleted_events, deleted->events);
  analyzer.count(Stat::undecodable_messages, reader.undecodable());
  warnOfDamage(reader, command);
}

void warnOfDamage(const recording::RecordingReader& reader, std::string_view command) {
  for (const recording::Damage& d : reader.damage())
    std::fprintf(stderr, "shapetrace %.*s: warning: %s\n", static_cast<int>(command.size()),
                 command.data(), recording::describeDamage(d).c_str());
}

Analysis analyzeRecording(recording::RecordingReader& reader, Analyzer& analyzer,
                          std::string_view command, const TimeWindow& window) {
  readRecording(reader, analyzer, command, window);
  analyzer.finish();
  Analysis analysis = analyzer.snapshot();
  warnOfLoss(analysis, command);
  return analysis;
}

void warnOfLoss(const Analysis& analysis, std::string_view command) {
  if (const std::string loss = inputLossLine(analysis); !loss.empty())
    std::fprintf(stderr, "shapetrace %.*s: %s\n", static_cast<int>(command.size()),
                 command.data(), loss.c_str());
}

TimeWindow parseTimeWindow(std::string_view text) {
  const size_t dots = text.find("..");
  if (dots == std::string_view::npos)
    throw std::invalid_argument("time window '" + std::string(text) +
                                "': expected FROM..TO (for example 2s..5s, ..10s, 500ms..)");
  TimeWindow window{std::string(text.substr(0, dots)), std::string(text.substr(dots + 2))};
  for (const std::string* side : {&window.from, &window.to})
    if (const std::string why = checkTime(*side); !side->empty() && !why.empty())
      throw std::invalid_argument("time window '" + std::string(text) + "': " + why);
  // Both relative or both absolute: their order is known without the recording.
  if (!window.from.empty() && !window.to.empty() &&
      parseTime(window.from, 0) >= parseTime(window.to, 0) &&
      (window.from.find_first_not_of("0123456789") == std::string::npos) ==
          (window.to.find_first_not_of("0123456789") == std::string::npos))
    throw std::invalid_argument("time window '" + std::string(text) + "': FROM is not before TO");
  return window;
}

uint64_t recordingStartNs(recording::RecordingReader& reader) {
  uint64_t start = UINT64_MAX;
  for (uint32_t position = 0; position < reader.segmentCount(); ++position)
    for (const recording::IndexRecord& record : reader.index(reader.segmentNumber(position)))
      if (record.kind == static_cast<uint8_t>(wire::ItemKind::EventBatch))
        start = std::min(start, record.time_ns);
  return start == UINT64_MAX ? 0 : start;
}

uint64_t recordingEndNs(recording::RecordingReader& reader) {
  // A thread's batches are in time order: its last event is in the batch that starts last.
  struct Place {
    uint64_t time_ns = 0;
    uint32_t segment = 0;
    uint64_t offset = 0;
  };
  std::map<ThreadKey, Place> last;
  for (uint32_t position = 0; position < reader.segmentCount(); ++position) {
    const uint32_t segment = reader.segmentNumber(position);
    for (const recording::IndexRecord& record : reader.index(segment))
      if (record.kind == static_cast<uint8_t>(wire::ItemKind::EventBatch)) {
        Place& place = last[ThreadKey{record.process, record.thread}];
        if (record.time_ns >= place.time_ns) place = {record.time_ns, segment, record.offset};
      }
  }
  uint64_t end = 0;
  for (const auto& [thread, place] : last) {
    end = std::max(end, place.time_ns);
    const auto frame = reader.readAt(place.segment, place.offset);
    if (!frame) continue;
    try {
      const wire::StreamItem item = wire::decodeItem(frame->message);
      if (const auto* batch = std::get_if<wire::EventBatch>(&item.body);
          batch && !batch->events.empty())
        end = std::max(end, batch->events.back().timestamp);
    } catch (const wire::FormatError&) {
    }
  }
  return end;
}

WindowFilter::WindowFilter(const TimeWindow& window, uint64_t start_ns)
    : from_ns_(window.from.empty() ? 0 : parseTime(window.from, start_ns)),
      to_ns_(window.to.empty() ? UINT64_MAX : parseTime(window.to, start_ns)) {}

bool WindowFilter::admit(wire::StreamItem& item) {
  if (auto* gap = std::get_if<wire::Gap>(&item.body)) {
    // The stack is unknown after a gap: start counting again.
    Depths& depths = depths_[{item.process, gap->thread}];
    if (gap->to_ns < from_ns_) depths = {};
    return gap->from_ns < to_ns_ && gap->to_ns >= from_ns_;
  }
  if (auto* end = std::get_if<wire::ThreadEnd>(&item.body)) {
    // The window leaves batches out: the end's count of them no longer tells a loss (0: unknown).
    end->batches = 0;
    return true;
  }
  auto* batch = std::get_if<wire::EventBatch>(&item.body);
  if (!batch) return true;
  Depths& depths = depths_[{item.process, batch->thread}];
  auto kept = batch->events.begin();
  for (const Event& event : batch->events) {
    const bool enter = event.kind == EventKind::Enter;
    if (event.timestamp < from_ns_) {
      if (enter) ++depths.before;
      else if (depths.before) --depths.before;
      continue;
    }
    if (event.timestamp >= to_ns_) break;
    if (enter) {
      ++depths.inside;
    } else if (depths.inside) {
      --depths.inside;
    } else if (depths.before) {
      --depths.before; // the exit of a call that started before the window
      continue;
    }
    *kept++ = event;
  }
  batch->events.erase(kept, batch->events.end());
  return !batch->events.empty();
}

namespace {

// Why a window held no call, for either way of writing a time: digits alone are the recording's
// clock (as the JSON model has it), a time with a unit counts from the first event.
std::string emptyWindowMessage(const std::string& path, const TimeWindow& window,
                               uint64_t start_ns) {
  return "no call of " + path + " finished within the time window " + window.from + ".." +
         window.to + " (digits alone are nanoseconds of the recording's clock, whose first event "
         "is at " + std::to_string(start_ns) + "; a time with a unit, such as 1.5s, counts from "
         "that first event)";
}

} // namespace

nlohmann::ordered_json loadRunModel(const std::string& path, const AnalysisSettings& settings,
                                    unsigned workers, std::vector<NamedExtension> extensions,
                                    std::string_view command, const TimeWindow& window) {
  namespace fs = std::filesystem;
  if (fs::is_directory(path)) {
    recording::RecordingReader reader(path, recording::RecordingReader::Pages::kReleaseBehind);
    Analyzer analyzer(settings, workers, std::move(extensions));
    const Analysis analysis = analyzeRecording(reader, analyzer, command, window);
    if (!window.whole() && analysis.calls == 0)
      throw std::runtime_error(emptyWindowMessage(path, window, recordingStartNs(reader)));
    return toJson(analysis);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + path +
                             " (a recording directory or an analysis JSON file)");
  if (!window.whole())
    throw std::runtime_error(path + " is an analysis JSON file: a time window needs a recording");
  try {
    return nlohmann::ordered_json::parse(in);
  } catch (const nlohmann::json::parse_error&) {
    throw std::runtime_error(path + " is neither a recording directory nor a JSON file");
  }
}

namespace {
std::string curveServerKey() {
  const char* key = std::getenv("SHAPETRACE_CURVE_SERVER_KEY");
  return key ? key : "";
}
} // namespace

LiveInput::LiveInput(const std::string& endpoint)
    : receiver_(context_, endpoint, curveServerKey()) {}

uint64_t LiveInput::feedRecorded(Analyzer& analyzer, uint64_t from, uint64_t to) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  uint64_t reached = from;
  for (;;) {
    // The collector writes (and retention deletes) while this reads: a segment gone between the
    // listing and the mapping is a try again later, never an end of the analysis.
    std::optional<recording::RecordingReader> opened;
    try {
      opened.emplace(recording_);
    } catch (const std::exception&) {
      return reached;
    }
    recording::RecordingReader& reader = *opened;
    const std::optional<recording::RetentionStats> retention = reader.retention();
    // The carry segment holds deleted segments' items without their batches, and a gap per
    // thread: the first frame after it has publish sequence `deleted + carried`.
    uint64_t position = 0, carried = 0;
    bool in_carry = retention.has_value();
    if (cursor_ && cursor_->position <= from && reader.seekTo(cursor_->segment, cursor_->offset)) {
      position = cursor_->position;
      in_carry = false;
    }
    try {
      while (auto frame = reader.next()) {
        if (in_carry && frame->segment != retention->carry_segment) {
          in_carry = false;
          position = retention->batches + retention->undecodable + carried -
                     std::min(carried, retention->gap_items);
        }
        if (in_carry) {
          ++carried;
          if (from > 0) continue; // before anything a resumed live still lacks
        } else {
          cursor_ = Cursor{frame->segment, frame->offset, position};
          if (position++ < from) continue;
        }
        if (!in_carry && position - 1 >= to) break;
        try {
          recorded_events_ += consume(analyzer, wire::decodeItem(frame->message));
        } catch (const wire::FormatError&) {
          ++undecodable_;
          analyzer.count(Stat::undecodable_messages);
        }
        if (!in_carry) reached = position;
      }
    } catch (const std::exception&) { // a segment deleted under the reader: next time
      return reached;
    }
    if (in_carry) // nothing but the carry
      reached = std::max(reached, retention->batches + retention->undecodable + carried -
                                      std::min(carried, retention->gap_items));
    // Resuming takes what is there; a fill waits for what the collector published.
    if (to == UINT64_MAX || reached >= to || std::chrono::steady_clock::now() >= deadline)
      return reached;
    // The collector publishes an item as soon as it is appended; its writer thread writes it
    // moments later.
    from = reached;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

uint64_t LiveInput::resumeFrom(const std::string& dir, Analyzer& analyzer) {
  recording_ = dir;
  analyzer.readsFromStart();
  const uint64_t before = items_;
  next_ = feedRecorded(analyzer, 0, UINT64_MAX);
  return items_ - before;
}

bool LiveInput::feed(Analyzer& analyzer, std::chrono::milliseconds timeout,
                     recording::RecordingWriter* record) {
  auto received = receiver_.take(timeout);
  if (!received) {
    // Resuming, an idle subscription may have lost what the collector published last (its queue
    // overflowed while the recording was replayed, then the collector stopped): the recording
    // has it.
    if (!recording_.empty()) {
      const uint64_t reached = feedRecorded(analyzer, next_, UINT64_MAX);
      filled_ += reached - next_;
      next_ = reached;
    }
    return false;
  }
  if (!recording_.empty()) {
    // Resuming: what the recording already gave is skipped, what the subscription lacks (it
    // connected after the collector published it, or its queue overflowed) comes from there.
    if (received->sequence < next_) return true;
    if (received->sequence > next_)
      filled_ += feedRecorded(analyzer, next_, received->sequence) - next_;
    next_ = received->sequence + 1;
  }
  const zmq::message_t& message = received->message;
  const std::span bytes(static_cast<const std::byte*>(message.data()), message.size());
  try {
    // Validated by the writer; one that does not decode is not recorded either.
    if (record != nullptr && message.size() % 8 == 0) record->append(bytes);
    // decodeItem copies only when the message is not 8-byte aligned.
    consume(analyzer, wire::decodeItem(bytes));
    return true;
  } catch (const wire::FormatError&) {
    ++undecodable_;
    analyzer.count(Stat::undecodable_messages);
    return false;
  }
}

uint64_t LiveInput::consume(Analyzer& analyzer, wire::StreamItem item) {
  const auto* batch = std::get_if<wire::EventBatch>(&item.body);
  const uint64_t events = batch ? batch->events.size() : 0;
  analyzer.consume(std::move(item));
  ++items_;
  analysed_events_ += events;
  return events;
}

void LiveInput::catchUp(Analyzer& analyzer, const std::function<bool()>& abandon,
                        const char* command, recording::RecordingWriter* record) {
  receiver_.stopReceiving();
  auto next_report = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (receiver_.backlog().queued_items > 0 && !abandon()) {
    feed(analyzer, std::chrono::milliseconds(0), record);
    if (std::chrono::steady_clock::now() < next_report) continue;
    const LiveProgress p = progress();
    std::fprintf(stderr,
                 "shapetrace %s: analysing what was received: %llu of %llu events (Ctrl-C again "
                 "to stop now)\n",
                 command, static_cast<unsigned long long>(p.analysed_events),
                 static_cast<unsigned long long>(p.received_events));
    next_report += std::chrono::seconds(1);
  }
}

LiveProgress LiveInput::progress() const {
  const LiveBacklog backlog = receiver_.backlog();
  return {backlog.received_events + recorded_events_, analysed_events_, backlog.queued_events,
          missed_counted_};
}

void LiveInput::countLoss(Analyzer& analyzer) {
  // Missed items the recording filled in are not lost.
  const uint64_t received_missed = receiver_.missed();
  const uint64_t missed = received_missed - std::min(received_missed, filled_);
  analyzer.count(Stat::live_items_missed, missed - std::min(missed, missed_counted_));
  const uint64_t malformed = receiver_.malformed();
  analyzer.count(Stat::undecodable_messages, malformed - malformed_counted_);
  undecodable_ += malformed - malformed_counted_;
  missed_counted_ = std::max(missed_counted_, missed);
  malformed_counted_ = malformed;
}

} // namespace shapetrace::analyzer
