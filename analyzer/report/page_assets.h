// The page's source files (analyzer/report/page/), embedded into the binary at build time by
// embed_assets.cmake.
#pragma once

#include <span>
#include <string_view>

namespace shapetrace::analyzer::report::assets {

extern const std::string_view report_html;
extern const std::string_view report_css;
// The scripts, in the order the page loads them (CMakeLists.txt's page_scripts).
extern const std::span<const std::string_view> scripts;

} // namespace shapetrace::analyzer::report::assets
