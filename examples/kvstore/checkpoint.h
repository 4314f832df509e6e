// The store's checkpoint on disk: an append-only log of leaf page images.
//
// The flusher appends the images of the pages that changed since its last flush, then calls
// fdatasync, so that a put that had to wait for a flush knows its page is on disk. Because every
// image carries the exact key range its leaf owns, replaying the log in order (each image replaces
// whatever an earlier image said about its range) rebuilds the store's content as of the last
// flush, deletions and evictions included. When the log grows past a multiple of the live data the
// flusher rewrites it as one image per leaf (to a temporary file, renamed over the log).
//
// File format (little-endian): an 8-byte header "KVCKPT01", then records: u32 magic "KVPG",
// u32 payload length, u64 XXH3-64 of the payload, and the payload: u64 page id, u64 low key,
// u64 high key (both inclusive), u32 entry count, then per entry u64 key, u32 value length, bytes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "btree.h"

namespace kv {

// A checkpoint file that cannot be opened, written or parsed; what() says which and where.
class CheckpointError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class CheckpointLog {
public:
  // Opens (creating it if needed) the log at path for appending. Throws CheckpointError.
  explicit CheckpointLog(std::filesystem::path path);
  ~CheckpointLog();
  CheckpointLog(const CheckpointLog&) = delete;
  CheckpointLog& operator=(const CheckpointLog&) = delete;

  // Appends the images and makes them durable. Returns the bytes written.
  std::uint64_t append(const std::vector<PageImage>& pages);
  // Replaces the whole log with these images (normally one per leaf) atomically.
  std::uint64_t rewrite(const std::vector<PageImage>& pages);

  std::uint64_t sizeBytes() const { return size_bytes_; }
  const std::filesystem::path& path() const { return path_; }

private:
  void openForAppend();

  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t size_bytes_ = 0;
};

// Serialises images into records, header excluded.
std::string encodePages(const std::vector<PageImage>& pages);

struct CheckpointContents {
  std::vector<PageImage> pages;
  bool torn_tail = false; // the last record was cut short (a crash during a flush)
};

// Reads every record of a checkpoint file. A truncated last record is reported as a torn tail;
// anything else that is wrong (bad header, magic, checksum, or lengths) throws CheckpointError.
CheckpointContents readCheckpoint(const std::filesystem::path& path);

// The store's content that a sequence of images describes.
std::map<Key, std::string> replayPages(const std::vector<PageImage>& pages);

} // namespace kv
