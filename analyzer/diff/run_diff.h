// What changed between two runs (`shapetrace diff BASE NEW`), computed from their JSON models
// (docs/analyzer.md), so that a stored baseline compares with a new run without its events.
//
// Matching is structural: both runs' shapes are interned into one ShapeTable over function
// identities (analysis.h's nameFunction rule: the mangled name), so a shape of BASE and one of NEW
// are the same shape exactly when they have the same structure, whatever their ids or the order in
// which they first appeared. A cluster of NEW matches the cluster of BASE that shares the most of
// its shapes' calls. A shape only in NEW is described against its nearest shape of the same
// function in BASE by the Shape metric (the functions it calls that the nearest does not, and the
// reverse).
//
// A change is reported only when it is both significant and large enough (docs/analyzer.md,
// "diff"): durations by Welch's test on the running moments (count, mean, standard deviation), a
// shape's frequency (its share of its function's calls) by a two-proportion test, each with
// |z| >= DiffSettings::z and a relative change of at least DiffSettings::min_change. With the
// millions of calls of a run the tests alone flag differences too small to matter; the relative
// change keeps noise between two runs of the same program out.
#pragma once

#include "shape_table.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace shapetrace::analyzer {

struct DiffSettings {
  double z = 3.29;          // two-sided p < 0.001 (normal approximation: the counts are large)
  double min_change = 0.05; // relative change of a mean or of a share
  uint64_t min_calls = 10;  // calls on each side before a duration is compared
};

// The running statistics the model keeps, as the diff reads them.
struct DurationSummary {
  uint64_t count = 0; // measured calls
  double mean_ns = 0, sd_ns = 0, sum_ns = 0, p99_ns = 0;
};

enum class ChangeKind : uint8_t { kNew, kVanished, kSlower, kFaster, kMoreFrequent, kLessFrequent };
const char* changeKindName(ChangeKind kind);

// One change of one shape, ranked by its impact on the run's time.
struct ShapeChange {
  ChangeKind kind = ChangeKind::kNew;
  std::string function;            // display name
  uint64_t base_calls = 0, new_calls = 0;
  DurationSummary base, now;
  double base_share = 0, new_share = 0; // of its function's calls
  double z = 0;                        // the test's statistic (0 for new and vanished shapes)
  double impact_ns_per_s = 0;          // change of the time spent in it per second of run
  std::vector<std::string> also_calls; // new shapes: what the nearest BASE shape does not call
  std::vector<std::string> no_longer_calls;
  double nearest_distance = -1;        // Shape metric to the nearest BASE shape (-1: none)
  int64_t nearest_base_shape = -1;     // new shapes: that nearest shape's id in BASE
  // New (vanished) only because a child shape is new (vanished): a caller of the change, not its
  // cause. Ranked after the others and left out of the explanations.
  bool derived = false;
  int64_t base_shape = -1, new_shape = -1; // ids in each model (-1: absent)
  // Calls of its function on the deepest path of the shape, its root included: 1 unless the
  // function recurses; the sentences name a recursive shape by it ("recursing 5 deep").
  uint32_t recursion_depth = 1;
};

struct FunctionChange {
  std::string function;
  uint64_t base_calls = 0, new_calls = 0;
  DurationSummary base, now;
  double z = 0;
  double relative_change = 0; // of the mean duration
  double impact_ns_per_s = 0;
  bool significant = false;
  std::vector<size_t> explained_by; // indices into RunDiff::shapes of its shapes' changes
};

struct ClusterChange {
  int64_t base_cluster = -1, new_cluster = -1;
  std::string function;
  uint64_t base_calls = 0, new_calls = 0;
  DurationSummary base, now;
  double z = 0;
  double relative_change = 0;
  bool significant = false;
  double shared = 0; // share of the NEW cluster's calls in shapes the BASE cluster also has
};

// Functions one run left out and the other did not (the models' "excluded" and "throttled"), by
// their full names, sorted.
struct FilteringDifference {
  std::vector<std::string> filtered_only_base, filtered_only_new;
  std::vector<std::string> throttled_only_base, throttled_only_new;
  bool same() const {
    return filtered_only_base.empty() && filtered_only_new.empty() &&
           throttled_only_base.empty() && throttled_only_new.empty();
  }
};

struct RunDiff {
  double base_seconds = 0, new_seconds = 0;
  uint64_t base_calls = 0, new_calls = 0;
  size_t shared_functions = 0;
  std::vector<ShapeChange> shapes;      // significant changes, causes first, largest |impact| first
  std::vector<FunctionChange> functions; // every matched function with calls, |impact| first
  std::vector<ClusterChange> clusters;   // every cluster of either run, matched where possible
  std::vector<std::string> explanations; // sentences, the most telling first
  FilteringDifference filtering;
};

// "FILTERED DIFFERENTLY: ... (filtered out at build only in BASE: hash; throttled only in NEW:
// log_line)": the headline of two runs that left different functions out (at most 10 named per
// list); empty when they left out the same.
std::string filteringWarning(const FilteringDifference& difference);

// Throws std::invalid_argument for a model that is not "shapetrace-analysis" version 1, and when
// the two runs share no function (recordings of different programs).
RunDiff diffRuns(const nlohmann::ordered_json& base, const nlohmann::ordered_json& now,
                 const DiffSettings& settings = {});

// The diff as JSON (docs/analyzer.md, "diff").
nlohmann::ordered_json diffJson(const RunDiff& diff);

// The functions or clusters that got slower by more than `percent` with significance.
std::vector<std::string> regressions(const RunDiff& diff, double percent);

} // namespace shapetrace::analyzer
