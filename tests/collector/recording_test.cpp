// The recording writer and reader on real files: items read back exactly and in order across
// segment rotations, a cut at any byte leaves every whole frame readable and the rest reported as a
// torn tail, corruption in the middle is skipped and reported, and the index seeks to a thread's
// batch covering a time (also when the index file is missing or damaged).
#include "batch_item.h"
#include "process.h"
#include "recording/recording.h"

#include "wire/codec.h"
#include "wire/format_error.h"

#include <filesystem>
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

namespace shapetrace::recording {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using wire::StreamItem;

// Items of two processes, two threads each: a ThreadStart then `batches` batches per thread.
std::vector<StreamItem> sampleItems(int batches) {
  std::vector<StreamItem> items;
  for (uint64_t process : {11u, 22u})
    for (uint32_t thread : {1u, 2u})
      items.push_back(StreamItem{process, wire::ThreadStart{thread, 50, "worker"}});
  for (int s = 0; s < batches; ++s)
    for (uint64_t process : {11u, 22u})
      for (uint32_t thread : {1u, 2u})
        items.push_back(testing::batchItem(process, thread, static_cast<uint64_t>(s),
                              1000 + 1000 * static_cast<uint64_t>(s)));
  return items;
}

void writeAll(const std::string& dir, const std::vector<StreamItem>& items,
              RecordingOptions options = {}) {
  RecordingWriter writer(dir, options);
  for (const StreamItem& item : items)
    ASSERT_TRUE(writer.append(wire::encodeItem(item)));
  ASSERT_TRUE(writer.close());
  EXPECT_EQ(writer.stats().items, items.size());
  EXPECT_EQ(writer.stats().items_written, items.size());
}

std::vector<StreamItem> readAll(RecordingReader& reader) {
  std::vector<StreamItem> items;
  while (auto item = reader.nextItem())
    items.push_back(*item);
  return items;
}

TEST(Recording, ItemsReadBackExactlyAndInOrder) {
  TempDir tmp;
  const auto items = sampleItems(20);
  writeAll(tmp.sub("rec"), items);
  RecordingReader reader(tmp.sub("rec"));
  EXPECT_EQ(reader.segmentCount(), 1u);
  EXPECT_EQ(readAll(reader), items);
  EXPECT_TRUE(reader.damage().empty());
  EXPECT_EQ(reader.undecodable(), 0u);
}

TEST(Recording, RotatesSegmentsAtTheConfiguredSizeAndReadsThemInOrder) {
  TempDir tmp;
  const auto items = sampleItems(50);
  RecordingOptions options;
  options.segment_bytes = 4096;
  options.buffer_bytes = 1000; // smaller than a segment: buffers and rotation interleave
  writeAll(tmp.sub("rec"), items, options);
  RecordingReader reader(tmp.sub("rec"));
  ASSERT_GT(reader.segmentCount(), 5u);
  for (uint32_t s = 0; s < reader.segmentCount(); ++s) {
    const auto size = fs::file_size(segmentPath(tmp.sub("rec"), s));
    EXPECT_LE(size, 4096u) << "segment " << s;
    EXPECT_GT(size, 16u) << "segment " << s;
  }
  EXPECT_EQ(readAll(reader), items);
  EXPECT_TRUE(reader.damage().empty());
}

TEST(Recording, RefusesADirectoryThatAlreadyHoldsARecording) {
  TempDir tmp;
  writeAll(tmp.sub("rec"), sampleItems(1));
  EXPECT_THROW(RecordingWriter(tmp.sub("rec")), std::runtime_error);
}

TEST(Recording, ReaderRejectsADirectoryWithoutSegments) {
  TempDir tmp;
  EXPECT_THROW(RecordingReader{tmp.path()}, std::runtime_error);
  EXPECT_THROW(RecordingReader{tmp.sub("missing")}, std::runtime_error);
}

TEST(Recording, FlushMakesAppendedItemsReadableWhileTheWriterIsOpen) {
  TempDir tmp;
  const auto items = sampleItems(3);
  RecordingWriter writer(tmp.sub("rec"));
  for (const StreamItem& item : items)
    ASSERT_TRUE(writer.append(wire::encodeItem(item)));
  ASSERT_TRUE(writer.flush());
  RecordingReader reader(tmp.sub("rec"));
  EXPECT_EQ(readAll(reader), items);
  EXPECT_TRUE(reader.damage().empty());
}

TEST(Recording, RejectsAMessageThatIsNotWholeWords) {
  TempDir tmp;
  RecordingWriter writer(tmp.sub("rec"));
  std::vector<std::byte> odd(12);
  EXPECT_THROW(writer.append(odd, wire::ItemHeader{}), std::invalid_argument);
  EXPECT_THROW(writer.append(std::vector<std::byte>(16)), wire::FormatError);
}

// Cutting the only segment at every byte: each whole frame before the cut reads back, and exactly
// the bytes after the last whole frame are reported as a torn tail.
TEST(Recording, ACutAtAnyByteKeepsEveryWholeFrameAndReportsTheTornTail) {
  TempDir tmp;
  const auto items = sampleItems(2);
  writeAll(tmp.sub("rec"), items);
  std::vector<uint64_t> ends; // frame ends
  {
    RecordingReader reader(tmp.sub("rec"));
    while (auto frame = reader.next())
      ends.push_back(frame->offset + 16 + frame->message.size());
  }
  const std::string segment = segmentPath(tmp.sub("rec"), 0);
  std::ifstream in(segment, std::ios::binary);
  const std::string full((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(full.size(), ends.back());
  fs::remove(indexPath(tmp.sub("rec"), 0));

  for (size_t cut = 0; cut < full.size(); ++cut) {
    std::ofstream(segment, std::ios::binary | std::ios::trunc).write(full.data(),
                                                                     static_cast<long>(cut));
    RecordingReader reader(tmp.sub("rec"));
    const auto got = readAll(reader);
    const size_t whole = static_cast<size_t>(
        std::upper_bound(ends.begin(), ends.end(), cut) - ends.begin());
    ASSERT_EQ(got.size(), whole) << "cut at " << cut;
    EXPECT_TRUE(std::equal(got.begin(), got.end(), items.begin())) << "cut at " << cut;
    const uint64_t intact_end = whole ? ends[whole - 1] : 16;
    const bool torn = cut > 0 && (cut < 16 || cut != intact_end);
    if (!torn) {
      EXPECT_TRUE(reader.damage().empty()) << "cut at " << cut;
    } else {
      ASSERT_EQ(reader.damage().size(), 1u) << "cut at " << cut;
      const Damage& d = reader.damage()[0];
      EXPECT_EQ(d.kind, Damage::Kind::TornTail) << "cut at " << cut;
      EXPECT_EQ(d.offset + d.length, cut) << "cut at " << cut;
      EXPECT_EQ(d.offset, cut < 16 ? 0 : intact_end) << "cut at " << cut;
    }
  }
}

TEST(Recording, CorruptionInTheMiddleIsSkippedReportedAndEverythingElseReadsBack) {
  TempDir tmp;
  const auto items = sampleItems(10);
  RecordingOptions options;
  options.segment_bytes = 2048;
  writeAll(tmp.sub("rec"), items, options);
  std::vector<Frame> frames;
  {
    RecordingReader reader(tmp.sub("rec"));
    while (auto f = reader.next())
      frames.push_back(Frame{f->segment, f->offset, {}});
  }
  // Flip a byte inside the third frame of segment 1.
  const auto victim = std::find_if(frames.begin(), frames.end(),
                                   [](const Frame& f) { return f.segment == 1; }) + 2;
  ASSERT_EQ(victim->segment, 1u);
  {
    std::fstream file(segmentPath(tmp.sub("rec"), 1), std::ios::in | std::ios::out |
                                                          std::ios::binary);
    file.seekp(static_cast<long>(victim->offset + 24));
    file.put('\x5a');
  }
  RecordingReader reader(tmp.sub("rec"));
  const auto got = readAll(reader);
  const size_t lost = static_cast<size_t>(victim - frames.begin());
  ASSERT_EQ(got.size(), items.size() - 1);
  EXPECT_TRUE(std::equal(got.begin(), got.begin() + static_cast<long>(lost), items.begin()));
  EXPECT_TRUE(std::equal(got.begin() + static_cast<long>(lost), got.end(),
                         items.begin() + static_cast<long>(lost) + 1));
  ASSERT_EQ(reader.damage().size(), 1u);
  EXPECT_EQ(reader.damage()[0].kind, Damage::Kind::Corrupt);
  EXPECT_EQ(reader.damage()[0].segment, 1u);
  EXPECT_EQ(reader.damage()[0].offset, victim->offset);
  EXPECT_EQ(reader.damage()[0].length, (victim + 1)->offset - victim->offset);
}

// Seeks to (process 22, thread 2, time) and expects the next frame of that thread to be the batch
// whose first event is the last one at or before the time.
void expectSeekLandsOnTheCoveringBatch(RecordingReader& reader) {
  const std::vector<std::pair<uint64_t, uint64_t>> cases = {
      {0, 1000}, {1000, 1000}, {1500, 1000}, {7999, 7000}, {25'000, 25'000}, {999'999, 40'000}};
  for (auto [time, expected_first] : cases) {
    ASSERT_TRUE(reader.seek(22, 2, time)) << time;
    std::optional<StreamItem> item;
    do {
      item = reader.nextItem();
    } while (item && !(item->process == 22 && item->kind() == wire::ItemKind::EventBatch &&
                       std::get<wire::EventBatch>(item->body).thread == 2));
    ASSERT_TRUE(item) << time;
    EXPECT_EQ(std::get<wire::EventBatch>(item->body).events.front().timestamp, expected_first)
        << time;
  }
  EXPECT_FALSE(reader.seek(22, 3, 5000));
  EXPECT_FALSE(reader.seek(33, 2, 5000));
}

TEST(Recording, IndexSeeksToTheBatchOfAThreadCoveringATime) {
  TempDir tmp;
  RecordingOptions options;
  options.segment_bytes = 4096;
  writeAll(tmp.sub("rec"), sampleItems(40), options);
  RecordingReader reader(tmp.sub("rec"));
  ASSERT_GT(reader.segmentCount(), 3u);
  // The stored index has one record per frame.
  size_t records = 0;
  for (uint32_t s = 0; s < reader.segmentCount(); ++s) {
    records += reader.index(s).size();
    EXPECT_EQ(fs::file_size(indexPath(tmp.sub("rec"), s)),
              reader.index(s).size() * sizeof(IndexRecord));
  }
  EXPECT_EQ(records, sampleItems(40).size());
  expectSeekLandsOnTheCoveringBatch(reader);
}

// After a seek, nextOfThread() gives exactly that thread's items from the sought one on, in
// recording order, across segments, without moving next(); before any seek, nothing.
TEST(Recording, NextOfThreadReadsOneThreadThroughTheIndex) {
  TempDir tmp;
  RecordingOptions options;
  options.segment_bytes = 4096;
  const auto items = sampleItems(40);
  writeAll(tmp.sub("rec"), items, options);
  RecordingReader reader(tmp.sub("rec"));
  ASSERT_GT(reader.segmentCount(), 3u);
  EXPECT_FALSE(reader.nextOfThread());
  ASSERT_TRUE(reader.seek(22, 2, 5500)); // the batch of 5000..
  std::vector<StreamItem> expected;
  for (const StreamItem& item : items)
    if (const auto* batch = std::get_if<wire::EventBatch>(&item.body);
        batch && item.process == 22 && batch->thread == 2 &&
        batch->events.front().timestamp >= 5000)
      expected.push_back(item);
  std::vector<StreamItem> got;
  while (auto frame = reader.nextOfThread())
    got.push_back(wire::decodeItem(frame->message));
  EXPECT_EQ(got, expected);
  // next() still starts at the sought frame.
  const auto first = reader.nextItem();
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, expected.front());
}

// A copy of an early segment stored after the last one (a duplicated segment) holds items of the
// thread with earlier times: a seek still lands on the batch that covers the time, not on the copy
// (from which the reader would skip everything in between).
TEST(Recording, SeekIgnoresACopyOfAnEarlierSegmentStoredLater) {
  TempDir tmp;
  RecordingOptions options;
  options.segment_bytes = 4096;
  const auto items = sampleItems(40);
  writeAll(tmp.sub("rec"), items, options);
  uint32_t segments = 0;
  while (fs::exists(segmentPath(tmp.sub("rec"), segments)))
    ++segments;
  ASSERT_GT(segments, 3u);
  fs::copy_file(segmentPath(tmp.sub("rec"), 0), segmentPath(tmp.sub("rec"), segments));
  RecordingReader reader(tmp.sub("rec"));
  ASSERT_TRUE(reader.seek(22, 2, 5500));
  const auto frame = reader.nextOfThread();
  ASSERT_TRUE(frame);
  EXPECT_LT(frame->segment, segments);
  const StreamItem item = wire::decodeItem(frame->message);
  const auto& batch = std::get<wire::EventBatch>(item.body);
  EXPECT_EQ(batch.thread, 2u);
  EXPECT_EQ(batch.events.front().timestamp, 5000u);
}

TEST(Recording, IndexIsRebuiltWhenItsFileIsMissingOrDamaged) {
  TempDir tmp;
  RecordingOptions options;
  options.segment_bytes = 4096;
  writeAll(tmp.sub("rec"), sampleItems(40), options);
  fs::remove(indexPath(tmp.sub("rec"), 1));
  std::ofstream(indexPath(tmp.sub("rec"), 2), std::ios::binary | std::ios::trunc)
      .write(std::string(32, '\x7f').data(), 32);
  fs::resize_file(indexPath(tmp.sub("rec"), 3), fs::file_size(indexPath(tmp.sub("rec"), 3)) - 5);
  RecordingReader reader(tmp.sub("rec"));
  expectSeekLandsOnTheCoveringBatch(reader);
}

// The records of a segment's stored index file, as the writer wrote them.
std::vector<IndexRecord> storedIndex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<IndexRecord> records;
  IndexRecord record;
  while (in.read(reinterpret_cast<char*>(&record), sizeof record))
    records.push_back(record);
  return records;
}

// An index that lacks records, at its end (the writer stopped between a frame and its record) or
// in the middle (a record it failed to write), is completed from the frames: every frame stays
// reachable through seek().
TEST(Recording, IndexThatLacksRecordsIsCompletedFromTheFrames) {
  TempDir tmp;
  RecordingOptions options;
  options.segment_bytes = 4096;
  writeAll(tmp.sub("intact"), sampleItems(40), options);
  writeAll(tmp.sub("rec"), sampleItems(40), options);
  auto rewrite = [](const std::string& path, const std::vector<IndexRecord>& kept) {
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(kept.data()),
               static_cast<std::streamsize>(kept.size() * sizeof(IndexRecord)));
  };
  std::vector<IndexRecord> first = storedIndex(indexPath(tmp.sub("rec"), 0));
  ASSERT_GT(first.size(), 3u);
  first.resize(first.size() - 2); // the last two records
  rewrite(indexPath(tmp.sub("rec"), 0), first);
  std::vector<IndexRecord> second = storedIndex(indexPath(tmp.sub("rec"), 1));
  ASSERT_GT(second.size(), 3u);
  second.erase(second.begin() + 1); // one in the middle
  rewrite(indexPath(tmp.sub("rec"), 1), second);

