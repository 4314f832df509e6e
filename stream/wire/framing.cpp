#include "wire/framing.h"

#include "wire/codec.h"
#include "wire/format_error.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdexcept>
#include <system_error>
#include <unistd.h>
#include <xxhash.h>

namespace shapetrace::wire {
namespace {

constexpr char kFileMagic[8] = {'S', 'H', 'T', 'R', 'A', 'C', 'E', '\0'};

template <typename T> void put(std::vector<std::byte>& out, T value) {
  const auto* p = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), p, p + sizeof(T));
}

template <typename T> T get(const std::byte* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

} // namespace

void appendFileHeader(std::vector<std::byte>& out) {
  const auto* magic = reinterpret_cast<const std::byte*>(kFileMagic);
  out.insert(out.end(), magic, magic + sizeof(kFileMagic));
  put<uint32_t>(out, kRecordingFormatVersion);
  put<uint32_t>(out, 0);
}

void appendFrame(std::vector<std::byte>& out, std::span<const std::byte> message) {
  put<uint32_t>(out, kFrameMagic);
  put<uint32_t>(out, static_cast<uint32_t>(message.size()));
  put<uint64_t>(out, XXH3_64bits(message.data(), message.size()));
  out.insert(out.end(), message.begin(), message.end());
}

FrameScanner::FrameScanner(std::span<const std::byte> file) : file_(file) {
  if (file.size() < kFileHeaderBytes || std::memcmp(file.data(), kFileMagic, 8) != 0)
    throw FormatError(FormatErrorReason::BadHeader, "not a shapetrace recording file");
  uint32_t version = get<uint32_t>(file.data() + 8);
  if (version != kRecordingFormatVersion)
    throw FormatError(FormatErrorReason::UnsupportedVersion,
                      "recording format version " + std::to_string(version) +
                          " (this reader understands " +
                          std::to_string(kRecordingFormatVersion) + ")");
}

bool FrameScanner::intactFrameAt(uint64_t offset, std::span<const std::byte>& message) const {
  if (file_.size() - offset < kFrameHeaderBytes)
    return false;
  const std::byte* header = file_.data() + offset;
  uint32_t length = get<uint32_t>(header + 4);
  if (get<uint32_t>(header) != kFrameMagic || length % 8 != 0 || length > kMaxMessageBytes ||
      file_.size() - offset - kFrameHeaderBytes < length)
    return false;
  const std::byte* body = header + kFrameHeaderBytes;
  if (XXH3_64bits(body, length) != get<uint64_t>(header + 8))
    return false;
  message = {body, length};
  return true;
}

FrameScanner::Result FrameScanner::next() {
  if (offset_ >= file_.size())
    return {Status::End, offset_, 0, {}};
  Result result;
  result.offset = offset_;
  if (intactFrameAt(offset_, result.message)) {
    result.status = Status::Frame;
    result.length = frameBytes(result.message.size());
    offset_ += result.length;
    return result;
  }
  // Not an intact frame here: look for the next one. Frames are 8-byte aligned, so only aligned
  // offsets whose first word is the magic are candidates.
  std::span<const std::byte> ignored;
  for (uint64_t candidate = offset_ + 8; candidate + kFrameHeaderBytes <= file_.size();
       candidate += 8) {
    if (get<uint32_t>(file_.data() + candidate) == kFrameMagic &&
        intactFrameAt(candidate, ignored)) {
      result.status = Status::Corrupt;
      result.length = candidate - offset_;
      offset_ = candidate;
      return result;
    }
  }
  // Nothing intact follows: the writer stopped in the middle of this frame.
  result.status = Status::TornTail;
  result.length = file_.size() - offset_;
  offset_ = file_.size();
  return result;
}

void FrameScanner::seek(uint64_t offset) {
  if (offset < kFileHeaderBytes || offset > file_.size() || offset % 8 != 0)
    throw FormatError(FormatErrorReason::BadHeader,
                      "offset " + std::to_string(offset) + " is not a frame boundary");
  offset_ = offset;
}

MappedFile::MappedFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO named like a recording file must not wait for a writer forever.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throw std::system_error(errno, std::generic_category(), "cannot open " + path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw std::system_error(err, std::generic_category(), "cannot stat " + path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error(path + " is not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw std::system_error(err, std::generic_category(), "cannot map " + path);
    }
    data_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);
}

void MappedFile::prefault(size_t offset, size_t length) const {
#ifdef MADV_POPULATE_READ
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t begin = offset / page * page;
  const size_t end = std::min(size_, offset + length);
  if (data_ == nullptr || begin >= end) return;
  ::madvise(const_cast<std::byte*>(data_) + begin, end - begin, MADV_POPULATE_READ);
#else
  (void)offset;
  (void)length;
#endif
}

void MappedFile::release(size_t offset, size_t length) const {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t begin = offset / page * page;
  const size_t end = std::min(size_, offset + length);
  if (data_ == nullptr || begin >= end) return;
  ::madvise(const_cast<std::byte*>(data_) + begin, end - begin, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (data_)
    ::munmap(const_cast<std::byte*>(data_), size_);
}

} // namespace shapetrace::wire
