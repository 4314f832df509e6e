// The checkpoint log: what a flusher writes reads back as the store's content, and damaged files
// are reported precisely.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

#include "background.h"
#include "checkpoint.h"
#include "store.h"

namespace kv {
namespace {

class CheckpointTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kvstore-checkpoint-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

std::map<Key, std::string> storeContents(Store& store) {
  std::map<Key, std::string> out;
  for (const PageImage& page : store.takeDirtyPages(true))
    for (const auto& [key, value] : page.entries)
      out.emplace(key, value);
  return out;
}

TEST_F(CheckpointTest, FlushedPagesReadBackAsTheStoreContent) {
  StoreOptions options;
  options.leaf_capacity = 8;
  options.fanout = 8;
  options.memory_budget_bytes = 1u << 30;
  Store store(options);
  CheckpointLog log(dir_ / "checkpoint.log");
  Flusher flusher(store, log, std::chrono::milliseconds(1000));
  std::mt19937_64 rng(42);
  // Several flushes with puts, replacements and deletes between them: later page images must
  // supersede earlier ones, deletions included.
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 500; ++i) {
      Key key = rng() % 1000;
      if (rng() % 4 == 0)
        store.erase(key);
      else
        store.put(key, std::string(rng() % 50, static_cast<char>('a' + round)));
    }
    flusher.flushOnce();
  }
  CheckpointContents read = readCheckpoint(dir_ / "checkpoint.log");
  EXPECT_FALSE(read.torn_tail);
  EXPECT_EQ(flusher.counters().flushes, 5u);
  EXPECT_EQ(read.pages.size(), flusher.counters().pages_written);
  EXPECT_EQ(replayPages(read.pages), storeContents(store));
  EXPECT_EQ(std::filesystem::file_size(dir_ / "checkpoint.log"), log.sizeBytes());
}

TEST_F(CheckpointTest, RewriteReplacesTheLogWithOneImagePerLeaf) {
  StoreOptions options;
  options.leaf_capacity = 8;
  options.fanout = 8;
  Store store(options);
  CheckpointLog log(dir_ / "checkpoint.log");
  // rewrite as soon as the log is larger than the live data
  Flusher flusher(store, log, std::chrono::milliseconds(1000), 1.0, 0);
  for (Key key = 0; key < 300; ++key)
    store.put(key, "first");
  flusher.flushOnce();
  for (Key key = 0; key < 300; ++key)
    store.put(key, "second");
  flusher.flushOnce();
  EXPECT_GE(flusher.counters().rewrites, 1u);
  CheckpointContents read = readCheckpoint(dir_ / "checkpoint.log");
  EXPECT_EQ(read.pages.size(), store.leafCount());
  std::map<Key, std::string> content = replayPages(read.pages);
  ASSERT_EQ(content.size(), 300u);
  EXPECT_EQ(content.at(0), "second");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "checkpoint.log.tmp"));
}

TEST_F(CheckpointTest, ATruncatedLastRecordIsATornTail) {
  std::vector<PageImage> pages = {{1, 0, 99, {{5, "five"}, {7, "seven"}}},
                                  {2, 100, 199, {{150, "x"}}}};
  {
    CheckpointLog log(dir_ / "checkpoint.log");
    log.append(pages);
  }
  auto size = std::filesystem::file_size(dir_ / "checkpoint.log");
  std::filesystem::resize_file(dir_ / "checkpoint.log", size - 3);
  CheckpointContents read = readCheckpoint(dir_ / "checkpoint.log");
  EXPECT_TRUE(read.torn_tail);
  ASSERT_EQ(read.pages.size(), 1u);
  EXPECT_EQ(read.pages[0].entries, pages[0].entries);
  EXPECT_EQ(read.pages[0].high, 99u);
}

TEST_F(CheckpointTest, ACorruptRecordIsAnErrorNamingItsOffset) {
  {
    CheckpointLog log(dir_ / "checkpoint.log");
    log.append({{1, 0, 99, {{5, "five"}}}});
  }
  {
    std::fstream file(dir_ / "checkpoint.log", std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(8 + 16 + 30); // inside the first record's payload
    file.put('!');
  }
  try {
    readCheckpoint(dir_ / "checkpoint.log");
    FAIL() << "a corrupt record was accepted";
  } catch (const CheckpointError& error) {
    EXPECT_NE(std::string(error.what()).find("checksum mismatch in the record at offset 8"),
              std::string::npos)
        << error.what();
  }
}

TEST_F(CheckpointTest, AFileThatIsNotACheckpointIsRejected) {
  std::ofstream(dir_ / "other") << "hello, world";
  EXPECT_THROW(readCheckpoint(dir_ / "other"), CheckpointError);
  EXPECT_THROW(readCheckpoint(dir_ / "missing"), CheckpointError);
  EXPECT_THROW(CheckpointLog(dir_ / "no-such-dir" / "checkpoint.log"), CheckpointError);
}

TEST(ReplayPages, ALaterImageOfARangeReplacesEverythingInIt) {
  std::vector<PageImage> pages = {
      {1, 0, 1000, {{1, "a"}, {500, "b"}, {900, "c"}}},
      {1, 0, 499, {{2, "d"}}},   // the leaf after a split: 1 was deleted since
      {2, 500, 1000, {{900, "e"}}}, // its new right sibling: 500 was evicted
  };
  std::map<Key, std::string> expected = {{2, "d"}, {900, "e"}};
  EXPECT_EQ(replayPages(pages), expected);
}

} // namespace
} // namespace kv
