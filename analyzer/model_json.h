// The analysis as JSON: the documented model (docs/analyzer.md) that `shapetrace analyze --json`
// writes and the report renders. Deterministic: the same Analysis gives the same bytes (keys in a
// fixed order, arrays in id order, doubles printed shortest-round-trip).
#pragma once

#include "analysis.h"

#include <nlohmann/json.hpp>

namespace shapetrace::analyzer {

inline constexpr int kModelVersion = 1;

// The optional parts of the core model (the extensions' results are written whenever they ran).
struct ModelSections {
  bool distances = false; // the distance matrix of the shapes of each base function
  bool dag = false;       // the exact-sequence DAG nodes (they can be many)
};

nlohmann::ordered_json toJson(const Analysis& analysis, const ModelSections& sections = {});

// A function's identity across runs, from its entry in a model's "functions": its mangled name, or
// its name when it has none (analysis.h's nameFunction rule).
std::string functionIdentity(const nlohmann::ordered_json& function);

} // namespace shapetrace::analyzer
