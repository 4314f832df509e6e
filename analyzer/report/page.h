// The report page: one self-contained HTML file (styles, scripts and data inline; no network).
#pragma once

#include "live_progress.h"

#include <nlohmann/json.hpp>

#include <string>

namespace shapetrace::analyzer::report {

// The page with `data` (report_data.h) embedded. The data is written as a JSON script element,
// with every '<' escaped so no function name can close the element early.
std::string renderPage(const nlohmann::ordered_json& data);

// Where the page in live mode (`shapetrace live`, `shapetrace fleet --http`) polls for new data
// (GET `snapshot` every `interval_ms`) and, when the server has a recording, asks for exact calls
// and flame graphs (empty: none).
struct LiveLinks {
  std::string snapshot;
  int interval_ms = 1000;
  std::string instances;
  std::string flame;
};
// The page with `data` and its live links (data["live"]).
std::string renderLivePage(nlohmann::ordered_json data, const LiveLinks& links);

// The data alone, in the same escaped JSON form (what the live server's endpoints send). Process
// keys ("process", "parent_process") are written as strings: they are 64-bit, more than a
// JavaScript number holds exactly.
std::string dataText(const nlohmann::ordered_json& data);

// The page's live_state.progress ("analysed X of Y events received", app.js progressChips), with
// `note` (may be empty) saying what else the view lacks.
nlohmann::ordered_json progressJson(const LiveProgress& progress, const std::string& note = "");

} // namespace shapetrace::analyzer::report
