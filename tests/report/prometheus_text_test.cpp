// The /metrics text: label values are valid UTF-8 with the exposition format's escapes, whatever
// bytes a function name holds (docs/security.md).
#include "cli/prometheus_text.h"

#include <gtest/gtest.h>

#include <string>

namespace shapetrace::cli {
namespace {

TEST(PrometheusTextTest, LabelValuesAreValidUtf8WithTheFormatsEscapes) {
  PrometheusText text;
  text.family("calls_total", "counter", "Calls\nby function");
  // 0xFF 0xFE (no UTF-8), NUL, CR, a quote, a backslash, a newline, a truncated sequence, then
  // well-formed two-, three- and four-byte sequences, kept.
  const std::string name = std::string("a\xFF\xFE" "b", 4) + std::string(1, '\0') + "c\rd\"e\\f\ng" +
                           "\xC3" + "h\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
  text.sample("", {{"function", name}}, 3);
  EXPECT_EQ(text.text(), "# HELP calls_total Calls\\nby function\n"
                         "# TYPE calls_total counter\n"
                         "calls_total{function=\"a\xEF\xBF\xBD\xEF\xBF\xBD" "b\xEF\xBF\xBD"
                         "c\xEF\xBF\xBD" "d\\\"e\\\\f\\ng\xEF\xBF\xBD"
                         "h\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"} 3\n");
}

TEST(PrometheusTextTest, OverlongFormsAndSurrogatesAreNotUtf8) {
  PrometheusText text;
  text.family("f", "gauge", "h");
  // An overlong "/" (C0 AF), a surrogate (ED A0 80), a code point above U+10FFFF (F4 90 80 80).
  text.sample("", {{"l", "\xC0\xAF|\xED\xA0\x80|\xF4\x90\x80\x80"}}, 1);
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(text.text(), "# HELP f h\n# TYPE f gauge\nf{l=\"" + r + r + "|" + r + r + r + "|" + r +
                             r + r + r + "\"} 1\n");
}

} // namespace
} // namespace shapetrace::cli
