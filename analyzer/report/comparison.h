// The baseline comparison view's data (`shapetrace report NEW --baseline BASE`): what changed between the
// two runs (diff/run_diff.h), every cluster's activity over each run for the ribbons side by side,
// and the differential flame graph (diff/flame_diff.h) when both models carry the flame extension.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

namespace shapetrace::analyzer::report {

// Columns of a cluster's activity series: enough to show where in a run a cluster was busy, small
// enough that a run's every cluster costs a few hundred kilobytes on the page.
inline constexpr size_t kActivityColumns = 160;

// Per cluster of `model` with calls: the time its calls were busy in each of `columns` equal
// stretches of the run (from the first to the last bin of the occurrence timelines), in ns summed
// over threads. {"first_ns", "last_ns", "clusters": [{"cluster", "busy_ns": [...]}]}
nlohmann::ordered_json clusterActivity(const nlohmann::ordered_json& model,
                                       size_t columns = kActivityColumns);

// The page's "baseline": {"source", "diff" (diffJson), "activity": {"base", "new"},
// "flame": flameDiffJson | null, "flame_note": why there is no differential flame graph | ""}.
// Throws std::invalid_argument when the runs cannot be compared (diffRuns' errors).
nlohmann::ordered_json comparisonData(const nlohmann::ordered_json& base,
                                      const nlohmann::ordered_json& now,
                                      const std::string& base_source);

} // namespace shapetrace::analyzer::report
