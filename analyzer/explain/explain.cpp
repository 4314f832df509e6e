// Data points from the trace, and the DRT pipeline on them (explain.h, docs/explain.md).
#include "explain/explain.h"
#include "duration_text.h"
#include "function_names.h"
#include "scope.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>

namespace shapetrace::analyzer {

// How many earlier calls an annotation looks back through for the call that holds it.
constexpr int kMaxRecursionScanned = 64;

// Per thread, on its worker: the calls of the chosen function with the calls under each.
class ExplainExtension::Sink {
public:
  Sink(IdTable<uint8_t> targets, uint32_t max_points, uint64_t seed)
      : targets_(std::move(targets)), max_points_(max_points), rng_(seed) {}

  void onEnter(uint32_t function, uint32_t depth, uint64_t) {
    if (isTarget(function))
      open_.push_back({depth, {}});
  }
  void onCall(const FinishedCall& call) {
    if (open_.empty())
      return;
    if (isTarget(call.function) && open_.back().depth == call.depth) {
      Open done = std::move(open_.back());
      open_.pop_back();
      if (call.measured)
        keep(call, done);
      if (!open_.empty()) {
        // The outer call of the same function holds this one and everything under it.
        for (const auto& [function, calls] : done.calls)
          open_.back().calls[function] += calls;
        ++open_.back().calls[call.function];
      }
      return;
    }
    ++open_.back().calls[call.function];
  }
  void onReset() { open_.clear(); }

  std::vector<Instance> instances;
  uint64_t seen = 0;

private:
  struct Open {
    uint32_t depth;
    std::unordered_map<uint32_t, uint32_t> calls;
  };
  bool isTarget(uint32_t function) const {
    return targets_.find(function) != nullptr;
  }
  // Algorithm R: every call has the same chance to be among the kept.
  void keep(const FinishedCall& call, const Open& done) {
    ++seen;
    size_t slot = instances.size();
    if (instances.size() >= max_points_) {
      slot = static_cast<size_t>(rng_() % seen);
      if (slot >= max_points_)
        return;
    } else {
      instances.emplace_back();
    }
    Instance& instance = instances[slot];
    instance.enter_ns = call.enter_ns;
    instance.exit_ns = call.exit_ns;
    instance.ordinal = seen;
    instance.shape = call.shape;
    instance.calls.assign(done.calls.begin(), done.calls.end());
    std::sort(instance.calls.begin(), instance.calls.end());
  }

