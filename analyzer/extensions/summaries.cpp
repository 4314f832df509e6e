// Every thread's phases, from the call stream.
#include "extensions/summaries.h"

#include "summaries/grammar.h"
#include "summaries/symbols.h"

namespace shapetrace::analyzer {

void SummarySink::onEnter(uint32_t function, uint32_t depth, uint64_t) {
  if (depth <= depth_) push(summaries::enterSymbol(function));
}

void SummarySink::onCall(const FinishedCall& call) {
  if (call.depth <= depth_) push(summaries::exitSymbol(call.function));
}

std::unique_ptr<ThreadConsumer> SummariesExtension::consumerFor(const ThreadKey& thread) {
  auto consumer = std::make_unique<Consumer>(max_depth_, depth_, max_events_);
  consumers_[thread] = consumer.get();
  return consumer;
}

void SummariesExtension::foldThread(const ThreadKey& thread) {
  if (consumers_.erase(thread) != 0) ++folded_threads_;
}

nlohmann::ordered_json SummariesExtension::result(const Analysis&, FunctionIndex& functions) const {
  using Json = nlohmann::ordered_json;
  Json threads = Json::array();
  for (const auto& [key, consumer] : consumers_) {
    const SummarySink& sink = consumer->sink();
    summaries::GrammarTable table;
    table.add(sink.sequitur().grammar());
    const auto processed = summaries::postProcess(table, {});
    Json summary = summaries::summaryJson(summaries::summarize(processed, 0), kMaxPhases,
                                          kLabelEvents);
    // Labels name the process's functions: the model's indices instead.
    for (auto& phase : summary["phases"])
      for (auto& code : phase["label"]) {
        const int64_t c = code.get<int64_t>();
        const auto id = static_cast<uint32_t>(c >= 0 ? c : -1 - c);
        const auto index = static_cast<int64_t>(functions.indexOf(key.process, id));
        code = c >= 0 ? index : -1 - index;
      }
    Json thread{{"process", key.process},
                {"thread", key.thread},
                {"events", sink.sequitur().length()},
                {"thread_events_read", consumer->read()},
                {"thread_events_skipped", consumer->skipped()},
                {"rules", sink.sequitur().ruleCount() - 1},
                {"symbols", sink.sequitur().symbols()}};
    thread["phases"] = std::move(summary["phases"]);
    thread["more_phases"] = summary["more_phases"];
    threads.push_back(std::move(thread));
  }
  Json json{{"depth", depth_}, {"max_events", max_events_}, {"threads", std::move(threads)}};
  if (folded_threads_ != 0) json["folded_threads"] = folded_threads_;
  return json;
}

} // namespace shapetrace::analyzer
