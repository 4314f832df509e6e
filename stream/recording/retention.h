// SegmentRetention: the RecordingWriter's retention (recording.h, "Retention"), on its writer
// thread: deletes the oldest closed segments past the size or age limit, keeping their non-batch
// items in the carry segment with one Gap item per thread, and writes DIR/retention.json.
#pragma once

#include "recording/recording.h"

#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace shapetrace::recording {

class SegmentRetention {
public:
  SegmentRetention(std::string dir, const RecordingOptions& options);

  // The writer closed segment `number` of `bytes` bytes: a candidate for deletion from now on.
  void segmentClosed(uint32_t number, uint64_t bytes);
  // Deletes the oldest closed segments while the recording (the carry, the closed segments and
  // the open one's `open_bytes`) is larger than the limit or the oldest closed one is too old.
  // Returns whether it deleted any. After a failure (error()) it deletes nothing more.
  bool enforce(uint64_t open_bytes);

  const RetentionStats& stats() const { return stats_; }
  const std::string& error() const { return error_; }

private:
  struct Closed {
    uint32_t number = 0;
    uint64_t bytes = 0;
    std::chrono::steady_clock::time_point closed;
  };
  // A non-batch item of a deleted segment, kept in the carry.
  struct Carried {
    wire::ItemHeader header;
    std::vector<std::byte> message;
  };
  // Throws std::runtime_error when a file cannot be written or renamed.
  void deleteOldest();

  const std::string dir_;
  const uint64_t retain_bytes_;
  const std::chrono::seconds retain_age_;
  const unsigned mode_;
  std::deque<Closed> closed_;
  uint64_t closed_bytes_ = 0;
  std::vector<Carried> carried_;
  std::optional<uint32_t> carry_number_;
  uint64_t carry_bytes_ = 0;
  RetentionStats stats_;
  std::string error_;
};

} // namespace shapetrace::recording
