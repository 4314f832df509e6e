// Writing, reading and replaying the checkpoint log (format in checkpoint.h).
#include "checkpoint.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <unistd.h>
#include <xxhash.h>

namespace kv {
namespace {

constexpr char kHeader[8] = {'K', 'V', 'C', 'K', 'P', 'T', '0', '1'};
constexpr std::uint32_t kRecordMagic = 0x4750564B; // "KVPG" read as little-endian
constexpr std::size_t kRecordHeaderBytes = 16;
constexpr std::size_t kPageHeaderBytes = 28;

template <typename T> void put(std::string* out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out->append(bytes, sizeof(T));
}

template <typename T> T get(const char* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw CheckpointError(path.string() + ": " + what);
}

[[noreturn]] void failErrno(const std::filesystem::path& path, const std::string& what) {
  fail(path, what + ": " + std::strerror(errno));
}

void writeAll(int fd, const std::string& bytes, const std::filesystem::path& path) {
  const char* at = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    ssize_t written = ::write(fd, at, left);
    if (written < 0 && errno == EINTR)
      continue;
    if (written < 0)
      failErrno(path, "write failed");
    at += written;
    left -= static_cast<std::size_t>(written);
  }
}

void encodePage(const PageImage& page, std::string* out) {
  std::string payload;
  put(&payload, page.page_id);
  put(&payload, page.low);
  put(&payload, page.high);
  put(&payload, static_cast<std::uint32_t>(page.entries.size()));
  for (const auto& [key, value] : page.entries) {
    put(&payload, key);
    put(&payload, static_cast<std::uint32_t>(value.size()));
    payload += value;
  }
  put(out, kRecordMagic);
  put(out, static_cast<std::uint32_t>(payload.size()));
  put(out, static_cast<std::uint64_t>(XXH3_64bits(payload.data(), payload.size())));
  *out += payload;
}

PageImage decodePage(const char* payload, std::size_t size, const std::filesystem::path& path,
                     std::uint64_t offset) {
  auto bad = [&](const std::string& what) {
    fail(path, what + " in the record at offset " + std::to_string(offset));
  };
  if (size < kPageHeaderBytes)
    bad("page header cut short");
  PageImage page;
  page.page_id = get<std::uint64_t>(payload);
  page.low = get<std::uint64_t>(payload + 8);
  page.high = get<std::uint64_t>(payload + 16);
  auto count = get<std::uint32_t>(payload + 24);
  if (page.low > page.high)
    bad("empty key range");
  std::size_t at = kPageHeaderBytes;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (size - at < 12)
      bad("entry header cut short");
    auto key = get<std::uint64_t>(payload + at);
    auto length = get<std::uint32_t>(payload + at + 8);
    at += 12;
    if (size - at < length)
      bad("value cut short");
    if (key < page.low || key > page.high)
      bad("key outside the page's range");
    if (!page.entries.empty() && key <= page.entries.back().first)
      bad("keys out of order");
    page.entries.emplace_back(key, std::string(payload + at, length));
    at += length;
  }
  if (at != size)
    bad("trailing bytes");
  return page;
}

} // namespace

std::string encodePages(const std::vector<PageImage>& pages) {
  std::string out;
  for (const PageImage& page : pages)
    encodePage(page, &out);
  return out;
}

CheckpointLog::CheckpointLog(std::filesystem::path path) : path_(std::move(path)) {
  openForAppend();
}

CheckpointLog::~CheckpointLog() {
  if (fd_ >= 0)
    ::close(fd_);
}

void CheckpointLog::openForAppend() {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0)
    failErrno(path_, "cannot open the checkpoint log");
  off_t size = ::lseek(fd_, 0, SEEK_END);
  if (size < 0)
    failErrno(path_, "cannot seek");
  size_bytes_ = static_cast<std::uint64_t>(size);
  if (size_bytes_ == 0) {
    writeAll(fd_, std::string(kHeader, sizeof kHeader), path_);
    size_bytes_ = sizeof kHeader;
  }
}

std::uint64_t CheckpointLog::append(const std::vector<PageImage>& pages) {
  std::string bytes = encodePages(pages);
  writeAll(fd_, bytes, path_);
  if (::fdatasync(fd_) != 0)
    failErrno(path_, "fdatasync failed");
  size_bytes_ += bytes.size();
  return bytes.size();
}

std::uint64_t CheckpointLog::rewrite(const std::vector<PageImage>& pages) {
  std::filesystem::path temporary = path_;
  temporary += ".tmp";
  std::string bytes(kHeader, sizeof kHeader);
  bytes += encodePages(pages);
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    failErrno(temporary, "cannot create");
  try {
    writeAll(fd, bytes, temporary);
    if (::fsync(fd) != 0)
      failErrno(temporary, "fsync failed");
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  if (::rename(temporary.c_str(), path_.c_str()) != 0)
    failErrno(path_, "cannot replace the log");
  ::close(fd_);
  fd_ = -1;
  openForAppend();
  return bytes.size();
}

CheckpointContents readCheckpoint(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path, "cannot open the checkpoint log");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof kHeader || std::memcmp(bytes.data(), kHeader, sizeof kHeader) != 0)
    fail(path, "not a kvstore checkpoint (bad header)");
  CheckpointContents contents;
  std::size_t at = sizeof kHeader;
  while (at < bytes.size()) {
    if (bytes.size() - at < kRecordHeaderBytes) {
      contents.torn_tail = true;
      break;
    }
    const char* record = bytes.data() + at;
    if (get<std::uint32_t>(record) != kRecordMagic)
      fail(path, "bad record magic at offset " + std::to_string(at));
    auto length = get<std::uint32_t>(record + 4);
    auto checksum = get<std::uint64_t>(record + 8);
    if (bytes.size() - at - kRecordHeaderBytes < length) {
      contents.torn_tail = true;
      break;
    }
    const char* payload = record + kRecordHeaderBytes;
    if (XXH3_64bits(payload, length) != checksum)
      fail(path, "checksum mismatch in the record at offset " + std::to_string(at));
    contents.pages.push_back(decodePage(payload, length, path, at));
    at += kRecordHeaderBytes + length;
  }
  return contents;
}

std::map<Key, std::string> replayPages(const std::vector<PageImage>& pages) {
  std::map<Key, std::string> content;
  for (const PageImage& page : pages) {
    auto first = content.lower_bound(page.low);
    auto last = content.upper_bound(page.high);
    content.erase(first, last);
    for (const auto& [key, value] : page.entries)
      content.emplace(key, value);
  }
  return content;
}

} // namespace kv
