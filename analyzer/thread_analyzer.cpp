// Per-thread call-stack reconstruction, shape interning, statistics and outliers.
#include "thread_analyzer.h"

#include <algorithm>

namespace shapetrace::analyzer {

bool outlierBefore(const Outlier& a, const Outlier& b) {
  if (a.score != b.score) return a.score > b.score;
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  if (a.process != b.process) return a.process < b.process;
  if (a.thread != b.thread) return a.thread < b.thread;
  if (a.function != b.function) return a.function < b.function;
  if (a.shape != b.shape) return a.shape < b.shape;
  return a.duration_ns < b.duration_ns;
}

ThreadAnalyzer::ThreadAnalyzer(const AnalyzerOptions& options)
    : options_(options), timeline_(options.timeline_bins) {
  shape_states_.resize(1);
  dag_stats_.resize(1);
}

void ThreadAnalyzer::onBatch(uint64_t sequence, std::span<const Event> events) {
  if (sequence != wire::kNoSequence) {
    if (last_sequence_ != UINT64_MAX) {
      if (sequence <= last_sequence_) {
        diagnostics_.add(Stat::batch_sequence_regressions);
      } else if (sequence > last_sequence_ + 1) {
        diagnostics_.add(Stat::batch_sequence_gaps, sequence - last_sequence_ - 1);
        onGap(0);
      }
    }
    if (last_sequence_ == UINT64_MAX || sequence > last_sequence_) last_sequence_ = sequence;
  }
  onEvents(events);
}

void ThreadAnalyzer::onEvents(std::span<const Event> events) {
  events_ += events.size();
  for (const Event& event : events) {
    uint64_t time = event.timestamp;
    if (time < last_ns_) [[unlikely]] {
      diagnostics_.add(Stat::timestamp_regressions);
      time = last_ns_;
    }
    last_ns_ = time;
    if (!timeline_.started()) [[unlikely]]
      timeline_.start(time);
    if (event.function_id >= kMaxFunctionId) [[unlikely]] {
      diagnostics_.add(Stat::function_ids_out_of_range);
      onGap(0);
      continue;
    }
    switch (event.kind) {
    case EventKind::Enter: enter(event.function_id, time); break;
    case EventKind::UnwindExit:
      diagnostics_.add(Stat::unwind_exits);
      leave(event.function_id, time);
      break;
    case EventKind::Exit: leave(event.function_id, time); break;
    }
  }
}

void ThreadAnalyzer::enter(uint32_t function, uint64_t time_ns) {
  if (stack_.size() >= kMaxStackDepth) [[unlikely]] {
    diagnostics_.add(Stat::stack_overflows);
    onGap(0);
  }
  stack_.emplace_back(function, time_ns, shape_children_.size(), dag_children_.size());
}

void ThreadAnalyzer::leave(uint32_t function, uint64_t time_ns) {
  if (!stack_.empty() && stack_.back().function == function) [[likely]] {
    finishTop(time_ns, true);
    return;
  }
  auto match = std::find_if(stack_.rbegin(), stack_.rend(),
                            [function](const Frame& f) { return f.function == function; });
  if (match == stack_.rend()) {
    if (orphan_exit_budget_ > 0) {
      --orphan_exit_budget_;
      diagnostics_.add(Stat::exits_after_gap);
    } else {
      diagnostics_.add(Stat::unmatched_exits);
    }
    return;
  }
  // The frames above the match were left without their exits (longjmp, lost exit events).
  const auto skipped = static_cast<size_t>(match - stack_.rbegin());
  for (size_t i = 0; i < skipped; ++i) {
    diagnostics_.add(Stat::frames_closed_by_outer_exit);
    finishTop(time_ns, false);
  }
  finishTop(time_ns, true);
}

void ThreadAnalyzer::onGapMarker(uint64_t dropped) {
  diagnostics_.add(Stat::gap_markers);
  diagnostics_.add(Stat::events_dropped, dropped);
  onGap(dropped);
}

void ThreadAnalyzer::onGap(uint64_t dropped) {
  diagnostics_.add(Stat::frames_discarded_at_gap, stack_.size());
  // Every frame open now may see its exit after the gap; dropped events may hide more.
  orphan_exit_budget_ += stack_.size() + dropped;
  stack_.clear();
  shape_children_.clear();
  dag_children_.clear();
}

void ThreadAnalyzer::onEnd() {
  diagnostics_.add(Stat::frames_open_at_thread_end, stack_.size());
  stack_.clear();
  shape_children_.clear();
  dag_children_.clear();
  orphan_exit_budget_ = 0;
}

void ThreadAnalyzer::finishTop(uint64_t time_ns, bool measured) {
  const Frame& frame = stack_.back();
  ++calls_;

  std::span<ShapeId> child_shapes(shape_children_.data() + frame.shape_children_begin,
                                  shape_children_.size() - frame.shape_children_begin);
  const size_t distinct = canonicalizeChildSet(child_shapes);
  const ShapeId shape = shapes_.intern(frame.function, child_shapes.first(distinct));
  shape_children_.resize(frame.shape_children_begin);
  // The shapes' statistics outgrow the caches: load what the update will touch while the DAG
  // node is looked up.
  if (shape >= shape_states_.size()) shape_states_.resize(shape + 1);
  if (measured) shape_states_[shape].stats.prefetch(time_ns - frame.enter_ns);

  const std::span<const ShapeId> child_nodes(dag_children_.data() + frame.dag_children_begin,
                                             dag_children_.size() - frame.dag_children_begin);
  const ShapeTable::Key dag_key = ShapeTable::keyOf(frame.function, child_nodes, frame.dag_hash);
  const ShapeId node = internDagNode(frame, dag_key);
  dag_children_.resize(frame.dag_children_begin);
  // The DAG's statistics outgrow the caches too: load the node's line while the rest is done.
  if (node >= dag_stats_.size()) dag_stats_.resize(node + 1);
  __builtin_prefetch(&dag_stats_[node]);

  if (frame.function >= functions_.size()) functions_.resize(frame.function + 1);
  ++shape_states_[shape].calls;
  ++functions_[frame.function].calls;

  const uint64_t enter_ns = frame.enter_ns;
  const uint64_t duration = time_ns - enter_ns;
  if (measured) {
    judge(frame, shape, duration);
    functions_[frame.function].moments.add(duration);
    shape_states_[shape].stats.add(duration);
  }
  stack_.pop_back(); // `frame` is gone from here on
  timeline_.record(shape, enter_ns, time_ns);
  if (!stack_.empty()) appendChild(shape, node, dag_key.hash);
  if (node == kNullShape) {
    diagnostics_.add(Stat::dag_calls_not_interned);
  } else if (measured) {
    DagStats& dag = dag_stats_[node];
    ++dag.count;
    dag.sum += duration;
    dag.sum_squares += static_cast<unsigned __int128>(duration) * duration;
  }
}

// The frame's exact-sequence DAG node, kNullShape when it cannot be interned (a child could not
// be, or the DAG is full and this node is new).
ShapeId ThreadAnalyzer::internDagNode(const Frame& frame, const ShapeTable::Key& key) {
  if (frame.dag_unknown) return kNullShape;
  if (dag_full_) return dag_.find(key);
  const ShapeId node = dag_.intern(key);
  dag_full_ = dag_.size() > options_.max_dag_nodes;
  return node;
}

void ThreadAnalyzer::appendChild(ShapeId shape, ShapeId dag_node, uint64_t dag_hash) {
  Frame& parent = stack_.back();
  dag_children_.push_back(dag_node);
  if (dag_node == kNullShape) parent.dag_unknown = true;
  // The DAG outgrows the caches: when this is the parent's last child, its exit comes next, so
  // start loading the slot it will probe now.
  parent.dag_hash.add(dag_hash);
  dag_.prefetch(parent.dag_hash.value(dag_children_.size() - parent.dag_children_begin));
  // Loops repeat the same child: skip an immediate repeat, and squeeze the list when it grows so a
  // long loop costs memory for its distinct children only.
  if (shape_children_.size() > parent.shape_children_begin && shape_children_.back() == shape)
    return;
  shape_children_.push_back(shape);
  const size_t size = shape_children_.size() - parent.shape_children_begin;
  if (size >= parent.compact_at) {
    const size_t distinct = canonicalizeChildSet(
        std::span<ShapeId>(shape_children_.data() + parent.shape_children_begin, size));
    shape_children_.resize(parent.shape_children_begin + distinct);
    parent.compact_at = std::max<size_t>(64, 2 * distinct);
  }
}

void ThreadAnalyzer::judge(const Frame& frame, ShapeId shape, uint64_t duration_ns) {
  const Moments& by_function = functions_[frame.function].moments;
  const Moments& by_shape = shape_states_[shape].stats.moments;
  const auto x = static_cast<double>(duration_ns);
  // x > mean + sigma * sd, without a square root on the common path (x at or below the mean).
  const double sigma2 = options_.outlier_sigma * options_.outlier_sigma;
  auto fires = [&](const Moments& m) {
    if (m.count() < options_.outlier_min_samples || x <= m.mean()) return false;
    // excess^2 > sigma^2 * M2 / n, multiplied out to keep a division off the path.
    const double excess = x - m.mean();
    const double m2 = m.m2();
    return m2 > 0 && excess * excess * static_cast<double>(m.count()) > sigma2 * m2;
  };
  const bool function_outlier = fires(by_function);
  const bool shape_outlier = fires(by_shape);
  if (!function_outlier && !shape_outlier) [[likely]]
    return;
  Outlier outlier;
  outlier.start_ns = frame.enter_ns;
  outlier.duration_ns = duration_ns;
  outlier.function = frame.function;
  outlier.shape = shape;
  outlier.function_outlier = function_outlier;
  outlier.shape_outlier = shape_outlier;
  outlier.function_mean = by_function.mean();
  outlier.function_sd = by_function.stddev();
  outlier.function_count = by_function.count();
  outlier.shape_mean = by_shape.mean();
  outlier.shape_sd = by_shape.stddev();
  outlier.shape_count = by_shape.count();
  if (function_outlier) {
    ++functions_[frame.function].outliers;
    outlier.score = (x - outlier.function_mean) / outlier.function_sd;
  }
  if (shape_outlier) {
    ++shape_states_[shape].outliers;
    outlier.score = std::max(outlier.score, (x - outlier.shape_mean) / outlier.shape_sd);
  }
  keepOutlier(outlier);
}

void ThreadAnalyzer::keepOutlier(const Outlier& outlier) {
  if (options_.max_outliers == 0) return;
  if (outlier_heap_.size() < options_.max_outliers) {
    outlier_heap_.push_back(outlier);
    std::push_heap(outlier_heap_.begin(), outlier_heap_.end(), outlierBefore);
    return;
  }
  // The heap's top is its least extreme member; replace it if this one is more extreme.
  if (!outlierBefore(outlier, outlier_heap_.front())) return;
  std::pop_heap(outlier_heap_.begin(), outlier_heap_.end(), outlierBefore);
  outlier_heap_.back() = outlier;
  std::push_heap(outlier_heap_.begin(), outlier_heap_.end(), outlierBefore);
}

std::vector<FunctionState> ThreadAnalyzer::functionStates() const {
  std::vector<FunctionState> states(functions_.size());
  for (size_t f = 0; f < functions_.size(); ++f) {
    states[f].stats.moments = functions_[f].moments;
    states[f].outliers = functions_[f].outliers;
    states[f].calls = functions_[f].calls;
  }
  for (ShapeId shape = 1; shape < shape_states_.size(); ++shape)
    states[shapes_.function(shape)].stats.histogram.merge(shape_states_[shape].stats.histogram);
  return states;
}

std::vector<Outlier> ThreadAnalyzer::outliers() const {
  std::vector<Outlier> sorted = outlier_heap_;
  std::sort(sorted.begin(), sorted.end(), outlierBefore);
  return sorted;
}

} // namespace shapetrace::analyzer
