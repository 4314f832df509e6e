// Durations as a person reads them in a sentence or a table row ("15.8 us"): the diff's
// explanations, explain's lines.
#pragma once

#include <string>

namespace shapetrace::analyzer {

// ns below a microsecond, then us, ms (one decimal) and s (two); negative values keep their sign.
std::string describeNs(double ns);

} // namespace shapetrace::analyzer
