// The live page's reads of the recording the collector is writing (`shapetrace live --recording
// DIR`, the collector's --out): one exact call instance, as the report embeds them, and the flame
// graph of a scope (a time window, a thread, a cluster), as the flame extension writes its tree.
//
// The page names what it wants the way it knows it: a thread (its process key as the page's data
// carries it, the decimal digits of the 64-bit key: page.h dataText), a time window of starts, and
// either an outlier's function and duration or a cluster. The recording is opened for each request: it grows while the service runs, and the
// reader checks every frame it reads (a frame being written is a torn tail, not an error).
#pragma once

#include "analysis.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace shapetrace::analyzer::report {

struct InstanceQuery {
  uint64_t process = 0;
  uint32_t thread = 0;
  uint64_t from_ns = 0, to_ns = 0; // the call starts in [from_ns, to_ns)
  // An outlier: its function (the model's index) and its duration.
  std::optional<uint32_t> function;
  std::optional<uint64_t> duration_ns;
  // An occurrence of a cluster.
  std::optional<ClusterId> cluster;
};

// From the request's parameters: process, thread, from_ns, to_ns, and function + duration_ns or
// cluster. Throws std::invalid_argument naming what is missing or malformed.
InstanceQuery parseInstanceQuery(const std::multimap<std::string, std::string>& params);

// The first call of the query's thread that starts in its window and matches, as
// report_data.h's instanceJson (reason "outlier" or "live"); nullopt when there is none. Throws
// std::runtime_error when the recording cannot be opened.
std::optional<nlohmann::ordered_json> readLiveInstance(const std::string& recording,
                                                       const Analysis& analysis,
                                                       const InstanceQuery& query,
                                                       size_t max_calls);

// The calling-context tree of the calls a scope holds (scope.h), read from the recording:
// {"scope": its description, "calls", "nodes": flame.h's treeColumns}. The parameters, all
// optional: from_ns and to_ns (absolute), process and thread (as for an instance), cluster.
// Throws std::invalid_argument for a malformed parameter, ScopeError for a name the analysis does
// not have, std::runtime_error when the recording cannot be read.
nlohmann::ordered_json readLiveFlame(const std::string& recording, const Analysis& analysis,
                                     uint64_t run_start_ns,
                                     const std::multimap<std::string, std::string>& params);

} // namespace shapetrace::analyzer::report
