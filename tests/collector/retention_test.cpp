// Retention on real files: past the size or age limit the writer deletes the oldest whole
// segments; what is read back is the deleted segments' non-batch items in order, one gap per thread
// that counts exactly the deleted events (its sequence and time span), then every batch of the
// kept segments exactly as written; retention.json agrees with the writer's counts, a stale carry
// left by a crash is skipped, and a damaged retention.json stops the reader.
#include "batch_item.h"
#include "process.h"
#include "recording/recording.h"

#include "wire/codec.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <thread>

namespace shapetrace::recording {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using wire::StreamItem;
using namespace std::chrono_literals;

// A process start and module table of process 11, two threads' starts, then `batches` batches
// per thread (thread 2's have one more event than thread 1's, so the counts differ per thread),
// with a thread name in the middle.
std::vector<StreamItem> sampleItems(int batches) {
  std::vector<StreamItem> items;
  wire::ProcessStart start;
  start.pid = 4242;
  start.executable = "/bin/service";
  items.push_back({11, start});
  wire::ModuleTable table;
  table.functions.push_back({0, "main", "main", "main.cc", 1});
  table.functions.push_back({1, "work", "work", "main.cc", 5});
  table.functions.push_back({2, "leaf", "leaf", "main.cc", 9});
  items.push_back({11, table});
  for (uint32_t thread : {1u, 2u})
    items.push_back({11, wire::ThreadStart{thread, 50, "worker"}});
  for (int s = 0; s < batches; ++s) {
    for (uint32_t thread : {1u, 2u})
      items.push_back(testing::batchItem(11, thread, static_cast<uint64_t>(s),
                            1000 + 1000 * static_cast<uint64_t>(s), 8 + static_cast<int>(thread)));
    if (s == batches / 3)
      items.push_back({11, wire::ThreadName{1, 60, "renamed"}});
  }
  return items;
}

std::vector<StreamItem> readAll(RecordingReader& reader) {
  std::vector<StreamItem> items;
  while (auto item = reader.nextItem())
    items.push_back(*item);
  return items;
}

std::vector<uint32_t> segmentNumbers(const std::string& dir) {
  std::vector<uint32_t> numbers;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".seg")
      numbers.push_back(static_cast<uint32_t>(std::stoul(entry.path().stem().string())));
  std::sort(numbers.begin(), numbers.end());
  return numbers;
}

// Checks what a reader returns against what was written: the non-batch items in order, a gap per
// thread with exactly the deleted batches' events, then the batches that were kept, a suffix of
// each thread's batches, exactly.
void expectDeletedPrefixIsAGap(const std::vector<StreamItem>& written,
                               const std::vector<StreamItem>& read, const RetentionStats& stats) {
  std::vector<StreamItem> carried, batches;
  for (const StreamItem& item : written)
    (item.kind() == wire::ItemKind::EventBatch ? batches : carried).push_back(item);
  // The non-batch items, deleted segments' (from the carry) and kept ones', in the written order.
  std::vector<StreamItem> read_carried, read_gaps, read_batches;
  for (const StreamItem& item : read) {
    if (item.kind() == wire::ItemKind::Gap) {
      ASSERT_TRUE(read_batches.empty()) << "a gap after the kept batches started";
      read_gaps.push_back(item);
    } else if (item.kind() == wire::ItemKind::EventBatch) {
      read_batches.push_back(item);
    } else {
      read_carried.push_back(item);
    }
  }
  EXPECT_EQ(read_carried, carried);
  ASSERT_LE(read_batches.size(), batches.size());
  const size_t deleted = batches.size() - read_batches.size();
  EXPECT_EQ(deleted, stats.batches);
  EXPECT_TRUE(std::equal(read_batches.begin(), read_batches.end(), batches.begin() + deleted));
  // Per thread: the deleted batches' events, sequences and times.
  std::map<uint32_t, RetentionStats::Thread> expected;
  uint64_t events = 0;
  for (size_t i = 0; i < deleted; ++i) {
    const auto& b = std::get<wire::EventBatch>(batches[i].body);
    RetentionStats::Thread& t = expected[b.thread];
    if (t.batches == 0) {
      t.first_sequence = b.sequence;
      t.first_ns = b.events.front().timestamp;
    }
    t.last_sequence = b.sequence;
    t.last_ns = b.events.front().timestamp;
    ++t.batches;
    t.events += b.events.size();
    events += b.events.size();
  }
  EXPECT_EQ(stats.events, events);
  ASSERT_EQ(read_gaps.size(), expected.size());
  EXPECT_EQ(stats.gap_items, expected.size());
  for (const StreamItem& item : read_gaps) {
    const auto& gap = std::get<wire::Gap>(item.body);
    ASSERT_TRUE(expected.count(gap.thread));
    const RetentionStats::Thread& t = expected.at(gap.thread);
    EXPECT_EQ(item.process, 11u);
    EXPECT_EQ(gap.dropped, t.events);
    EXPECT_EQ(gap.after_sequence, t.last_sequence);
    EXPECT_EQ(gap.from_ns, t.first_ns);
    EXPECT_EQ(gap.to_ns, t.last_ns);
    const RetentionStats::Thread& counted = stats.threads.at({11, gap.thread});
    EXPECT_EQ(counted.events, t.events);
    EXPECT_EQ(counted.batches, t.batches);
    EXPECT_EQ(counted.first_sequence, t.first_sequence);
    EXPECT_EQ(counted.last_sequence, t.last_sequence);
  }
}

