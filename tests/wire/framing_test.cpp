// The recording framing: frames read back exactly, a torn tail at any cut is reported as torn, and
// corruption in the middle is skipped with everything after it recovered.
#include "wire/codec.h"
#include "wire/format_error.h"
#include "wire/framing.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

namespace shapetrace::wire {
namespace {

using Status = FrameScanner::Status;

struct Recording {
  std::vector<std::byte> file;
  std::vector<uint64_t> offsets; // of each frame
  std::vector<StreamItem> items;
};

Recording makeRecording(int frames) {
  Recording r;
  appendFileHeader(r.file);
  for (int i = 0; i < frames; ++i) {
    StreamItem item{7, EventBatch{1, static_cast<uint64_t>(i),
                                  std::vector<Event>(static_cast<size_t>(i + 1),
                                                     Event{100u + static_cast<uint64_t>(i), 3,
                                                           EventKind::Enter}), {}, {}, {}}};
    r.offsets.push_back(r.file.size());
    appendFrame(r.file, encodeItem(item));
    r.items.push_back(item);
  }
  return r;
}

std::vector<FrameScanner::Result> scanAll(std::span<const std::byte> file) {
  FrameScanner scanner(file);
  std::vector<FrameScanner::Result> results;
  for (auto r = scanner.next(); r.status != Status::End; r = scanner.next())
    results.push_back(r);
  return results;
}

TEST(Framing, FramesReadBackInOrderAtTheirOffsets) {
  Recording r = makeRecording(5);
  auto results = scanAll(r.file);
  ASSERT_EQ(results.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(results[i].status, Status::Frame);
    EXPECT_EQ(results[i].offset, r.offsets[i]);
    EXPECT_EQ(results[i].offset % 8, 0u);
    EXPECT_EQ(decodeItem(results[i].message), r.items[i]);
  }
}

TEST(Framing, EveryCutLeavesTheCompleteFramesAndATornTail) {
  Recording r = makeRecording(3);
  for (size_t cut = kFileHeaderBytes; cut < r.file.size(); ++cut) {
    SCOPED_TRACE(cut);
    auto results = scanAll(std::span(r.file).first(cut));
    size_t complete = 0;
    while (complete < 3 && (complete + 1 == 3 ? r.file.size() : r.offsets[complete + 1]) <= cut)
      ++complete;
    ASSERT_GE(results.size(), complete);
    for (size_t i = 0; i < complete; ++i)
      EXPECT_EQ(results[i].status, Status::Frame);
    if (cut == (complete == 0 ? kFileHeaderBytes : r.offsets[complete - 1] +
                                                      frameBytes(results[complete - 1].message.size())))
      EXPECT_EQ(results.size(), complete); // cut exactly on a frame boundary: nothing torn
    else {
      ASSERT_EQ(results.size(), complete + 1);
      EXPECT_EQ(results.back().status, Status::TornTail);
      EXPECT_EQ(results.back().offset + results.back().length, cut);
    }
  }
}

TEST(Framing, CorruptionInTheMiddleIsSkippedAndTheRestRecovered) {
  Recording r = makeRecording(4);
  // Damage one byte of frame 1's message: its checksum fails.
  r.file[r.offsets[1] + kFrameHeaderBytes + 3] ^= std::byte{0x40};
  auto results = scanAll(r.file);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].status, Status::Frame);
  EXPECT_EQ(results[1].status, Status::Corrupt);
  EXPECT_EQ(results[1].offset, r.offsets[1]);
  EXPECT_EQ(results[1].length, r.offsets[2] - r.offsets[1]);
  EXPECT_EQ(decodeItem(results[2].message), r.items[2]);
  EXPECT_EQ(decodeItem(results[3].message), r.items[3]);
}

TEST(Framing, ADamagedLengthDoesNotHideTheFramesAfterIt) {
  Recording r = makeRecording(3);
  uint32_t huge = 0x7ffffff8;
  std::memcpy(r.file.data() + r.offsets[0] + 4, &huge, sizeof(huge));
  auto results = scanAll(r.file);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].status, Status::Corrupt);
  EXPECT_EQ(results[1].status, Status::Frame);
  EXPECT_EQ(results[2].status, Status::Frame);
}

TEST(Framing, SeekStartsAtAnIndexedFrame) {
  Recording r = makeRecording(4);
  FrameScanner scanner(r.file);
  scanner.seek(r.offsets[2]);
  auto result = scanner.next();
  ASSERT_EQ(result.status, Status::Frame);
  EXPECT_EQ(decodeItem(result.message), r.items[2]);
  EXPECT_THROW(scanner.seek(r.offsets[2] + 4), FormatError);
  EXPECT_THROW(scanner.seek(r.file.size() + 8), FormatError);
}

TEST(Framing, ForeignFilesAreRefused) {
  std::vector<std::byte> file(64, std::byte{'x'});
  EXPECT_THROW(FrameScanner{file}, FormatError);
  EXPECT_THROW(FrameScanner{std::span(file).first(3)}, FormatError);
  Recording r = makeRecording(1);
  r.file[8] = std::byte{9}; // recording format version 9
  try {
    FrameScanner scanner(r.file);
    ADD_FAILURE();
  } catch (const FormatError& e) {
    EXPECT_EQ(e.reason(), FormatErrorReason::UnsupportedVersion);
  }
}

TEST(Framing, MappedFileReadsWhatWasWritten) {
  Recording r = makeRecording(2);
  auto path = std::filesystem::temp_directory_path() / "shapetrace-framing-test.rec";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(r.file.data()), static_cast<std::streamsize>(r.file.size()));
  }
  MappedFile mapped(path.string());
  EXPECT_EQ(scanAll(mapped.bytes()).size(), 2u);
  std::filesystem::remove(path);
  EXPECT_THROW(MappedFile("/nonexistent/shapetrace.rec"), std::system_error);
}

} // namespace
} // namespace shapetrace::wire
