// Reading one instance from a recording being written, for the live page.
#include "report/live_instance.h"

#include "flame/flame_extension.h"
#include "recording/recording.h"
#include "report/instance_reader.h"
#include "report/report_data.h"
#include "scope.h"
#include "export/scoped_calls.h"

#include <charconv>
#include <stdexcept>

namespace shapetrace::analyzer::report {
namespace {

const std::string* parameter(const std::multimap<std::string, std::string>& params,
                             const std::string& name) {
  const auto it = params.find(name);
  return it == params.end() ? nullptr : &it->second;
}

template <typename T> T number(const std::string& text, const std::string& name) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size())
    throw std::invalid_argument("parameter " + name + " is not a number: '" + text + "'");
  return value;
}

template <typename T>
T required(const std::multimap<std::string, std::string>& params, const std::string& name) {
  const std::string* text = parameter(params, name);
  if (!text) throw std::invalid_argument("parameter " + name + " is missing");
  return number<T>(*text, name);
}

} // namespace

InstanceQuery parseInstanceQuery(const std::multimap<std::string, std::string>& params) {
  InstanceQuery q;
  q.process = required<uint64_t>(params, "process");
  q.thread = required<uint32_t>(params, "thread");
  q.from_ns = required<uint64_t>(params, "from_ns");
  q.to_ns = required<uint64_t>(params, "to_ns");
  if (q.to_ns <= q.from_ns) throw std::invalid_argument("to_ns is not after from_ns");
  if (parameter(params, "cluster")) {
    q.cluster = required<ClusterId>(params, "cluster");
  } else if (parameter(params, "function")) {
    q.function = required<uint32_t>(params, "function");
    q.duration_ns = required<uint64_t>(params, "duration_ns");
  } else {
    throw std::invalid_argument("give cluster, or function and duration_ns");
  }
  return q;
}

std::optional<nlohmann::ordered_json> readLiveInstance(const std::string& recording,
                                                       const Analysis& analysis,
                                                       const InstanceQuery& query,
                                                       size_t max_calls) {
  const ThreadSummary* thread = nullptr;
  for (const ThreadSummary& t : analysis.threads)
    if (t.key.thread == query.thread && t.key.process == query.process)
      thread = &t;
  if (!thread) return std::nullopt;
  recording::RecordingReader reader(recording);
  InstanceReader instances(reader, analysis);
  const auto& cluster_of = analysis.clustering.cluster_of_shape;
  auto found = instances.find(
      thread->key.process, thread->key.thread, query.from_ns, query.to_ns,
      [&](const CallCandidate& c) {
        if (query.cluster)
          return c.shape != kNullShape && c.shape < cluster_of.size() &&
                 cluster_of[c.shape] == *query.cluster;
        return c.function == *query.function && c.duration_ns == *query.duration_ns;
      },
      max_calls);
  if (!found) return std::nullopt;
  const ReportInstance instance{query.cluster ? InstanceReason::kFirst : InstanceReason::kOutlier,
                                query.cluster.value_or(kNoCluster), std::move(*found)};
  auto json = instanceJson(0, instance, analysis);
  json["reason"] = query.cluster ? "live" : "outlier";
  return json;
}

nlohmann::ordered_json readLiveFlame(const std::string& recording, const Analysis& analysis,
                                     uint64_t run_start_ns,
                                     const std::multimap<std::string, std::string>& params) {
  ScopeRequest request;
  if (parameter(params, "thread")) {
    const auto process = required<uint64_t>(params, "process");
    const uint32_t thread = required<uint32_t>(params, "thread");
    for (const ThreadSummary& t : analysis.threads)
      if (t.key.thread == thread && t.key.process == process)
        request.thread = std::to_string(t.key.process) + ":" + std::to_string(thread);
    if (request.thread.empty()) throw ScopeError("no such thread in the analysis");
  }
  if (parameter(params, "from_ns")) request.from = std::to_string(required<uint64_t>(params, "from_ns"));
  if (parameter(params, "to_ns")) request.to = std::to_string(required<uint64_t>(params, "to_ns"));
  if (parameter(params, "cluster")) request.cluster = std::to_string(required<ClusterId>(params, "cluster"));
  const Scope scope = resolveScope(analysis, run_start_ns, request);
  recording::RecordingReader reader(recording);
  exports::ScopedCalls calls(false);
  const summaries::ReplayStats stats = summaries::replayScope(reader, analysis, scope, calls);
  return {{"scope", scope.description}, {"calls", stats.calls}, {"nodes", treeColumns(calls.tree())}};
}

} // namespace shapetrace::analyzer::report
