#include "duration_text.h"

#include <cmath>
#include <cstdio>

namespace shapetrace::analyzer {

std::string describeNs(double ns) {
  char text[32];
  const double a = std::fabs(ns);
  if (a < 1e3) std::snprintf(text, sizeof text, "%.0f ns", ns);
  else if (a < 1e6) std::snprintf(text, sizeof text, "%.1f us", ns / 1e3);
  else if (a < 1e9) std::snprintf(text, sizeof text, "%.1f ms", ns / 1e6);
  else std::snprintf(text, sizeof text, "%.2f s", ns / 1e9);
  return text;
}

} // namespace shapetrace::analyzer
