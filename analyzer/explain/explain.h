// "Why are some requests (or runs) slow?": the DRT pipeline (drt.h) on data points taken from a
// trace (docs/explain.md).
//
// Within one run, every call of a chosen function (a request) is a data point: its input is the
// value of an annotation (shapetrace_annotate(KEY, value)) made during the call on its thread (the
// innermost open call of the function when the annotation was made; the last such annotation when
// there are several), or its position among its thread's calls of the function (in the order they
// finished) when no key is given; its time is
// the call's duration; its auxiliary variables are the calls of every function under it and its
// own shape. ExplainExtension collects them in the analysis pass, a bounded sample per thread.
//
// Across runs, every recording is a data point: its input is the last annotation with the key in
// the run, its time the run's span (first to last event), its auxiliary variables the calls of
// every function; the command (cli/explain_command.cpp) gathers them with one ExplainExtension per
// recording in run mode.
#pragma once

#include "explain/drt.h"
#include "extension.h"
#include "id_table.h"

#include <istream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace shapetrace::analyzer {

// A problem with the data that the user can fix (exit 1): no annotation with the key, fewer
// points than clusters, recordings of different programs, no clustering within the bound.
struct ExplainError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ExplainSettings {
  // Requests are slowed now and then by the scheduler or a page fault: K-linear leaves the 2% of
  // points farthest from their line out of its fits (docs/explain.md).
  ExplainSettings() { search.klinear.trim = search.spectral.trim = 0.02; }
  std::string function;  // calls of this function are the data points (within a run)
  // The annotation key of the input, or FUNC@argN / FUNC@retval: a value the pass recorded of a
  // call of FUNC under the point (docs/pass.md, "Arguments and return values"); empty: the call's
  // position.
  std::string input_key;
  uint32_t clusters = 0; // 0: Algorithm 1 picks the smallest K in [1, max_clusters]
  uint32_t max_clusters = 6;
  double max_error = 0.1; // Algorithm 1's bound: RMS error at most this fraction of the mean time
  drt::ClusterSearch search;
  drt::TreeOptions tree;
  uint32_t max_points = 50000; // calls kept per thread (reservoir sample beyond)
  bool shapes = true;          // the call's own shape as an auxiliary variable
  size_t max_plotted = 5000;   // points written to the model for the scatter plot
};

// The data points of any mode, with what to say about each.
struct ExplainData {
  std::string unit;       // what a point is: "call" or "run"
  std::string subject;    // "calls of kv::RequestHandler::serve", "runs"
  std::string input_name; // the key, or "position"
  drt::Points points;     // input, duration in ns
  drt::Features features; // names as predicates print them
  // Per feature: {"kind": "function"|"shape", "function": index, "shape": id} for links.
  std::vector<nlohmann::ordered_json> feature_refs;
  std::vector<nlohmann::ordered_json> point_refs; // per point: thread and start, or recording
  uint64_t seen = 0;                              // candidate points before sampling
  uint64_t left_out = 0;                          // without the input annotation
};

// Clusters, picks K, grows the tree: the "explain" model (docs/explain.md "JSON"). Throws
// ExplainError.
nlohmann::ordered_json explainData(const ExplainData& data, const ExplainSettings& settings);
// A table of runs in the layout of the DRT paper's data, "id,input_size,time,f1,...,fm" (`explain
// --csv`): a header naming the columns, then one run per line with its input, its time (read as
// nanoseconds) and the calls of each function. Each run is one data point; each function column a
// variable. A malformed table is an ExplainError naming `name` and the line.
ExplainData readRunsTable(std::istream& in, const std::string& name);
// The model as text a person can act on.
std::string describeExplanation(const nlohmann::ordered_json& model);

class ExplainExtension final : public Extension {
public:
  static constexpr const char* kName = "explain";
  // `runs`: run mode (annotations, span, executable; no call collection).
  ExplainExtension(ExplainSettings settings, bool runs, uint32_t max_depth);
  ~ExplainExtension() override;

  std::unique_ptr<ThreadConsumer> consumerFor(const ThreadKey& thread) override;
  void observe(const wire::StreamItem& item) override;
  // Call mode: the explanation, or {"error": ...}. Run mode: this run's data point
  // ({"input", "span_ns", "executable", "calls": {function identity: [name, calls]}}), or
  // {"error": ...} when the input cannot be one (a string value).
  nlohmann::ordered_json result(const Analysis& analysis, FunctionIndex& functions) const override;

  // --input FUNC@argN or FUNC@retval.
  struct ValueInput {
    std::string function;
    uint8_t position = 0; // N of argN, 0 for retval
  };
  // The value input `key` names, or nothing when it is an annotation key (no `@argN` or
  // `@retval` at its end).
  static std::optional<ValueInput> parseValueInput(const std::string& key);

  struct Instance {
    uint64_t enter_ns = 0, exit_ns = 0;
    uint64_t ordinal = 0;        // 1 for its thread's first call of the function to finish, ...
    uint32_t shape = UINT32_MAX; // in its thread's shape table
    std::vector<std::pair<uint32_t, uint32_t>> calls; // (function id, calls under it), by id
  };
  class Sink;

private:
  // An annotation (an item of its own or one of a batch's): its key is seen, its value kept
  // when it is the input.
  void takeAnnotation(uint64_t process, const wire::Annotation& note);
  // The batch's recorded values of the value input's function: inputs at the time of their call's
  // enter (arguments) or exit (the return value), held by the call of --function open then, as an
  // annotation made there would be.
  void takeValues(uint64_t process, const wire::EventBatch& batch);
  // Why no point has an input: what the recording has instead.
  std::string missingInputReason() const;
  // The value input is a string (recorded with /s): no number to regress on. Empty otherwise.
  std::string stringInputError() const;
  ExplainData collect(const Analysis& analysis, FunctionIndex& functions) const;
  nlohmann::ordered_json runPoint(const Analysis& analysis, FunctionIndex& functions) const;

  ExplainSettings settings_;
  bool runs_;
  uint32_t max_depth_;
  // Per process: which function ids are the chosen function (from its module tables).
  std::map<uint64_t, IdTable<uint8_t>> targets_; // per process: the chosen function's ids
  std::map<ThreadKey, std::vector<std::pair<uint64_t, double>>> annotations_; // (time, input)
  std::optional<ValueInput> value_input_;
  std::map<uint64_t, IdTable<uint8_t>> value_functions_; // per process: the value input's ids
  std::map<ThreadKey, uint64_t> last_event_ns_;          // for values that begin a batch
  uint64_t values_seen_ = 0; // values of the value input's function, at any position
  bool string_input_ = false; // the value input's position holds a string
  std::map<std::string, uint64_t> keys_seen_;
  std::map<uint64_t, std::string> executables_;
  uint64_t first_ns_ = UINT64_MAX, last_ns_ = 0;
  struct ThreadState;
  std::map<ThreadKey, std::unique_ptr<ThreadState>> threads_;
};

} // namespace shapetrace::analyzer
