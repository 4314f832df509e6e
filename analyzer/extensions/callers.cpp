// Calls and time by caller, from the call stream.
#include "extensions/callers.h"

#include "thread_fold.h"

namespace shapetrace::analyzer {

void CallerSink::onEnter(uint32_t, uint32_t, uint64_t) { callee_ns_.push_back(0); }

[[gnu::always_inline]] inline CallerTotals& CallerSink::totalsOf(uint32_t caller,
                                                                 uint32_t callee) {
  if (const uint32_t* last = last_edge_.find(callee);
      last != nullptr && edges_[*last].caller == caller) [[likely]]
    return edges_[*last].totals;
  return findEdge(caller, callee);
}

CallerTotals& CallerSink::findEdge(uint32_t caller, uint32_t callee) {
  const auto [edge, added] =
      edge_of_.tryEmplace(caller, callee, static_cast<uint32_t>(edges_.size()));
  if (added) edges_.push_back(Edge{caller, callee, {}});
  last_edge_[callee] = edge;
  return edges_[edge].totals;
}

void CallerSink::onCall(const FinishedCall& call) {
  const uint64_t callees = callee_ns_.back();
  callee_ns_.pop_back();
  account(call, callees);
}

void CallerSink::account(const FinishedCall& call, uint64_t callees) {
  CallerTotals& totals = totalsOf(call.caller, call.function);
  ++totals.calls;
  if (!call.measured) return;
  const uint64_t duration = call.exit_ns - call.enter_ns;
  ++totals.measured;
  totals.total_ns += duration;
  // A callee's time can exceed its caller's only for timestamps clamped after a regression.
  totals.self_ns += duration > callees ? duration - callees : 0;
  if (!callee_ns_.empty()) callee_ns_.back() += duration;
}

void CallerSink::add(const CallerSink& other) {
  for (const Edge& edge : other.edges_)
    findEdge(edge.caller, edge.callee).add(edge.totals);
}

void CallerSink::add(const CallerSink& other,
                     const std::function<uint32_t(uint32_t)>& function_of) {
  for (const Edge& edge : other.edges_)
    findEdge(edge.caller == kNoCaller ? kNoCaller : function_of(edge.caller),
             function_of(edge.callee))
        .add(edge.totals);
}

std::unique_ptr<ThreadConsumer> CallersExtension::consumerFor(const ThreadKey& thread) {
  auto consumer = std::make_unique<Consumer>(ShapeLookup::none(), max_depth_);
  consumers_[thread] = consumer.get();
  return consumer;
}

void CallersExtension::foldThread(const ThreadKey& thread) {
  const auto it = consumers_.find(thread);
  if (it == consumers_.end()) return;
  folded_[thread.process].add(it->second->sink());
  consumers_.erase(it);
}

void CallersExtension::foldProcess(uint64_t process,
                                   const std::function<uint32_t(uint32_t)>& function_of) {
  const auto it = folded_.find(process);
  if (it == folded_.end()) return;
  folded_[kFoldedProcessesKey].add(it->second, function_of);
  folded_.erase(it);
}

std::map<std::pair<uint32_t, uint32_t>, CallerTotals>
CallersExtension::merged(FunctionIndex& functions) const {
  // The threads in (process, thread) order, a process's folded threads last, as the model lists
  // them.
  std::map<ThreadKey, const CallerSink*> sinks;
  for (const auto& [thread, consumer] : consumers_)
    sinks[thread] = &consumer->sink();
  for (const auto& [process, sink] : folded_)
    sinks[ThreadKey{process, kFoldedThreadsId}] = &sink;
  std::map<std::pair<uint32_t, uint32_t>, CallerTotals> out;
  // Edges in order of first call, so that functions new to the model are added in the same order
  // every time.
  for (const auto& [thread, sink] : sinks)
    for (const CallerSink::Edge& edge : sink->edges()) {
      const uint32_t caller =
          edge.caller == kNoCaller ? UINT32_MAX : functions.indexOf(thread.process, edge.caller);
      out[{caller, functions.indexOf(thread.process, edge.callee)}].add(edge.totals);
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
