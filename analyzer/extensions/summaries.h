// The extension "summaries": every thread's execution summarised as the ThreadViewer proposal's
// summary view shows it (001; docs/summaries.md): Sequitur over the thread's calls in enter-exit
// form, 002's run-length post-processing, and the top rule's items as the thread's phases, a
// repetition of a body one phase with its count.
//
// Each thread's calls come through the call stream (call_stack.h) into a SummarySink, online, so
// the live page's summary grows with the run. Only calls at most `depth` levels deep (a thread's
// outermost calls are at 0) are summarised: the phases of a thread are its top-level structure,
// and the deep calls that make up most events would cost most of the time. At most `max_events`
// events of each thread are summarised, its first ones: Sequitur costs about 100 ns an event, a
// tenth of a second per million, which the whole run's events would multiply past the analysis'
// own cost (`shapetrace summarize --thread` summarises a whole thread). Once a thread's summary is
// full its consumer only counts the events of the batches that follow, without the call stream.
// The result names functions by the model's indices.
#pragma once

#include "extension.h"
#include "summaries/sequitur.h"

#include <cstdint>
#include <map>

namespace shapetrace::analyzer {

class SummarySink {
public:
  SummarySink(uint32_t depth, uint64_t max_events)
      : depth_(depth), max_events_(max_events),
        sequitur_(summaries::Sequitur::Options{false, max_events}) {}
  void onEnter(uint32_t function, uint32_t depth, uint64_t time_ns);
  void onCall(const FinishedCall& call);
  void onReset() {}

  const summaries::Sequitur& sequitur() const { return sequitur_; }
  bool full() const { return full_; }

private:
  void push(uint32_t symbol) {
    if (full_) return;
    if (!sequitur_.push(symbol) || sequitur_.length() >= max_events_) full_ = true;
  }
  uint32_t depth_;
  uint64_t max_events_;
  summaries::Sequitur sequitur_;
  bool full_ = false;
};

class SummariesExtension final : public Extension {
public:
  static constexpr std::string_view kName = "summaries";
  static constexpr uint32_t kDefaultDepth = 2;
  static constexpr uint64_t kDefaultMaxEvents = uint64_t{1} << 20;
  static constexpr size_t kMaxPhases = 400;
  static constexpr size_t kLabelEvents = 12;

  explicit SummariesExtension(uint32_t depth = kDefaultDepth,
                              uint64_t max_events = kDefaultMaxEvents,
                              uint32_t max_depth = kDefaultMaxDepth)
      : depth_(depth), max_events_(max_events), max_depth_(max_depth) {}
  std::unique_ptr<ThreadConsumer> consumerFor(const ThreadKey& thread) override;
  // A summary is one thread's phases: a folded thread's is not kept, only counted (the threads
  // kept whole and those alive keep theirs).
  bool foldsThreads() const override { return true; }
  bool foldsProcesses() const override { return true; } // it keeps nothing per process
  void foldThread(const ThreadKey& thread) override;
  // {"depth", "max_events", "threads": [{"process", "thread", "events" (summarised),
  //  "thread_events_read", "thread_events_skipped" (the batches after the summary was full),
  //  "rules", "symbols", "phases": [{"rule", "repeat", "events", "label": [codes]}],
  //  "more_phases"}], "folded_threads" (only when threads were folded: how many threads' summaries
  //  were not kept)}; label codes are model function indices (f: entry, -1 - f: exit).
  nlohmann::ordered_json result(const Analysis& analysis, FunctionIndex& functions) const override;

private:
  // The call stream into a SummarySink until it is full; then only a count of events.
  class Consumer final : public ThreadConsumer {
  public:
    Consumer(uint32_t max_depth, uint32_t depth, uint64_t max_events)
        : stream_(ShapeLookup::none(), max_depth, depth, max_events) {}
    void onBatch(uint64_t sequence, std::span<const Event> events,
                 std::span<const wire::TracerWait> waits = {}) override {
      if (stream_.sink().full()) {
        skipped_ += events.size();
        return;
      }
      read_ += events.size();
      stream_.onBatch(sequence, events, waits);
    }
    void onGapMarker(uint64_t dropped) override {
      if (!stream_.sink().full()) stream_.onGapMarker(dropped);
    }
    void onEnd() override {
      if (!stream_.sink().full()) stream_.onEnd();
    }
    const SummarySink& sink() const { return stream_.sink(); }
    uint64_t read() const { return read_; }
    uint64_t skipped() const { return skipped_; }

  private:
    CallStreamConsumer<SummarySink> stream_;
    uint64_t read_ = 0, skipped_ = 0;
  };
  uint32_t depth_;
  uint64_t max_events_;
  uint32_t max_depth_;
  std::map<ThreadKey, const Consumer*> consumers_;
  uint64_t folded_threads_ = 0;
};

} // namespace shapetrace::analyzer
