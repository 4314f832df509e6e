// The live page's click-through: one exact call instance read from the recording the collector is
// writing (`shapetrace live --recording DIR`, the collector's --out), as the report embeds them.
//
// The page names what it wants the way it knows it: a thread (its process as the page's JSON
// number, which cannot hold every 64-bit key exactly, so it is matched against the threads' keys
// as a double), a time window of starts, and either an outlier's function and duration or a
// cluster. The recording is opened for each request: it grows while the service runs, and the
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
  double process = 0;
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

} // namespace shapetrace::analyzer::report
