// The summary `collect` and `record` print when they stop: per sender what was received and what
// was rejected, and the state of the recording.
#pragma once

#include "collector.h"

#include <cstdio>

namespace shapetrace::cli {

void printCollectorSummary(std::FILE* out, const collector::CollectorStats& stats,
                           const std::string& out_dir);

} // namespace shapetrace::cli
