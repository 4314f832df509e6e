// Folding an ended thread's result into its process' folded threads.
#include "thread_fold.h"

#include "shape_merge.h"

#include <algorithm>
#include <iterator>
#include <limits>

namespace shapetrace::analyzer {


ThreadResult foldedThreads(const ThreadAnalyzerSettings& settings) {
  ThreadResult folded;
  folded.timeline = OccurrenceTimeline(settings.timeline_bins);
  folded.shape_states.resize(1);
  return folded;
}

void foldThread(ThreadResult& folded, const ThreadResult& thread, const ThreadKey& key,
                const ThreadAnalyzerSettings& settings) {
  // The same process: its function ids are the folded threads' too.
  auto same = [](uint32_t function) { return function; };
  const std::vector<ShapeId> shape_map = mergeShapes(thread.shapes, folded.shapes, same);
  folded.shape_states.resize(folded.shapes.size());
  for (ShapeId id = 1; id < shape_map.size(); ++id) {
    ShapeState& into = folded.shape_states[shape_map[id]];
    const ShapeState& from = thread.shape_states[id];
    into.stats.merge(from.stats);
    into.calls += from.calls;
    into.outliers += from.outliers;
  }

  const std::vector<ShapeId> dag_map = mergeDag(thread.dag, shape_map, folded.dag, same);
  folded.dag_stats.resize(folded.dag.size());
  for (ShapeId id = 1; id < dag_map.size() && id < thread.dag_stats.size(); ++id) {
    DagStats& into = folded.dag_stats[dag_map[id]];
    const DagStats& from = thread.dag_stats[id];
    into.count += from.count;
    into.sum = saturatingAdd(into.sum, from.sum);
    into.sum_squares += from.sum_squares;
  }

  for (const auto& [id, from] : thread.functions) {
    FunctionState& into = folded.functions[id];
    into.stats.merge(from.stats);
    into.outliers += from.outliers;
    into.calls += from.calls;
    into.inclusive_ns = saturatingAdd(into.inclusive_ns, from.inclusive_ns);
    into.busiest_thread_ns = std::max(into.busiest_thread_ns, from.busiest_thread_ns);
    into.threads += from.threads;
  }

  // Both lists are most extreme first: one merge, not a sort per thread folded.
  std::vector<Outlier> named;
  named.reserve(thread.outliers.size());
  for (Outlier outlier : thread.outliers) {
    outlier.shape = shape_map[outlier.shape];
    outlier.process = key.process;
    outlier.thread = key.thread;
    named.push_back(outlier);
  }
  std::vector<Outlier> merged;
  merged.reserve(folded.outliers.size() + named.size());
  std::merge(folded.outliers.begin(), folded.outliers.end(), named.begin(), named.end(),
             std::back_inserter(merged), outlierBefore);
  folded.outliers = std::move(merged);
  if (folded.outliers.size() > settings.max_outliers) folded.outliers.resize(settings.max_outliers);

  folded.timeline.add(thread.timeline, shape_map);
  folded.diagnostics.merge(thread.diagnostics);
  folded.events += thread.events;
  folded.calls += thread.calls;
  folded.open_calls += thread.open_calls;
  folded.outliers_found += thread.outliers_found;
  folded.folded_threads += 1;
}

} // namespace shapetrace::analyzer
