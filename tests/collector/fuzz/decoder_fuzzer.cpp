// libFuzzer target for everything that reads untrusted bytes: the stream decoder (decodeItem and
// peekItem, as the collector and the analyzer call them) and the recording framing (FrameScanner,
// as RecordingReader walks a damaged segment).
//
// Oracles besides "no crash, no sanitizer report": peekItem accepts whatever decodeItem accepts,
// with the same process and kind; a decoded item re-encodes to bytes that decode to the same item;
// and the scanner's results tile the file (frames, corrupt ranges and a torn tail cover every byte
// exactly once, in order).
//
// Build and run (bounded, as CI does):
//   cmake -S . -B build-fuzz -G Ninja -DSHAPETRACE_BUILD_FUZZERS=ON && \
//     cmake --build build-fuzz --target decoder_fuzzer
//   build-fuzz/tests/collector/decoder_fuzzer -max_total_time=60 -rss_limit_mb=2048 \
//     build-fuzz/tests/collector/decoder_fuzzer_corpus
#include "wire/codec.h"
#include "wire/format_error.h"
#include "wire/framing.h"

#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

using namespace shapetrace::wire;

namespace {

void check(bool condition) {
  if (!condition)
    std::abort();
}

void fuzzMessage(std::span<const std::byte> bytes) {
  std::optional<StreamItem> item;
  try {
    item = decodeItem(bytes);
  } catch (const FormatError&) {
  }
  std::optional<ItemHeader> header;
  try {
    header = peekItem(bytes);
  } catch (const FormatError&) {
  }
  if (!item)
    return;
  check(header.has_value());
  check(header->process == item->process && header->kind == item->kind());
  const Bytes again = encodeItem(*item);
  // The decoder bounds what a message may expand to: at most 4 list elements per input word,
  // each re-encoded in at most a few words.
  check(again.size() <= 64 * bytes.size() + 4096);
  check(decodeItem(again) == *item);
}

void fuzzFraming(std::span<const std::byte> bytes) {
  std::vector<std::byte> file;
  appendFileHeader(file);
  file.insert(file.end(), bytes.begin(), bytes.end());
  FrameScanner scanner(file);
  uint64_t covered = kFileHeaderBytes;
  for (auto r = scanner.next(); r.status != FrameScanner::Status::End; r = scanner.next()) {
    check(r.offset == covered && r.length > 0);
    covered += r.length;
    if (r.status == FrameScanner::Status::Frame)
      fuzzMessage(r.message);
  }
  check(covered == file.size());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copy so that the message is 8-byte aligned, as the collector's buffers are, and unaligned
  // through the odd offset below, as a transport may hand it over.
  std::vector<std::byte> aligned(reinterpret_cast<const std::byte*>(data),
                                 reinterpret_cast<const std::byte*>(data) + size);
  fuzzMessage(aligned);
  if (size > 0 && (data[0] & 1)) {
    std::vector<std::byte> shifted(size + 1);
    std::memcpy(shifted.data() + 1, data, size);
    fuzzMessage(std::span(shifted).subspan(1));
  }
  fuzzFraming(aligned);
  return 0;
}
