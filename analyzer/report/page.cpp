// Assembling the page from its embedded parts.
#include "report/page.h"

#include "report/page_assets.h"

#include <stdexcept>
#include <initializer_list>
#include <string_view>
#include <utility>

namespace shapetrace::analyzer::report {
namespace {

// The template with each marker replaced by its part. The markers are found in the template
// alone, so nothing inside the parts (a function named "/*@DATA@*/") is ever taken for one.
std::string fill(std::string_view page,
                 std::initializer_list<std::pair<std::string_view, std::string_view>> parts) {
  std::string out;
  size_t done = 0;
  for (const auto& [marker, part] : parts) {
    const size_t at = page.find(marker, done);
    if (at == std::string_view::npos)
      throw std::logic_error("report page template lacks " + std::string(marker));
    out.append(page.substr(done, at - done));
    out.append(part);
    done = at + marker.size();
  }
  out.append(page.substr(done));
  return out;
}

std::string script() {
  std::string out;
  for (std::string_view part : assets::scripts) {
    out += part;
    out += '\n';
  }
  return out;
}

} // namespace

std::string dataText(const nlohmann::ordered_json& data) {
  // Invalid UTF-8 in a function name must not make the report fail: replace it.
  const std::string json = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(json.size() + json.size() / 64);
  for (char c : json) {
    // '<' only occurs inside JSON strings, where \u003c means the same.
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

std::string renderLivePage(nlohmann::ordered_json data, const LiveLinks& links) {
  data["live"] = {{"snapshot", links.snapshot},
                  {"interval_ms", links.interval_ms},
                  {"instances", links.instances},
                  {"flame", links.flame}};
  return renderPage(data);
}

std::string renderPage(const nlohmann::ordered_json& data) {
  const std::string data_text = dataText(data);
  const std::string script_text = script();
  return fill(assets::report_html, {{"/*@STYLE@*/", assets::report_css},
                                    {"/*@DATA@*/", data_text},
                                    {"/*@SCRIPT@*/", script_text}});
}

} // namespace shapetrace::analyzer::report
