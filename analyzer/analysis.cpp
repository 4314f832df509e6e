// Exact merge of per-thread analyses, then clustering, ribbons, Tables 1-2 and the timeline.
#include "analysis.h"

#include "id_table.h"
#include "shape_merge.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace shapetrace::analyzer {

FunctionName nameFunction(const wire::FunctionInfo* info, uint32_t id) {
  FunctionName name;
  name.known = info != nullptr;
  if (info != nullptr) {
    name.identity = !info->mangled_name.empty() ? info->mangled_name : info->demangled_name;
    name.name = !info->demangled_name.empty() ? info->demangled_name : info->mangled_name;
    name.mangled = info->mangled_name;
    name.file = info->source_file;
    name.line = info->line;
  }
  if (name.identity.empty()) name.identity = "fn#" + std::to_string(id);
  if (name.name.empty()) name.name = name.identity;
  return name;
}

FunctionIndex::FunctionIndex(Analysis& analysis, FunctionResolver resolve)
    : analysis_(analysis), resolve_(std::move(resolve)) {
  for (uint32_t index = 0; index < analysis.functions.size(); ++index)
    by_identity_.emplace(analysis.functions[index].identity, index);
}

uint32_t FunctionIndex::indexOf(uint64_t process, uint32_t id) {
  const auto key = std::pair{process, id};
  if (auto it = analysis_.function_index.find(key); it != analysis_.function_index.end())
    return it->second;
  FunctionName name = nameFunction(resolve_ ? resolve_(process, id) : nullptr, id);
  auto [it, added] =
      by_identity_.try_emplace(name.identity, static_cast<uint32_t>(analysis_.functions.size()));
  if (added) {
    if (!name.known) analysis_.diagnostics.add(Stat::unknown_function_ids);
    FunctionSummary summary;
    static_cast<FunctionName&>(summary) = std::move(name);
    analysis_.functions.push_back(std::move(summary));
  }
  analysis_.function_index.emplace(key, it->second);
  return it->second;
}

