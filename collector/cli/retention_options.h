// `--retain-gib` and `--retain-hours`: the retention limits of `collect` and `record`
// (recording.h, "Retention"), declared once for both.
#pragma once

#include "recording/recording.h"

#include <CLI/CLI.hpp>

namespace shapetrace::cli {

struct RetentionFlags {
  double gib = 0;   // 0: no size limit
  double hours = 0; // 0: no age limit
};

void addRetentionOptions(CLI::App& command, RetentionFlags& flags);
// Sets options.retain_bytes and retain_age. Throws std::invalid_argument (a usage error) when the
// size limit cannot hold two segments of options.segment_bytes (the one being written is never
// deleted) or the age limit is under a second.
void applyRetention(const RetentionFlags& flags, recording::RecordingOptions& options);

} // namespace shapetrace::cli
