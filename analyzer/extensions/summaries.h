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
// own cost (`shapetrace summarize --thread` summarises a whole thread). The rest are counted.
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
  uint64_t eventsNotSummarised() const { return dropped_; }

private:
  void push(uint32_t symbol) {
    if (sequitur_.length() >= max_events_ || !sequitur_.push(symbol)) ++dropped_;
  }
  uint32_t depth_;
  uint64_t max_events_;
  summaries::Sequitur sequitur_;
  uint64_t dropped_ = 0;
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
  // {"depth", "max_events", "threads": [{"process", "thread", "events", "events_not_summarised",
  //  "rules", "symbols", "phases": [{"rule", "repeat", "events", "label": [codes]}],
  //  "more_phases"}]}; label codes are model function indices (f: entry, -1 - f: exit).
  nlohmann::ordered_json result(const Analysis& analysis, FunctionIndex& functions) const override;

private:
  using Consumer = CallStreamConsumer<SummarySink>;
  uint32_t depth_;
  uint64_t max_events_;
  uint32_t max_depth_;
  std::map<ThreadKey, const Consumer*> consumers_;
};

} // namespace shapetrace::analyzer
