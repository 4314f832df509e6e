// The report page: one self-contained HTML file (styles, scripts and data inline; no network).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace shapetrace::analyzer::report {

// The page with `data` (report_data.h) embedded. The data is written as a JSON script element,
// with every '<' escaped so no function name can close the element early.
std::string renderPage(const nlohmann::ordered_json& data);

// The data alone, in the same escaped JSON form (what the live server's snapshot endpoint sends).
std::string dataText(const nlohmann::ordered_json& data);

} // namespace shapetrace::analyzer::report
