// The inputs of recording_fuzzer (recording_fuzzer.cpp): a flags byte, the index file's length
// (4 bytes, little-endian), the index file, then the segment file.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

namespace shapetrace::fuzz {

enum RecordingInputFlags : uint8_t {
  kWithHeader = 1, // a valid segment file header precedes the segment's bytes
  kWithIndex = 2,  // the index file is written
  kSecondCopy = 4, // the segment is also written as segment 2
};

struct RecordingInput {
  uint8_t flags = 0;
  std::span<const uint8_t> index, segment;
};

// Nullopt when the input is shorter than its flags and length; an index length past the end of
// the input takes the rest of it.
inline std::optional<RecordingInput> splitRecordingInput(std::span<const uint8_t> data) {
  if (data.size() < 5)
    return std::nullopt;
  uint32_t index_bytes = 0;
  std::memcpy(&index_bytes, data.data() + 1, 4);
  const std::span<const uint8_t> rest = data.subspan(5);
  const size_t split = std::min<size_t>(index_bytes, rest.size());
  return RecordingInput{data[0], rest.first(split), rest.subspan(split)};
}

} // namespace shapetrace::fuzz
