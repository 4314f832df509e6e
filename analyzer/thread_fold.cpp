// Folding an ended thread's result into its process' folded threads.
#include "thread_fold.h"

#include "shape_merge.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <limits>

namespace shapetrace::analyzer {


ThreadResult foldedThreads(const ThreadAnalyzerSettings& settings) {
  ThreadResult folded;
  folded.timeline = OccurrenceTimeline(settings.timeline_bins);
  folded.shape_states.resize(1);
  return folded;
}

namespace {

// Adds `from` (a thread, or a process's folded threads) to `folded`: its function ids become
// `function_of`'s, its outliers are named by `name` (their process and thread).
template <typename FunctionOf, typename Name>
void addResult(ThreadResult& folded, const ThreadResult& from, FunctionOf&& function_of,
               Name&& name, const ThreadAnalyzerSettings& settings) {
  const std::vector<ShapeId> shape_map = mergeShapes(from.shapes, folded.shapes, function_of);
  folded.shape_states.resize(folded.shapes.size());
  for (ShapeId id = 1; id < shape_map.size(); ++id) {
    ShapeState& into = folded.shape_states[shape_map[id]];
    const ShapeState& state = from.shape_states[id];
    into.stats.merge(state.stats);
    into.calls += state.calls;
    into.outliers += state.outliers;
  }

  const std::vector<ShapeId> dag_map = mergeDag(from.dag, shape_map, folded.dag, function_of);
  folded.dag_stats.resize(folded.dag.size());
  for (ShapeId id = 1; id < dag_map.size() && id < from.dag_stats.size(); ++id) {
    DagStats& into = folded.dag_stats[dag_map[id]];
    const DagStats& stats = from.dag_stats[id];
    into.count += stats.count;
    into.sum = saturatingAdd(into.sum, stats.sum);
    into.sum_squares += stats.sum_squares;
  }

  for (const auto& [id, state] : from.functions) {
    FunctionState& into = folded.functions[function_of(id)];
    into.stats.merge(state.stats);
    into.outliers += state.outliers;
    into.calls += state.calls;
    into.inclusive_ns = saturatingAdd(into.inclusive_ns, state.inclusive_ns);
    into.busiest_thread_ns = std::max(into.busiest_thread_ns, state.busiest_thread_ns);
    into.threads += state.threads;
  }

  // Both lists are most extreme first: one merge, not a sort per result folded.
  std::vector<Outlier> named;
  named.reserve(from.outliers.size());
  for (Outlier outlier : from.outliers) {
    outlier.shape = shape_map[outlier.shape];
    outlier.function = function_of(outlier.function);
    name(outlier);
    named.push_back(outlier);
  }
  std::vector<Outlier> merged;
  merged.reserve(folded.outliers.size() + named.size());
  std::merge(folded.outliers.begin(), folded.outliers.end(), named.begin(), named.end(),
             std::back_inserter(merged), outlierBefore);
  folded.outliers = std::move(merged);
  if (folded.outliers.size() > settings.max_outliers) folded.outliers.resize(settings.max_outliers);

  folded.timeline.add(from.timeline, shape_map);
  folded.diagnostics.merge(from.diagnostics);
  folded.events += from.events;
  folded.calls += from.calls;
  folded.open_calls += from.open_calls;
  folded.outliers_found += from.outliers_found;
}

} // namespace

void foldThread(ThreadResult& folded, const ThreadResult& thread, const ThreadKey& key,
                const ThreadAnalyzerSettings& settings) {
  // The same process: its function ids are the folded threads' too.
  auto same = [](uint32_t function) { return function; };
  auto name = [&key](Outlier& outlier) {
    outlier.process = key.process;
    outlier.thread = key.thread;
  };
  addResult(folded, thread, same, name, settings);
  folded.folded_threads += 1;
}

void foldProcess(ThreadResult& folded, const ThreadResult& process_threads,
                 const std::function<uint32_t(uint32_t)>& function_of,
                 const ThreadAnalyzerSettings& settings) {
  auto named_already = [](Outlier&) {}; // the folded threads' outliers name their threads
  addResult(folded, process_threads, function_of, named_already, settings);
  folded.folded_threads += process_threads.folded_threads;
  folded.folded_processes += 1;
}

} // namespace shapetrace::analyzer
