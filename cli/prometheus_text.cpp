// The exposition format's escaping and number formatting.
#include "cli/prometheus_text.h"

#include "wire/utf8.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace shapetrace::cli {
namespace {


// HELP text escapes \ and newline; label values also ". The format is UTF-8: bytes that are not
// (a function name is whatever the binary holds) and control characters a parser would trip on
// (NUL, CR...) become U+FFFD.
void appendEscaped(std::string& out, std::string_view text, bool quote) {
  constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  while (!text.empty()) {
    const char c = text.front();
    const size_t length = wire::utf8SequenceLength(text);
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (quote && c == '"') out += "\\\"";
    else if (length == 0 || (length == 1 && (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)))
      out += kReplacement;
    else out.append(text.substr(0, length));
    text.remove_prefix(std::max<size_t>(length, 1));
  }
}

// Integers exactly (counts up to 2^53), other values with enough digits to round-trip.
void appendNumber(std::string& out, double value) {
  if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  char text[40];
  if (value == std::floor(value) && std::fabs(value) < 9.007199254740992e15) {
    std::snprintf(text, sizeof text, "%.0f", value);
  } else {
    // The shortest form that reads back as the same double (0.0025, not 0.0025000000000000001).
    for (int precision = 1; precision <= 17; ++precision) {
      std::snprintf(text, sizeof text, "%.*g", precision, value);
      if (std::strtod(text, nullptr) == value) break;
    }
  }
  out += text;
}

} // namespace

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
  family_ = name;
  text_ += "# HELP ";
  text_ += name;
  text_ += ' ';
  appendEscaped(text_, help, false);
  text_ += "\n# TYPE ";
  text_ += name;
  text_ += ' ';
  text_ += type;
  text_ += '\n';
}

void PrometheusText::sample(std::string_view suffix, const PrometheusLabels& labels, double value) {
  text_ += family_;
  text_ += suffix;
  if (!labels.empty()) {
    text_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i) text_ += ',';
      text_ += labels[i].first;
      text_ += "=\"";
      appendEscaped(text_, labels[i].second, true);
      text_ += '"';
    }
    text_ += '}';
  }
  text_ += ' ';
  appendNumber(text_, value);
  text_ += '\n';
}

void PrometheusText::histogram(const PrometheusLabels& labels, const std::vector<double>& bounds,
                               const std::vector<uint64_t>& cumulative, double sum,
                               uint64_t count) {
  PrometheusLabels with_le = labels;
  with_le.emplace_back("le", "");
  for (size_t i = 0; i < bounds.size(); ++i) {
    std::string le;
    appendNumber(le, bounds[i]);
    with_le.back().second = le;
    sample("_bucket", with_le, static_cast<double>(cumulative[i]));
  }
  with_le.back().second = "+Inf";
  sample("_bucket", with_le, static_cast<double>(count));
  sample("_sum", labels, sum);
  sample("_count", labels, static_cast<double>(count));
}

} // namespace shapetrace::cli