TEST(Retention, SizeLimitDeletesTheOldestWholeSegmentsAndLeavesAGapPerThread) {
  TempDir tmp;
  const std::string dir = tmp.sub("rec");
  const auto items = sampleItems(300);
  RecordingOptions options;
  options.segment_bytes = 4096;
  options.buffer_bytes = 1000;
  options.retain_bytes = 3 * 4096;
  RetentionStats stats;
  {
    RecordingWriter writer(dir, options);
    for (const StreamItem& item : items)
      ASSERT_TRUE(writer.append(wire::encodeItem(item)));
    ASSERT_TRUE(writer.close());
    stats = writer.stats().retention;
    EXPECT_EQ(writer.stats().retention_error, "");
    EXPECT_EQ(writer.stats().items_written, items.size());
    // Deleted and kept segments are all the segments written (the carry took the number of the
    // last deleted one).
    const auto numbers = segmentNumbers(dir);
    EXPECT_EQ(stats.segments + numbers.size() - 1, writer.stats().segments);
  }
  const auto numbers = segmentNumbers(dir);
  ASSERT_GE(numbers.size(), 2u);
  EXPECT_GT(stats.segments, 5u);
  EXPECT_EQ(numbers.front(), stats.carry_segment);
  EXPECT_FALSE(fs::exists(segmentPath(dir, 0)));
  uint64_t on_disk = 0;
  for (uint32_t n : numbers)
    on_disk += fs::file_size(segmentPath(dir, n));
  EXPECT_LE(on_disk, options.retain_bytes);

  const auto from_file = readRetention(dir);
  ASSERT_TRUE(from_file.has_value());
  EXPECT_EQ(from_file->segments, stats.segments);
  EXPECT_EQ(from_file->bytes, stats.bytes);
  EXPECT_EQ(from_file->batches, stats.batches);
  EXPECT_EQ(from_file->events, stats.events);
  EXPECT_EQ(from_file->carry_segment, stats.carry_segment);
  EXPECT_EQ(from_file->threads.size(), 2u);

  RecordingReader reader(dir);
  EXPECT_EQ(reader.segmentNumber(0), stats.carry_segment);
  ASSERT_TRUE(reader.retention().has_value());
  const auto read = readAll(reader);
  EXPECT_TRUE(reader.damage().empty());
  expectDeletedPrefixIsAGap(items, read, stats);
  // The index of the carry segment seeks as any other.
  EXPECT_TRUE(reader.seek(11, 2, 0));
}

TEST(Retention, AgeLimitDeletesEverySegmentClosedLongerAgoButNotTheOpenOne) {
  TempDir tmp;
  const std::string dir = tmp.sub("rec");
  const auto items = sampleItems(60);
  RecordingOptions options;
  options.segment_bytes = 4096;
  options.retain_age = std::chrono::seconds(1);
  RecordingWriter writer(dir, options);
  for (const StreamItem& item : items)
    ASSERT_TRUE(writer.append(wire::encodeItem(item)));
  ASSERT_TRUE(writer.flush());
  const uint64_t segments = writer.stats().segments;
  ASSERT_GE(segments, 3u);
  // The writer thread checks the age while idle too: wait (bounded) until it deleted them all.
  for (int i = 0; i < 200 && writer.stats().retention.segments < segments - 1; ++i)
    std::this_thread::sleep_for(50ms);
  EXPECT_EQ(writer.stats().retention.segments, segments - 1);
  // What is left: the carry and the open segment.
  EXPECT_EQ(segmentNumbers(dir).size(), 2u);
  ASSERT_TRUE(writer.close());
  RecordingReader reader(dir);
  expectDeletedPrefixIsAGap(items, readAll(reader), writer.stats().retention);
}

TEST(Retention, ACarryLeftBehindByACrashIsSkipped) {
  TempDir tmp;
  const std::string dir = tmp.sub("rec");
  const auto items = sampleItems(200);
  RecordingOptions options;
  options.segment_bytes = 4096;
  options.retain_bytes = 3 * 4096;
  RetentionStats stats;
  {
    RecordingWriter writer(dir, options);
    for (const StreamItem& item : items)
      ASSERT_TRUE(writer.append(wire::encodeItem(item)));
    ASSERT_TRUE(writer.close());
    stats = writer.stats().retention;
  }
  ASSERT_GT(stats.carry_segment, 0u);
  std::vector<StreamItem> clean;
  {
    RecordingReader reader(dir);
    clean = readAll(reader);
  }
  // A crash between the rename of the new carry and the removal of the old one leaves the old
  // carry (a subset) below it.
  fs::copy_file(segmentPath(dir, stats.carry_segment), segmentPath(dir, stats.carry_segment - 1));
  RecordingReader reader(dir);
  EXPECT_EQ(readAll(reader), clean);
  EXPECT_EQ(reader.segmentNumber(0), stats.carry_segment);
}

TEST(Retention, ADamagedRetentionFileStopsTheReader) {
  TempDir tmp;
  const std::string dir = tmp.sub("rec");
  {
    RecordingWriter writer(dir);
    ASSERT_TRUE(writer.append(wire::encodeItem(sampleItems(1).back())));
  }
  std::ofstream(dir + "/retention.json") << "{\"carry_segment\": 1";
  try {
    RecordingReader reader(dir);
    FAIL() << "a damaged retention.json was read as a clean recording";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("retention.json is damaged"), std::string::npos)
        << e.what();
  }
  // No limit, no file, nothing deleted.
  fs::remove(dir + "/retention.json");
  EXPECT_FALSE(readRetention(dir).has_value());
}

} // namespace
} // namespace shapetrace::recording
