// The page's source files (analyzer/report/page/), embedded into the binary at build time by
// embed_assets.cmake.
#pragma once

#include <string_view>

namespace shapetrace::analyzer::report::assets {

extern const std::string_view report_html;
extern const std::string_view report_css;
// The scripts, in the order the page loads them (each one uses only those before it).
extern const std::string_view format_js;
extern const std::string_view model_js;
extern const std::string_view shapes_js;
extern const std::string_view timeline_js;
extern const std::string_view instance_js;
extern const std::string_view tables_js;
extern const std::string_view app_js;

} // namespace shapetrace::analyzer::report::assets
