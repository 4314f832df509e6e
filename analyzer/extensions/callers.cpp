// Calls and time by caller, from the call stream.
#include "extensions/callers.h"

namespace shapetrace::analyzer {

void CallerSink::onEnter(uint32_t, uint32_t, uint64_t) { callee_ns_.push_back(0); }

void CallerSink::onCall(const FinishedCall& call) {
  const uint64_t callees = callee_ns_.back();
  callee_ns_.pop_back();
  CallerTotals& totals = totals_[uint64_t{call.caller} << 32 | call.function];
  ++totals.calls;
  if (!call.measured) return;
  const uint64_t duration = call.exit_ns - call.enter_ns;
  ++totals.measured;
  totals.total_ns += duration;
  // A callee's time can exceed its caller's only for timestamps clamped after a regression.
  totals.self_ns += duration > callees ? duration - callees : 0;
  if (!callee_ns_.empty()) callee_ns_.back() += duration;
}

std::unique_ptr<ThreadConsumer> CallersExtension::consumerFor(const ThreadKey& thread) {
  auto consumer = std::make_unique<Consumer>(ShapeLookup::none());
  consumers_[thread] = consumer.get();
  return consumer;
}

std::map<std::pair<uint32_t, uint32_t>, CallerTotals>
CallersExtension::merged(FunctionIndex& functions) const {
  std::map<std::pair<uint32_t, uint32_t>, CallerTotals> out;
  for (const auto& [thread, consumer] : consumers_) {
    // Sorted, so that functions new to the model are added in the same order every time.
    const std::map<uint64_t, CallerTotals> edges(consumer->sink().totals().begin(),
                                                 consumer->sink().totals().end());
    for (const auto& [key, totals] : edges) {
      const auto caller = static_cast<uint32_t>(key >> 32);
      const auto callee = static_cast<uint32_t>(key);
      const uint32_t caller_index =
          caller == kNoCaller ? UINT32_MAX : functions.indexOf(thread.process, caller);
      out[{caller_index, functions.indexOf(thread.process, callee)}].add(totals);
    }
  }
  return out;
}

nlohmann::ordered_json CallersExtension::result(const Analysis&, FunctionIndex& functions) const {
  std::map<std::pair<uint32_t, uint32_t>, CallerTotals> by_callee;
  for (const auto& [edge, totals] : merged(functions))
    by_callee[{edge.second, edge.first}] = totals;
  nlohmann::ordered_json edges = nlohmann::ordered_json::array();
  for (const auto& [edge, totals] : by_callee) {
    const auto [callee, caller] = edge;
    edges.push_back({{"caller", caller == UINT32_MAX ? nlohmann::ordered_json(nullptr)
                                                     : nlohmann::ordered_json(caller)},
                     {"callee", callee},
                     {"calls", totals.calls},
                     {"measured", totals.measured},
                     {"total_ns", totals.total_ns},
                     {"self_ns", totals.self_ns}});
  }
  return {{"edges", std::move(edges)}};
}

} // namespace shapetrace::analyzer
