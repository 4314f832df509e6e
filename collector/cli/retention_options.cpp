#include "retention_options.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace shapetrace::cli {

void addRetentionOptions(CLI::App& command, RetentionFlags& flags) {
  command.add_option("--retain-gib", flags.gib,
                     "keep at most this many GiB of segments (decimals allowed): the oldest whole "
                     "segments are deleted, their loss counted in DIR/retention.json")
      ->check(CLI::PositiveNumber);
  command.add_option("--retain-hours", flags.hours,
                     "delete whole segments closed longer than this many hours ago (decimals "
                     "allowed)")
      ->check(CLI::PositiveNumber);
}

void applyRetention(const RetentionFlags& flags, recording::RecordingOptions& options) {
  if (flags.gib > 0) {
    const double bytes = flags.gib * static_cast<double>(uint64_t{1} << 30);
    if (!std::isfinite(bytes) || bytes > 9e18)
      throw std::invalid_argument("--retain-gib " + std::to_string(flags.gib) + " is too large");
    options.retain_bytes = static_cast<uint64_t>(bytes);
    if (options.retain_bytes < 2 * options.segment_bytes)
      throw std::invalid_argument(
          "--retain-gib " + std::to_string(flags.gib) + " (" +
          std::to_string(options.retain_bytes >> 20) + " MiB) holds fewer than two segments of " +
          std::to_string(options.segment_bytes >> 20) +
          " MiB: retention deletes whole segments and never the one being written; raise it or "
          "lower --segment-size");
  }
  if (flags.hours > 0) {
    const double seconds = flags.hours * 3600;
    if (!std::isfinite(seconds) || seconds > 1e12)
      throw std::invalid_argument("--retain-hours " + std::to_string(flags.hours) +
                                  " is too large");
    if (seconds < 1)
      throw std::invalid_argument("--retain-hours " + std::to_string(flags.hours) +
                                  " is under a second");
    options.retain_age = std::chrono::seconds(static_cast<int64_t>(seconds));
  }
}

} // namespace shapetrace::cli
