// The on-disk framing: a recording file is a file header followed by framed messages.
//
//   file header  (16 bytes): "SHTRACE\0", u32 recording format version, u32 flags (0)
//   frame header (16 bytes): u32 magic "STRF", u32 message length in bytes (a multiple of 8),
//                            u64 XXH3-64 of the message
//   message      (length bytes): one StreamItem as codec.h writes it
//
// All integers little-endian. Frames start on 8-byte boundaries (headers are 16 bytes and messages
// whole words), so a mapped file can be read in place. The magic and checksum let a reader tell a
// torn tail (the writer died mid-frame) from corruption in the middle, skip the corrupt bytes and
// resynchronise on the next intact frame.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace shapetrace::wire {

inline constexpr uint32_t kRecordingFormatVersion = 1;
inline constexpr size_t kFileHeaderBytes = 16;
inline constexpr size_t kFrameHeaderBytes = 16;
inline constexpr uint32_t kFrameMagic = 0x46525453; // "STRF" as little-endian bytes

// Appends the file header to `out`.
void appendFileHeader(std::vector<std::byte>& out);
// Appends one frame holding `message` (whose size must be a multiple of 8) to `out`.
void appendFrame(std::vector<std::byte>& out, std::span<const std::byte> message);
// Bytes a frame of `message_bytes` takes in a file.
inline size_t frameBytes(size_t message_bytes) { return kFrameHeaderBytes + message_bytes; }

// Walks the frames of one recording file held in memory (typically a MappedFile).
// Not thread-safe; the bytes must outlive the scanner.
class FrameScanner {
public:
  // Throws FormatError(BadHeader) when `file` does not start with a recording file header.
  explicit FrameScanner(std::span<const std::byte> file);

  enum class Status : uint8_t {
    Frame,    // `message` holds the next intact message, at `offset`
    Corrupt,  // bytes [offset, offset + length) are not intact frames and were skipped
    TornTail, // the last `length` bytes, from `offset`, are an incomplete final frame
    End,      // no more bytes
  };
  struct Result {
    Status status = Status::End;
    uint64_t offset = 0;
    uint64_t length = 0;
    std::span<const std::byte> message;
  };

  Result next();
  // Continues from a frame boundary known from an index. Throws FormatError(BadHeader) when
  // `offset` is not inside the file or not 8-byte aligned.
  void seek(uint64_t offset);
  uint64_t offset() const { return offset_; }

private:
  bool intactFrameAt(uint64_t offset, std::span<const std::byte>& message) const;

  std::span<const std::byte> file_;
  uint64_t offset_ = kFileHeaderBytes;
};

// A file mapped read-only, for FrameScanner. Throws std::system_error when it cannot be opened.
class MappedFile {
public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  // Maps [offset, offset + length) in now, in one call, rather than page fault by page fault as
  // it is read (MADV_POPULATE_READ; only advice: nothing happens where the kernel lacks it).
  void prefault(size_t offset, size_t length) const;
  // Lets go of the pages of [offset, offset + length) (MADV_DONTNEED): they leave the process's
  // resident memory and come back from the file (the page cache) if read again, so every span
  // into the mapping stays valid. A reader going through a recording in order calls it behind
  // itself, so that its RSS does not grow with the recording's size.
  void release(size_t offset, size_t length) const;

private:
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

} // namespace shapetrace::wire