namespace {

// A process's function ids to analysis function indices, each looked up once: the DAG has a
// million nodes and more.
class ProcessFunctions {
public:
  ProcessFunctions(uint64_t process, FunctionIndex& functions)
      : process_(process), functions_(functions) {}
  uint32_t indexOf(uint32_t id) {
    if (const uint32_t* index = index_.find(id)) [[likely]]
      return *index;
    return index_[id] = functions_.indexOf(process_, id);
  }

private:
  uint64_t process_;
  FunctionIndex& functions_;
  IdTable<uint32_t> index_;
};

template <typename State> State& at(std::vector<State>& states, size_t index) {
  if (index >= states.size()) states.resize(index + 1);
  return states[index];
}

// A thread's shape and DAG node ids -> the analysis' ids.
struct IdMaps {
  std::vector<ShapeId> shapes;
  std::vector<ShapeId> dag;
};

IdMaps mergeThread(Analysis& analysis, const ThreadInput& input, FunctionIndex& functions) {
  const ThreadResult& thread = *input.result;
  const uint64_t process = input.key.process;
  ProcessFunctions process_functions(process, functions);
  ThreadSummary summary;
  summary.key = input.key;
  summary.name = input.name;
  summary.ended = input.ended;
  summary.folded_threads = thread.folded_threads;
  summary.folded_processes = thread.folded_processes;
  summary.events = thread.events;
  summary.calls = thread.calls;
  summary.open_calls = thread.open_calls;
  summary.diagnostics = thread.diagnostics;
  analysis.diagnostics.merge(thread.diagnostics);
  analysis.events += thread.events;
  analysis.calls += thread.calls;
  analysis.outliers_found += thread.outliers_found;

  for (const auto& [id, state] : thread.functions) {
    if (state.calls == 0) continue;
    FunctionSummary& f = analysis.functions[process_functions.indexOf(id)];
    f.stats.merge(state.stats);
    f.calls += state.calls;
    f.outliers += state.outliers;
    f.inclusive_ns = saturatingAdd(f.inclusive_ns, state.inclusive_ns);
    f.busiest_thread_ns = std::max(f.busiest_thread_ns, state.busiest_thread_ns);
    f.threads = static_cast<uint32_t>(std::min<uint64_t>(f.threads + state.threads, UINT32_MAX));
  }

  auto functionOf = [&process_functions](uint32_t id) { return process_functions.indexOf(id); };
  std::vector<ShapeId> shape_map = mergeShapes(thread.shapes, analysis.shapes, functionOf);
  for (ShapeId id = 1; id < shape_map.size(); ++id) {
    ShapeState& global = at(analysis.shape_states, shape_map[id]);
    const ShapeState& local = thread.shape_states[id];
    global.stats.merge(local.stats);
    global.calls += local.calls;
    global.outliers += local.outliers;
    summary.shapes.push_back(shape_map[id]);
  }
  std::sort(summary.shapes.begin(), summary.shapes.end());

  std::vector<ShapeId> dag_map = mergeDag(thread.dag, shape_map, analysis.dag, functionOf);

  for (Outlier outlier : thread.outliers) {
    if (thread.folded_threads == 0) {
      outlier.process = process;
      outlier.thread = input.key.thread;
    }
    outlier.function = process_functions.indexOf(outlier.function);
    outlier.shape = shape_map[outlier.shape];
    analysis.outliers.push_back(outlier);
  }
  analysis.threads.push_back(std::move(summary));
  return IdMaps{std::move(shape_map), std::move(dag_map)};
}

// Sums the threads' DAG statistics, once the DAG is complete: one array of the final size,
// instead of one grown (and copied) thread after thread.
void sumDagStats(Analysis& analysis, const std::vector<ThreadInput>& inputs,
                 const std::vector<IdMaps>& maps) {
  analysis.dag_stats.assign(analysis.dag.size(), DagTotals{});
  for (size_t t = 0; t < inputs.size(); ++t) {
    const auto& local = inputs[t].result->dag_stats;
    const std::vector<ShapeId>& to_global = maps[t].dag;
    for (ShapeId id = 1; id < to_global.size(); ++id) {
      DagTotals& global = analysis.dag_stats[to_global[id]];
      global.count += local[id].count;
      global.sum += local[id].sum;
      global.sum_squares += local[id].sum_squares;
    }
  }
}

void countTables(Analysis& analysis) {
  std::set<ShapeId> seen_shapes;
  std::set<ClusterId> seen_clusters;
  for (ThreadSummary& thread : analysis.threads) {
    ThreadCounts& counts = thread.counts;
    std::set<ClusterId> clusters;
    for (ShapeId shape : thread.shapes) {
      const ClusterId cluster = analysis.clustering.cluster_of_shape[shape];
      if (!analysis.clustering.clusters[cluster].trivial) clusters.insert(cluster);
      if (analysis.shapes.isLeaf(shape)) continue;
      ++counts.shapes_in_thread;
      if (seen_shapes.insert(shape).second) ++counts.additional_shapes;
    }
    counts.all_shapes = seen_shapes.size();
    counts.clusters_in_thread = clusters.size();
    for (ClusterId cluster : clusters)
      if (seen_clusters.insert(cluster).second) ++counts.additional_clusters;
    counts.all_clusters = seen_clusters.size();
  }
}

std::vector<TimelineCell> sumCells(const std::vector<const std::vector<TimelineCell>*>& lists) {
  std::map<uint64_t, TimelineCell> by_bin;
  for (const auto* cells : lists)
    for (const TimelineCell& cell : *cells) {
      TimelineCell& sum = by_bin[cell.bin];
      sum.bin = cell.bin;
      sum.count += cell.count;
      sum.busy_ns += cell.busy_ns;
    }
  std::vector<TimelineCell> out;
  out.reserve(by_bin.size());
  for (const auto& [bin, cell] : by_bin)
    out.push_back(cell);
  return out;
}

void buildRibbonsAndTimeline(Analysis& analysis, const std::vector<ThreadInput>& inputs,
                             const std::vector<IdMaps>& maps,
                             const ShapeRelations& relations) {
  const auto& clusters = analysis.clustering.clusters;
  std::vector<ClusterId> all(clusters.size());
  for (ClusterId id = 0; id < all.size(); ++id)
    all[id] = id;
  analysis.ribbons = createClusterGroups(clusters, all, relations);

  unsigned shift = 0;
  for (const ThreadInput& input : inputs)
    shift = std::max(shift, input.result->timeline.shift());
  analysis.timeline_shift = shift;

  for (size_t t = 0; t < inputs.size(); ++t) {
    ThreadSummary& thread = analysis.threads[t];
    std::set<ClusterId> present;
    for (ShapeId shape : thread.shapes)
      present.insert(analysis.clustering.cluster_of_shape[shape]);
    thread.ribbons = createClusterGroups(clusters, {present.begin(), present.end()}, relations);

    OccurrenceTimeline timeline = inputs[t].result->timeline;
    timeline.coarsenTo(shift);
    // Local shapes of each cluster on this thread.
    std::map<ClusterId, std::vector<const std::vector<TimelineCell>*>> cells_of;
    const auto& shape_map = maps[t].shapes;
    for (ShapeId local = 1; local < shape_map.size(); ++local)
      cells_of[analysis.clustering.cluster_of_shape[shape_map[local]]].push_back(
          &timeline.cells(local));
    for (const auto& ribbon : thread.ribbons) {
      std::vector<ClusterCells> row;
      for (ClusterId cluster : ribbon)
        row.push_back({cluster, sumCells(cells_of[cluster])});
      thread.timeline.push_back(std::move(row));
    }
  }
}

} // namespace

