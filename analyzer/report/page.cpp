// Assembling the page from its embedded parts.
#include "report/page.h"

#include "report/page_assets.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <stdexcept>
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
  // Process keys are random 64-bit numbers, and a JavaScript number keeps 53 bits of them: the
  // page gets each as a string of its digits. In the compact dump every quote inside a string is
  // escaped, so a `"process":` followed by a digit is always a key and its number.
  static constexpr std::string_view kProcessKeys[] = {"\"process\":", "\"parent_process\":"};
  const auto processKeyAt = [&](size_t at) -> size_t {
    for (const std::string_view key : kProcessKeys)
      if (json.compare(at, key.size(), key) == 0 && at + key.size() < json.size() &&
          std::isdigit(static_cast<unsigned char>(json[at + key.size()])))
        return key.size();
    return 0;
  };
  std::string out;
  out.reserve(json.size() + json.size() / 64);
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '"') {
      if (const size_t key = processKeyAt(i)) {
        const size_t digits_end =
            std::min(json.find_first_not_of("0123456789", i + key), json.size());
        out.append(json, i, key).append(1, '"');
        out.append(json, i + key, digits_end - (i + key)).append(1, '"');
        i = digits_end - 1;
        continue;
      }
    }
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

nlohmann::ordered_json progressJson(const LiveProgress& p, const std::string& note) {
  nlohmann::ordered_json json = {{"received_events", p.received_events},
                                 {"analysed_events", p.analysed_events},
                                 {"waiting_events", p.waiting_events},
                                 {"missed_items", p.missed_items}};
  if (!note.empty()) json["note"] = note;
  return json;
}

} // namespace shapetrace::analyzer::report