  IdTable<uint8_t> targets_; // the ids of the chosen function
  uint32_t max_points_;
  std::mt19937_64 rng_;
  std::vector<Open> open_;
};

struct ExplainExtension::ThreadState {
  ShapeTable shapes;
  CallStreamConsumer<Sink>* consumer = nullptr;
};

ExplainExtension::ExplainExtension(ExplainSettings settings, bool runs, uint32_t max_depth)
    : settings_(std::move(settings)), runs_(runs), max_depth_(max_depth),
      value_input_(parseValueInput(settings_.input_key)) {}

std::optional<ExplainExtension::ValueInput>
ExplainExtension::parseValueInput(const std::string& key) {
  const std::optional<ValueChoice> choice = parseValueChoice(key);
  if (!choice)
    return std::nullopt;
  return ValueInput{choice->function, choice->position};
}
ExplainExtension::~ExplainExtension() = default;

std::unique_ptr<ThreadConsumer> ExplainExtension::consumerFor(const ThreadKey& thread) {
  if (runs_)
    return nullptr;
  // The module tables that came before the thread's first item say which ids are the function
  // (docs/explain.md: a module loaded later is not searched).
  const auto it = targets_.find(thread.process);
  IdTable<uint8_t> targets = it == targets_.end() ? IdTable<uint8_t>{} : it->second;
  auto state = std::make_unique<ThreadState>();
  const ShapeLookup lookup =
      settings_.shapes ? ShapeLookup::intern(state->shapes) : ShapeLookup::none();
  const uint64_t seed =
      settings_.tree.seed ^ (thread.process * 0x9E3779B97F4A7C15ull) ^ thread.thread;
  auto consumer = std::make_unique<CallStreamConsumer<Sink>>(lookup, max_depth_, std::move(targets),
                                                             settings_.max_points, seed);
  state->consumer = consumer.get();
  threads_[thread] = std::move(state);
  return consumer;
}

void ExplainExtension::takeAnnotation(uint64_t process, const wire::Annotation& note) {
  ++keys_seen_[note.key];
  if (note.key == settings_.input_key)
    annotations_[{process, note.thread}].emplace_back(note.timestamp_ns,
                                                      static_cast<double>(note.value));
}

void ExplainExtension::takeValues(uint64_t process, const wire::EventBatch& batch) {
  const ThreadKey thread{process, batch.thread};
  const auto functions = value_functions_.find(process);
  if (functions != value_functions_.end()) {
    for (const wire::CallValues& values : batch.call_values) {
      if (functions->second.find(values.function_id) == nullptr)
        continue;
      ++values_seen_;
      // Arguments follow their call's enter; a return value precedes its exit (or, in a batch
      // cut between them, the batch's end).
      const size_t at = values.before_event;
      uint64_t time = last_event_ns_[thread];
      if (values.returned() && at < batch.events.size())
        time = batch.events[at].timestamp;
      else if (at > 0)
        time = batch.events[at - 1].timestamp;
      for (const wire::CallValue& value : values.values) {
        if (value.position != value_input_->position)
          continue;
        if (value.type == wire::ValueType::String)
          string_input_ = true;
        else
          annotations_[thread].emplace_back(time, wire::valueAsDouble(value));
      }
    }
  }
  if (!batch.events.empty())
    last_event_ns_[thread] = batch.events.back().timestamp;
}

std::string ExplainExtension::stringInputError() const {
  if (!string_input_)
    return {};
  return "--input '" + settings_.input_key +
         "' is a string (recorded with /s): explain's inputs are numbers; a string value is "
         "shown by dump, the report and summarize --with-values only";
}

std::string ExplainExtension::missingInputReason() const {
  if (value_input_) {
    bool any_function = false;
    for (const auto& [process, ids] : value_functions_)
      any_function |= ids.size() != 0;
    if (!any_function)
      return "no function named '" + value_input_->function + "' in the recording";
    const std::string value = value_input_->position == 0
                                  ? std::string("retval")
                                  : "arg" + std::to_string(value_input_->position);
    if (values_seen_ == 0)
      return "no value of '" + value_input_->function +
             "' was recorded: build with SHAPETRACE_PASS_ARGS='" + value_input_->function + "@" +
             value + "' (docs/pass.md)";
    return "its values recorded in the recording do not include " + value;
  }
  std::string keys;
  for (const auto& [key, count] : keys_seen_)
    keys += (keys.empty() ? "" : ", ") + key;
  return keys.empty() ? std::string("the recording has no annotation")
                      : "annotation keys in the recording: " + keys;
}

void ExplainExtension::observe(const wire::StreamItem& item) {
  if (const auto* table = std::get_if<wire::ModuleTable>(&item.body)) {
    auto& targets = targets_[item.process];
    if (value_input_) {
      auto& ids = value_functions_[item.process];
      for (const wire::FunctionInfo& f : table->functions)
        if (namesFunction(nameFunction(&f, f.id), value_input_->function))
          ids[f.id] = 1;
    }
    for (const wire::FunctionInfo& f : table->functions) {
      if (settings_.function.empty() || !namesFunction(nameFunction(&f, f.id), settings_.function))
        continue;
      // Sparse: a table may name any id (0xFFFFFFF0 costs one entry).
      targets[f.id] = 1;
    }
  } else if (const auto* note = std::get_if<wire::Annotation>(&item.body)) {
    takeAnnotation(item.process, *note);
  } else if (const auto* batch = std::get_if<wire::EventBatch>(&item.body)) {
    for (const wire::Annotation& annotation : batch->annotations)
      takeAnnotation(item.process, annotation);
    if (value_input_)
      takeValues(item.process, *batch);
    // Events are in time order within a batch: the span needs its ends only.
    if (!batch->events.empty()) {
      first_ns_ = std::min(first_ns_, batch->events.front().timestamp);
      last_ns_ = std::max(last_ns_, batch->events.back().timestamp);
    }
  } else if (const auto* start = std::get_if<wire::ProcessStart>(&item.body)) {
    executables_[item.process] = start->executable;
  }
}

namespace {

// A thread's shape, in the analysis's shape table (the same structure; kNullShape if absent).
class ShapeMapper {
public:
  ShapeMapper(const ShapeTable& local, const ShapeTable& global, uint64_t process,
              FunctionIndex& functions)
      : local_(local), global_(global), process_(process), functions_(functions) {}
  ShapeId map(ShapeId id) {
    if (id == kNullShape || id >= local_.size())
      return kNullShape;
    if (const auto it = done_.find(id); it != done_.end())
      return it->second;
    std::vector<ShapeId> children;
    for (const ShapeId child : local_.children(id)) {
      const ShapeId mapped = child == kNullShape ? kNullShape : map(child);
      if (child != kNullShape && mapped == kNullShape)
        return done_[id] = kNullShape;
      children.push_back(mapped);
    }
    children.resize(canonicalizeChildSet(children));
    return done_[id] = global_.find(functions_.indexOf(process_, local_.function(id)), children);
  }

private:
  const ShapeTable& local_;
  const ShapeTable& global_;
  uint64_t process_;
  FunctionIndex& functions_;
  std::unordered_map<ShapeId, ShapeId> done_;
};

} // namespace

ExplainData ExplainExtension::collect(const Analysis& analysis, FunctionIndex& functions) const {
  ExplainData data;
  data.unit = "call";
  data.subject = "calls of " + settings_.function;
  data.input_name = settings_.input_key.empty() ? "position" : settings_.input_key;
  struct Row {
    ThreadKey thread;
    const Instance* instance;
    double input;
    ShapeId shape;
  };
  std::vector<Row> rows;
  bool any_target = false;
  for (const auto& [process, targets] : targets_)
    any_target |= targets.size() != 0;
  if (!any_target)
    throw ExplainError("no function named '" + settings_.function + "' in the recording");
  if (const std::string error = stringInputError(); !error.empty())
    throw ExplainError(error);
  for (const auto& [thread, state] : threads_) {
    const Sink& sink = state->consumer->sink();
    data.seen += sink.seen;
    std::vector<const Instance*> calls;
    for (const Instance& i : sink.instances)
      calls.push_back(&i);
    std::sort(calls.begin(), calls.end(),
              [](const Instance* a, const Instance* b) { return a->enter_ns < b->enter_ns; });
    // The input of each call: its last annotation with the key, made while it was the innermost
    // open call of the function (calls are nested intervals: the latest start that holds it).
    std::vector<std::optional<double>> input(calls.size());
    if (!settings_.input_key.empty()) {
      const auto notes = annotations_.find(thread);
      if (notes != annotations_.end()) {
        auto sorted = notes->second;
        std::stable_sort(sorted.begin(), sorted.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        for (const auto& [time, value] : sorted) {
          auto it = std::upper_bound(calls.begin(), calls.end(), time,
                                     [](uint64_t t, const Instance* c) { return t < c->enter_ns; });
          // Only a recursive call can hold the time after a call that ended before it: look back
          // as far as recursion is deep, not through every earlier call.
          for (int back = 0; back < kMaxRecursionScanned && it != calls.begin(); ++back) {
            --it;
            if ((*it)->exit_ns >= time) {
              input[static_cast<size_t>(it - calls.begin())] = value;
              break;
            }
          }
        }
      }
    } else {
      for (size_t i = 0; i < calls.size(); ++i)
        input[i] = static_cast<double>(calls[i]->ordinal);
    }
    ShapeMapper shapes(state->shapes, analysis.shapes, thread.process, functions);
    for (size_t i = 0; i < calls.size(); ++i) {
      if (!input[i]) {
        ++data.left_out;
        continue;
      }
      rows.push_back({thread, calls[i], *input[i],
                      settings_.shapes ? shapes.map(calls[i]->shape) : kNullShape});
    }
  }
  if (rows.empty()) {
    if (data.seen == 0)
      throw ExplainError("no finished call of '" + settings_.function + "' in the recording");
    throw ExplainError("no call of '" + settings_.function + "' has " +
                       (value_input_ ? "a value '" : "an annotation '") + settings_.input_key +
                       "' (" + missingInputReason() + ")");
  }
  // Features: functions by model index, then shapes, in index order.
  std::map<uint32_t, std::vector<std::pair<uint32_t, double>>> by_function; // index -> (row, calls)
  std::map<ShapeId, std::vector<uint32_t>> by_shape;
  data.points.inputs.resize(static_cast<Eigen::Index>(rows.size()), 1);
  data.points.times.resize(static_cast<Eigen::Index>(rows.size()));
  for (uint32_t r = 0; r < rows.size(); ++r) {
    const Row& row = rows[r];
    data.points.inputs(r, 0) = row.input;
    data.points.times(r) = static_cast<double>(row.instance->exit_ns - row.instance->enter_ns);
    for (const auto& [id, calls] : row.instance->calls)
      by_function[functions.indexOf(row.thread.process, id)].emplace_back(r, calls);
    if (row.shape != kNullShape)
      by_shape[row.shape].push_back(r);
    data.point_refs.push_back({{"process", row.thread.process},
                               {"thread", row.thread.thread},
                               {"start_ns", row.instance->enter_ns}});
  }
  data.features.points = rows.size();
  for (auto& [index, entries] : by_function) {
    // Two ids of one process can be one function (its index): sum them.
    std::sort(entries.begin(), entries.end());
    const uint32_t f = data.features.add("calls of " + analysis.functions[index].name);
    for (size_t i = 0; i < entries.size();) {
      double sum = 0;
      const uint32_t row = entries[i].first;
      for (; i < entries.size() && entries[i].first == row; ++i)
        sum += entries[i].second;
      data.features.set(f, row, sum);
    }
    data.feature_refs.push_back({{"kind", "function"}, {"function", index}});
  }
  for (const auto& [shape, members] : by_shape) {
    const uint32_t f =
        data.features.add("shape #" + std::to_string(shape) + " of " + settings_.function);
    for (const uint32_t row : members)
      data.features.set(f, row, 1);
    data.feature_refs.push_back(
        {{"kind", "shape"}, {"shape", shape}, {"function", analysis.shapes.function(shape)}});
  }
  return data;
}

// The run's shapes with their calls, keyed so that runs of one program agree: a hash of the
// structure by function identity (a child always has a smaller id than its parent, so one pass
// up the ids hashes children first), with a description for predicates.
static nlohmann::ordered_json runShapes(const Analysis& analysis) {
  const ShapeTable& shapes = analysis.shapes;
  std::vector<uint64_t> hash(shapes.size(), 0);
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (ShapeId id = 1; id < shapes.size(); ++id) {
    const FunctionSummary& f = analysis.functions[shapes.function(id)];
    std::vector<uint64_t> children;
    std::vector<std::string> names;
    for (const ShapeId child : shapes.children(id)) {
      children.push_back(hash[child]);
      names.push_back(analysis.functions[shapes.function(child)].name);
    }
    std::sort(children.begin(), children.end());
    uint64_t h = std::hash<std::string>{}(f.identity);
    for (const uint64_t c : children)
      h = (h ^ c) * 0x100000001B3ull + 0x9E3779B97F4A7C15ull;
    hash[id] = h;
    const uint64_t calls = id < analysis.shape_states.size() ? analysis.shape_states[id].calls : 0;
    if (calls == 0)
      continue;
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    std::string description = "shape of " + f.name;
    if (names.empty())
      description += " calling nothing";
    for (size_t i = 0; i < names.size(); ++i)
      description += (i == 0 ? " calling " : ", ") + names[i];
    char key[24];
    std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(h));
    out[key] = {description, calls};
  }
  return out;
}

nlohmann::ordered_json ExplainExtension::runPoint(const Analysis& analysis, FunctionIndex&) const {
  nlohmann::ordered_json point;
  if (const std::string error = stringInputError(); !error.empty())
    return {{"error", error}};
  std::optional<std::pair<uint64_t, double>> last;
  for (const auto& [thread, notes] : annotations_)
    for (const auto& note : notes)
      if (!last || note.first >= last->first)
        last = note;
  point["input"] = last ? nlohmann::ordered_json(last->second) : nlohmann::ordered_json(nullptr);
  point["span_ns"] = first_ns_ == UINT64_MAX ? 0 : last_ns_ - first_ns_;
  std::string executable;
  for (const auto& [process, path] : executables_)
    if (executable.empty())
      executable = path;
  point["executable"] = executable;
  nlohmann::ordered_json calls = nlohmann::ordered_json::object();
  for (const FunctionSummary& f : analysis.functions)
    if (f.calls > 0)
      calls[f.identity] = {f.name, f.calls};
  point["calls"] = std::move(calls);
  if (settings_.shapes)
    point["shapes"] = runShapes(analysis);
  point["keys"] = missingInputReason();
  return point;
}

nlohmann::ordered_json ExplainExtension::result(const Analysis& analysis,
                                                FunctionIndex& functions) const {
  if (runs_)
    return runPoint(analysis, functions);
  try {
    return explainData(collect(analysis, functions), settings_);
  } catch (const ExplainError& e) {
    return {{"error", e.what()}};
  }
}

namespace {

// "3" for a count, "2.5" otherwise.
std::string formatThreshold(double value) {
  char text[32];
  std::snprintf(text, sizeof text,
                value == std::floor(value) && std::abs(value) < 1e15 ? "%.0f" : "%g", value);
  return text;
}

nlohmann::ordered_json treeJson(const drt::Tree& tree, const ExplainData& data) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const drt::TreeNode& node : tree.nodes) {
    nlohmann::ordered_json n;
    n["points"] = std::accumulate(node.class_counts.begin(), node.class_counts.end(), 0u);
    n["counts"] = node.class_counts;
    n["cluster"] = node.label;
    if (!node.leaf) {
      n["predicate"] = data.features.names[node.feature] + " > " + formatThreshold(node.threshold);
      n["feature"] = data.features.names[node.feature];
      n["ref"] = data.feature_refs.empty() ? nlohmann::ordered_json(nullptr)
                                           : data.feature_refs[node.feature];
      n["threshold"] = node.threshold;
      n["yes"] = node.above;
      n["no"] = node.below;
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

// Each K's RMS error as a share of the mean time: "K=1: 87.6%, K=2: 41.2%".
std::string errorsByK(const std::vector<double>& mse_by_k, double mean) {
  std::string errors;
  for (size_t k = 0; k < mse_by_k.size(); ++k) {
    char text[64];
    std::snprintf(text, sizeof text, "%sK=%zu: %.1f%%", k == 0 ? "" : ", ", k + 1,
                  100 * std::sqrt(mse_by_k[k]) / mean);
    errors += text;
  }
  return errors;
}

// An elbow counts when its line took more than half the RMS error the K before it left. Noise
// alone gets close: two lines through normally distributed times split them at the mean and cut
// the error by 1 - sqrt(1 - 2/pi) = 40%, three by less; a cut beyond half is more than noise.
constexpr double kElbowMinCut = 0.5;

struct ChosenClusters {
  drt::LinearClusters clusters;
  std::vector<double> mse_by_k;
  std::string how; // the model's k_chosen
};

// K as given; else Algorithm 1's smallest K within the error bound; else, when none is, the K whose
// line cut the error the most (by more than half), which the output says.
ChosenClusters chooseClusters(const drt::Points& points, double mean,
                              const ExplainSettings& settings) {
  ChosenClusters out;
  if (settings.clusters > 0) {
    out.clusters = drt::clusterPoints(points, settings.clusters, settings.search);
    out.mse_by_k.push_back(out.clusters.mse());
    out.how = "given";
    return out;
  }
  const double bound = std::pow(settings.max_error * mean, 2);
  drt::SmallestK found = drt::smallestK(points, settings.max_clusters, bound, settings.search);
  out.mse_by_k = found.mse_by_k;
  if (found.found) {
    out.clusters = std::move(found.clusters);
    out.how = "smallest within the error bound";
  } else if (found.elbow_cut >= kElbowMinCut) {
    out.clusters = std::move(found.elbow);
    out.how = "cutting the error most, none within the bound";
  } else {
    char bound_text[32];
    std::snprintf(bound_text, sizeof bound_text, "%g%%", 100 * settings.max_error);
    throw ExplainError("no clustering with at most " + std::to_string(settings.max_clusters) +
                       " lines has an RMS error within " + bound_text + " of the mean time (" +
                       errorsByK(found.mse_by_k, mean) +
                       "), and no line cuts the error by half; give --clusters K, or raise "
                       "--max-error or --max-clusters");
  }
  return out;
}

} // namespace

nlohmann::ordered_json explainData(const ExplainData& data, const ExplainSettings& settings) {
  const size_t n = data.points.size();
  const uint32_t wanted = settings.clusters;
  if (wanted > 0 && n < wanted)
    throw ExplainError(std::to_string(n) + " " + data.unit + (n == 1 ? "" : "s") +
                       " (data points) for " + std::to_string(wanted) +
                       " clusters: each cluster needs at least one");
  if (n == 0)
    throw ExplainError("no data points");
  const double mean = data.points.times.mean();
  const ChosenClusters chosen = chooseClusters(data.points, mean, settings);
  const drt::LinearClusters& clusters = chosen.clusters;
  const auto k = static_cast<uint32_t>(clusters.lines.size());
  const drt::Explanation explanation =
      drt::explainClusters(data.features, clusters.labels, k, settings.tree);

  nlohmann::ordered_json model;
  model["unit"] = data.unit;
  model["subject"] = data.subject;
  model["input"] = data.input_name;
  model["points"] = n;
  model["seen"] = data.seen;
  model["left_out"] = data.left_out;
  model["method"] = drt::methodName(settings.search.method);
  model["k"] = k;
  model["k_chosen"] = chosen.how;
  model["max_error"] = settings.max_error;
  model["rms_by_k"] = nlohmann::ordered_json::array();
  for (const double mse : chosen.mse_by_k)
    model["rms_by_k"].push_back(std::sqrt(mse));
  model["mean_ns"] = mean;
  model["trim"] = settings.search.method == drt::Method::kKLinear ? settings.search.klinear.trim
                                                                  : settings.search.spectral.trim;
  nlohmann::ordered_json lines = nlohmann::ordered_json::array();
  std::vector<uint64_t> sizes(k, 0), fitted(k, 0);
  std::vector<double> rss(k, 0);
  for (size_t p = 0; p < n; ++p) {
    const uint32_t c = clusters.labels[p];
    ++sizes[c];
    if (clusters.isTrimmed(p))
      continue;
    ++fitted[c];
    const double r = data.points.times(static_cast<Eigen::Index>(p)) -
                     clusters.lines[c].at(data.points.inputs.row(static_cast<Eigen::Index>(p)));
    rss[c] += r * r;
  }
  for (uint32_t c = 0; c < k; ++c)
    lines.push_back(
        {{"cluster", c},
         {"points", sizes[c]},
         {"slope_ns", clusters.lines[c].slope(0)},
         {"intercept_ns", clusters.lines[c].intercept},
         {"rms_ns", fitted[c] == 0 ? 0.0 : std::sqrt(rss[c] / static_cast<double>(fitted[c]))},
         {"trimmed", sizes[c] - fitted[c]},
         {"accuracy", explanation.cluster_accuracy[c]}});
  model["clusters"] = std::move(lines);
  // Each cluster counts alike: a tree that sends every call to the cluster of 99.9% of them is
  // not 99.9% accurate at telling the clusters apart.
  model["tree"] = {{"accuracy", explanation.meanClusterAccuracy()},
                   {"point_accuracy", explanation.accuracy},
                   {"folds", std::min<size_t>(settings.tree.folds, n)},
                   {"height", explanation.tree.height},
                   {"leaves", explanation.tree.leaves()},
                   {"nodes", treeJson(explanation.tree, data)}};
  // The scatter plot's points: all, or an even stride through each cluster's, every cluster
  // keeping its share of max_plotted but at least a tenth of it (the rare slow calls are the point
  // of the plot).
  nlohmann::ordered_json plotted = nlohmann::ordered_json::array();
  std::vector<size_t> stride(k, 1), seen_in(k, 0);
  for (uint32_t c = 0; c < k; ++c) {
    const double share = static_cast<double>(sizes[c]) / static_cast<double>(n);
    const auto quota = std::max<size_t>(
        settings.max_plotted / 10,
        static_cast<size_t>(share * static_cast<double>(settings.max_plotted)));
    stride[c] = std::max<size_t>(1, (sizes[c] + quota - 1) / std::max<size_t>(quota, 1));
  }
  for (size_t p = 0; p < n; ++p) {
    const uint32_t c = clusters.labels[p];
    if (seen_in[c]++ % stride[c] != 0)
      continue;
    nlohmann::ordered_json point = {{"x", data.points.inputs(static_cast<Eigen::Index>(p), 0)},
                                    {"y", data.points.times(static_cast<Eigen::Index>(p))},
                                    {"cluster", clusters.labels[p]}};
    if (p < data.point_refs.size())
      for (const auto& [key, value] : data.point_refs[p].items())
        point[key] = value;
    plotted.push_back(std::move(point));
  }
  model["data"] = std::move(plotted);
  return model;
}

namespace {

// "calls of F > t" with F named short (function_names.h), as every text output names functions:
// a template's full name can run to kilobytes. The model keeps the full one.
std::string shortPredicate(const std::string& predicate) {
  static constexpr std::string_view kCallsOf = "calls of ";
  const size_t threshold = predicate.rfind(" > ");
  if (predicate.rfind(kCallsOf, 0) != 0 || threshold == std::string::npos ||
      threshold < kCallsOf.size())
    return predicate;
  const std::string_view name =
      std::string_view(predicate).substr(kCallsOf.size(), threshold - kCallsOf.size());
  return std::string(kCallsOf) + shortFunctionName(name) + predicate.substr(threshold);
}

void describeNode(const nlohmann::ordered_json& nodes, size_t index, int indent, std::string& out) {
  const auto& node = nodes[index];
  const std::string pad(static_cast<size_t>(indent) * 2, ' ');
  if (!node.contains("predicate")) {
    const uint32_t c = node["cluster"].get<uint32_t>();
    out += pad + "-> cluster " + std::to_string(c + 1) + " (" +
           std::to_string(node["counts"][c].get<uint64_t>()) + " of " +
           std::to_string(node["points"].get<uint64_t>()) + ")\n";
    return;
  }
  out += pad + "if " + shortPredicate(node["predicate"].get<std::string>()) + ":\n";
  describeNode(nodes, node["yes"].get<size_t>(), indent + 1, out);
  out += pad + "else:\n";
  describeNode(nodes, node["no"].get<size_t>(), indent + 1, out);
}

std::string perInput(double ns) {
  char text[64];
  if (std::abs(ns) >= 1000)
    std::snprintf(text, sizeof text, "%.4g us", ns / 1000);
  else
    std::snprintf(text, sizeof text, "%.4g ns", ns);
  return text;
}

} // namespace

std::string describeExplanation(const nlohmann::ordered_json& model) {
  std::string out;
  char line[512];
  const std::string unit = model["unit"];
  const auto points = model["points"].get<uint64_t>(), seen = model["seen"].get<uint64_t>(),
             left_out = model["left_out"].get<uint64_t>();
  std::snprintf(line, sizeof line, "%llu %s, input: %s\n", static_cast<unsigned long long>(points),
                model["subject"].get<std::string>().c_str(),
                model["input"].get<std::string>().c_str());
  out += line;
  if (seen > points + left_out)
    out += "(a uniform sample: " + std::to_string(points + left_out) + " of " +
           std::to_string(seen) + " " + unit + "s kept, --max-points per thread)\n";
  if (left_out > 0)
    out += std::to_string(left_out) + " " + unit + "s without the annotation left out\n";
  const uint32_t k = model["k"];
  std::snprintf(line, sizeof line, "\n%u cluster%s (%s, K %s):\n", k, k == 1 ? "" : "s",
                model["method"].get<std::string>().c_str(),
                model["k_chosen"].get<std::string>().c_str());
  out += line;
  if (model["k_chosen"] != "given" && model["k_chosen"] != "smallest within the error bound") {
    std::vector<double> mse_by_k;
    for (const auto& rms : model["rms_by_k"])
      mse_by_k.push_back(std::pow(rms.get<double>(), 2));
    std::snprintf(line, sizeof line,
                  "  (no K is within %g%% of the mean time: %s; K=%u cut the error most; "
                  "--clusters K chooses)\n",
                  100 * model["max_error"].get<double>(),
                  errorsByK(mse_by_k, model["mean_ns"].get<double>()).c_str(), k);
    out += line;
  }
  const std::string input = model["input"];
  if (model["trim"].get<double>() > 0)
    out += "  (the " + std::to_string(static_cast<int>(model["trim"].get<double>() * 100 + 0.5)) +
           "% of " + unit + "s farthest from their line are left out of the fits: --trim)\n";
  for (const auto& c : model["clusters"]) {
    std::snprintf(line, sizeof line, "  cluster %u: %llu %ss, time = %s x %s + %s (rms %s)\n",
                  c["cluster"].get<uint32_t>() + 1,
                  static_cast<unsigned long long>(c["points"].get<uint64_t>()), unit.c_str(),
                  perInput(c["slope_ns"].get<double>()).c_str(), input.c_str(),
                  describeNs(c["intercept_ns"].get<double>()).c_str(),
                  describeNs(c["rms_ns"].get<double>()).c_str());
    out += line;
  }
  const auto& tree = model["tree"];
  std::snprintf(
      line, sizeof line,
      "\nwhat separates them (accuracy %.1f%% by %zu-fold cross-validation, height %u):\n",
      100 * tree["accuracy"].get<double>(), tree["folds"].get<size_t>(),
      tree["height"].get<uint32_t>());
  out += line;
  // The accuracy counts each cluster alike: say how it comes about, and what counting every point
  // alike would have said.
  out += "  (the mean over the clusters of their " + unit + "s predicted right:";
  for (const auto& c : model["clusters"]) {
    const uint32_t cluster = c["cluster"].get<uint32_t>();
    std::snprintf(line, sizeof line, "%s cluster %u %.1f%%", cluster == 0 ? "" : ",", cluster + 1,
                  100 * c["accuracy"].get<double>());
    out += line;
  }
  std::snprintf(line, sizeof line, "; of all %ss: %.1f%%)\n", unit.c_str(),
                100 * tree["point_accuracy"].get<double>());
  out += line;
  describeNode(tree["nodes"], 0, 1, out);
  return out;
}

} // namespace shapetrace::analyzer