Analysis analyze(std::vector<ThreadInput> threads, const FunctionResolver& resolve,
                 const AnalysisSettings& settings) {
  std::sort(threads.begin(), threads.end(),
            [](const ThreadInput& a, const ThreadInput& b) { return a.key < b.key; });
  Analysis analysis;
  analysis.settings = settings;
  analysis.shape_states.resize(1);
  FunctionIndex functions(analysis, resolve);
  // Room for every thread's DAG nodes up front (threads share few): growing a table of a million
  // nodes as it fills rehashes it over and over, each time into freshly zeroed memory.
  size_t dag_nodes = 0, dag_child_ids = 0;
  for (const ThreadInput& input : threads) {
    dag_nodes += input.result->dag.size() - 1;
    dag_child_ids += input.result->dag.childIds();
  }
  analysis.dag.reserve(dag_nodes, dag_child_ids);
  std::vector<IdMaps> maps;
  for (const ThreadInput& input : threads)
    maps.push_back(mergeThread(analysis, input, functions));
  analysis.shape_states.resize(analysis.shapes.size());
  if (settings.sum_dag_statistics) sumDagStats(analysis, threads, maps);

  std::sort(analysis.outliers.begin(), analysis.outliers.end(), outlierBefore);
  if (analysis.outliers.size() > settings.thread.max_outliers)
    analysis.outliers.resize(settings.thread.max_outliers);

  if (!settings.cluster_shapes) {
    analysis.clustering.cluster_of_shape.assign(analysis.shapes.size(), kNoCluster);
    return analysis;
  }
  std::vector<std::string> names;
  for (const FunctionSummary& f : analysis.functions)
    names.push_back(f.identity);
  ShapeMetric metric(analysis.shapes);
  const ShapeRelations relations(analysis.shapes);
  analysis.clustering = createClusters(analysis.shapes, metric, relations,
                                       settings.cluster_threshold, settings.method, names);
  const auto& clusters = analysis.clustering.clusters;
  analysis.cluster_stats.resize(clusters.size());
  analysis.cluster_calls.resize(clusters.size());
  for (ClusterId id = 0; id < clusters.size(); ++id)
    for (ShapeId shape : clusters[id].shapes) {
      analysis.cluster_stats[id].merge(analysis.shape_states[shape].stats);
      analysis.cluster_calls[id] += analysis.shape_states[shape].calls;
    }
  countTables(analysis);
  buildRibbonsAndTimeline(analysis, threads, maps, relations);
  return analysis;
}

uint64_t threadCount(const Analysis& analysis) {
  uint64_t count = 0;
  for (const ThreadSummary& thread : analysis.threads)
    count += std::max<uint64_t>(thread.folded_threads, 1);
  return count;
}

size_t throttledFunctionCount(const Analysis& analysis) {
  std::set<uint32_t> functions;
  for (const ThrottledFunction& t : analysis.throttled) functions.insert(t.function);
  return functions.size();
}

uint64_t tracerWaitNs(const Analysis& analysis, const ThreadKey& thread) {
  for (const ThreadSummary& t : analysis.threads)
    if (t.key == thread)
      return t.diagnostics.count(Stat::tracer_wait_ns);
  return 0;
}

} // namespace shapetrace::analyzer