  RecordingReader intact(tmp.sub("intact"));
  RecordingReader reader(tmp.sub("rec"));
  ASSERT_EQ(reader.segmentCount(), intact.segmentCount());
  for (uint32_t segment = 0; segment < reader.segmentCount(); ++segment) {
    const auto& got = reader.index(segment);
    const auto& want = intact.index(segment);
    ASSERT_EQ(got.size(), want.size()) << "segment " << segment;
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(std::memcmp(&got[i], &want[i], sizeof(IndexRecord)), 0)
          << "segment " << segment << " record " << i;
  }
  expectSeekLandsOnTheCoveringBatch(reader);
}

// A frame header damaged under an intact index record (a length that is no frame's) does not
// make the segment unreadable: the index is rebuilt by scanning, which skips the damage.
TEST(Recording, AnIndexedFrameWithADamagedLengthIsScannedPast) {
  TempDir tmp;
  RecordingOptions options;
  options.segment_bytes = 4096;
  writeAll(tmp.sub("rec"), sampleItems(40), options);
  const std::vector<IndexRecord> records = storedIndex(indexPath(tmp.sub("rec"), 0));
  ASSERT_GT(records.size(), 2u);
  {
    std::fstream segment(segmentPath(tmp.sub("rec"), 0), std::ios::binary | std::ios::in | std::ios::out);
    segment.seekg(static_cast<std::streamoff>(records.back().offset + 4));
    uint32_t length = 0;
    segment.read(reinterpret_cast<char*>(&length), sizeof length);
    length -= 4;
    segment.seekp(static_cast<std::streamoff>(records.back().offset + 4));
    segment.write(reinterpret_cast<const char*>(&length), sizeof length);
  }
  RecordingReader reader(tmp.sub("rec"));
  const auto& index = reader.index(0);
  EXPECT_EQ(index.size(), records.size() - 1); // all but the damaged frame
  size_t items = 0;
  while (reader.nextItem())
    ++items;
  EXPECT_EQ(items, sampleItems(40).size() - 1);
  EXPECT_FALSE(reader.damage().empty());
}

TEST(Recording, RewindReadsEverythingAgain) {
  TempDir tmp;
  const auto items = sampleItems(5);
  RecordingOptions options;
  options.segment_bytes = 1024;
  writeAll(tmp.sub("rec"), items, options);
  RecordingReader reader(tmp.sub("rec"));
  EXPECT_EQ(readAll(reader), items);
  reader.rewind();
  EXPECT_EQ(readAll(reader), items);
}

} // namespace
} // namespace shapetrace::recording
