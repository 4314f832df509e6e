// RecordingWriter: buffers frames in memory on the caller's thread and does every write(2) and
// fdatasync on a writer thread of its own (see recording.h for the guarantees).
#include "recording/recording.h"

#include "recording/retention.h"

#include "wire/framing.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace shapetrace::recording {

namespace fs = std::filesystem;

std::string segmentPath(const std::string& dir, uint32_t segment) {
  char name[32];
  std::snprintf(name, sizeof name, "/%06u.seg", segment);
  return dir + name;
}

std::string indexPath(const std::string& dir, uint32_t segment) {
  char name[32];
  std::snprintf(name, sizeof name, "/%06u.idx", segment);
  return dir + name;
}

namespace {

// Writes all of `bytes`; returns the number written and sets `err` on failure.
size_t writeAll(int fd, const std::byte* bytes, size_t size, int& err) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, bytes + done, size - done);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      err = errno;
      return done;
    }
    done += static_cast<size_t>(n);
  }
  err = 0;
  return done;
}

std::string errnoText(int err) { return std::strerror(err); }

// Written buffers kept for reuse.
constexpr size_t kFreeBuffers = 4;

} // namespace

// The files of the segment the writer thread is currently writing.
struct RecordingWriter::SegmentFile {
  uint32_t number = 0;
  int data_fd = -1;
  int index_fd = -1;
  uint64_t size = 0; // bytes in the data file
  std::chrono::steady_clock::time_point last_sync = std::chrono::steady_clock::now();

  bool isOpen() const { return data_fd >= 0; }
};

RecordingWriter::RecordingWriter(std::string dir, RecordingOptions options)
    : dir_(std::move(dir)), options_(options) {
  std::error_code ec;
  const bool existed = fs::exists(dir_, ec);
  fs::create_directories(dir_, ec);
  // Private unless asked otherwise; a directory that existed keeps the mode its owner chose.
  if (!ec && !existed && !options_.readable_by_others)
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::replace, ec);
  if (ec || !fs::is_directory(dir_))
    throw std::runtime_error("cannot create recording directory " + dir_ + ": " +
                             (ec ? ec.message() : "not a directory"));
  for (const auto& entry : fs::directory_iterator(dir_)) {
    if (entry.path().extension() == ".seg")
      throw std::runtime_error(dir_ + " already holds a recording (" +
                               entry.path().filename().string() +
                               "); choose an empty or new directory");
  }
  startBuffer();
  // The first segment exists from the start, so that a recording that receives nothing is still
  // a valid (empty) recording.
  wire::appendFileHeader(current_->data);
  segment_size_ = wire::kFileHeaderBytes;
  segment_started_ = true;
  stats_.segments = 1;
  if (options_.retain_bytes > 0 || options_.retain_age.count() > 0)
    retention_ = std::make_unique<SegmentRetention>(dir_, options_);
  writer_ = std::thread([this] { writerLoop(); });
}

RecordingWriter::~RecordingWriter() { close(); }


void RecordingWriter::startBuffer() {
  // Buffers are recycled: under light load the writer takes one per message, and a fresh 4 MiB
  // allocation each time would cost an mmap/munmap pair and page faults.
  if (!free_.empty()) {
    current_ = std::move(free_.back());
    free_.pop_back();
  } else {
    current_ = std::make_unique<Buffer>();
    current_->data.reserve(options_.buffer_bytes);
  }
  current_->segment = segment_;
}

void RecordingWriter::queueCurrent(std::unique_lock<std::mutex>& lock) {
  if (current_->data.empty())
    return;
  // Back-pressure: wait while the writer thread is too far behind (never while failed/closing,
  // where buffers are discarded quickly).
  space_freed_.wait(lock, [&] {
    return queued_bytes_ + current_->data.size() <= options_.max_queued_bytes || queue_.empty() ||
           !error_.empty();
  });
  queued_bytes_ += current_->data.size();
  stats_.max_queued_bytes = std::max<uint64_t>(stats_.max_queued_bytes, queued_bytes_);
  queue_.push_back(std::move(current_));
  startBuffer();
  queue_changed_.notify_one();
}

bool RecordingWriter::append(std::span<const std::byte> message) {
  return append(message, wire::peekItem(message));
}

bool RecordingWriter::append(std::span<const std::byte> message, const wire::ItemHeader& header) {
  if (message.size() % 8 != 0 || message.size() > wire::kMaxMessageBytes)
    throw std::invalid_argument("RecordingWriter::append: message of " +
                                std::to_string(message.size()) +
                                " bytes is not a whole Cap'n Proto message");
  const uint64_t frame = wire::frameBytes(message.size());
  std::unique_lock lock(mutex_);
  if (!error_.empty() || closing_) {
    ++stats_.refused_items;
    return false;
  }
  // Rotate before a frame that would overflow a non-empty segment.
  if (segment_started_ && segment_size_ > wire::kFileHeaderBytes &&
      segment_size_ + frame > options_.segment_bytes) {
    queueCurrent(lock);
    ++segment_;
    segment_started_ = false;
    current_->segment = segment_;
  }
  if (!segment_started_) {
    wire::appendFileHeader(current_->data);
    segment_size_ = wire::kFileHeaderBytes;
    segment_started_ = true;
    ++stats_.segments;
  }
  if (current_->data.size() + frame > options_.buffer_bytes && !current_->data.empty()) {
    queueCurrent(lock);
    if (!error_.empty()) {
      ++stats_.refused_items;
      return false;
    }
  }
  IndexRecord record;
  record.process = header.process;
  record.thread = header.thread;
  record.kind = static_cast<uint8_t>(header.kind);
  record.time_ns = header.first_ns;
  record.offset = segment_size_;
  current_->index.push_back(record);
  wire::appendFrame(current_->data, message);
  segment_size_ += frame;
  current_->frame_ends.push_back(segment_size_);
  ++current_->items;
  ++stats_.items;
  stats_.bytes += frame;
  if (writer_idle_)
    queue_changed_.notify_one();
  return true;
}

bool RecordingWriter::flush() {
  std::unique_lock lock(mutex_);
  if (closed_)
    return error_.empty();
  queueCurrent(lock);
  const uint64_t ticket = ++flush_requests_;
  queue_changed_.notify_one();
  space_freed_.wait(lock, [&] { return flushes_done_ >= ticket || closed_; });
  return error_.empty();
}

bool RecordingWriter::close() {
  {
    std::unique_lock lock(mutex_);
    if (closing_) {
      lock.unlock();
      if (writer_.joinable() && writer_.get_id() != std::this_thread::get_id())
        writer_.join();
      return failed();
    }
    queueCurrent(lock);
    closing_ = true;
    queue_changed_.notify_one();
  }
  if (writer_.joinable())
    writer_.join();
  return !failed();
}

std::string RecordingWriter::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

bool RecordingWriter::failed() const {
  std::lock_guard lock(mutex_);
  return !error_.empty();
}

WriterStats RecordingWriter::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void RecordingWriter::fail(const std::string& what) {
  std::lock_guard lock(mutex_);
  if (error_.empty())
    error_ = what;
  space_freed_.notify_all();
}

namespace {

void closeSegment(int& data_fd, int& index_fd) {
  if (data_fd >= 0) {
    ::fdatasync(data_fd);
    ::close(data_fd);
  }
  if (index_fd >= 0) {
    ::fdatasync(index_fd);
    ::close(index_fd);
  }
  data_fd = index_fd = -1;
}

} // namespace

// On the writer thread, without the mutex.
void RecordingWriter::enforceRetention(uint64_t open_bytes) {
  if (!retention_)
    return;
  if (!retention_->enforce(open_bytes) && retention_->error().empty())
    return;
  std::lock_guard lock(mutex_);
  stats_.retention = retention_->stats();
  stats_.retention_error = retention_->error();
}

void RecordingWriter::writeBuffer(Buffer& buffer, SegmentFile& file) {
  if (file.isOpen() && file.number != buffer.segment) {
    closeSegment(file.data_fd, file.index_fd);
    if (retention_) {
      retention_->segmentClosed(file.number, file.size);
      enforceRetention(0);
    }
  }
  if (!file.isOpen()) {
    const std::string data_path = segmentPath(dir_, buffer.segment);
    file.number = buffer.segment;
    file.size = 0;
    const mode_t mode = recordingFileMode(options_);
    file.data_fd = ::open(data_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (file.data_fd < 0)
      return fail("cannot create " + data_path + ": " + errnoText(errno));
    const std::string index_path = indexPath(dir_, buffer.segment);
    file.index_fd = ::open(index_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (file.index_fd < 0)
      return fail("cannot create " + index_path + ": " + errnoText(errno));
  }
  int err = 0;
  const size_t written = writeAll(file.data_fd, buffer.data.data(), buffer.data.size(), err);
  const uint64_t buffer_start = file.size;
  file.size += written;
  if (err != 0) {
    // Keep the segment readable: cut it back to the last frame that was written whole, and keep
    // only the index records of those frames.
    uint64_t keep = buffer_start;
    size_t whole = 0;
    while (whole < buffer.frame_ends.size() && buffer.frame_ends[whole] <= file.size)
      keep = buffer.frame_ends[whole++];
    if (buffer_start == 0 && whole == 0)
      keep = written >= wire::kFileHeaderBytes ? wire::kFileHeaderBytes : 0;
    if (::ftruncate(file.data_fd, static_cast<off_t>(keep)) == 0)
      file.size = keep;
    int index_err = 0;
    writeAll(file.index_fd, reinterpret_cast<const std::byte*>(buffer.index.data()),
             whole * sizeof(IndexRecord), index_err);
    {
      std::lock_guard lock(mutex_);
      stats_.items_written += whole;
    }
    fail("write " + segmentPath(dir_, file.number) + ": " + errnoText(err) +
         "; recording stopped, everything written before stays readable");
    return;
  }
  writeAll(file.index_fd, reinterpret_cast<const std::byte*>(buffer.index.data()),
           buffer.index.size() * sizeof(IndexRecord), err);
  // A lost index record costs only speed (readers rebuild the index), so it does not stop the
  // recording.
  std::lock_guard lock(mutex_);
  stats_.items_written += buffer.items;
}

void RecordingWriter::writerLoop() {
  SegmentFile file;
  std::unique_lock lock(mutex_);
  for (;;) {
    writer_idle_ = true;
    // After a write error current_ is never written again (appends are refused), so it is work
    // only while healthy; counting it otherwise woke this loop forever without releasing the
    // mutex, and append() starved (seen under ASan after disk full).
    queue_changed_.wait_for(lock, options_.flush_interval, [&] {
      return !queue_.empty() || (!current_->data.empty() && error_.empty()) || closing_ ||
             flush_requests_ > flushes_done_;
    });
    writer_idle_ = false;
    // Group commit: whatever was appended while the previous write ran is written now, so a
    // message waits in memory only while a write(2) is in progress.
    if (!current_->data.empty() && error_.empty()) {
      queued_bytes_ += current_->data.size();
      queue_.push_back(std::move(current_));
      startBuffer();
    }
    const uint64_t flush_target = flush_requests_;
    while (!queue_.empty()) {
      std::unique_ptr<Buffer> buffer = std::move(queue_.front());
      queue_.pop_front();
      const bool healthy = error_.empty();
      lock.unlock();
      if (healthy)
        writeBuffer(*buffer, file);
      lock.lock();
      queued_bytes_ -= buffer->data.size();
      if (free_.size() < kFreeBuffers) {
        buffer->data.clear();
        buffer->index.clear();
        buffer->frame_ends.clear();
        buffer->items = 0;
        free_.push_back(std::move(buffer));
      }
      space_freed_.notify_all();
    }
    if (retention_) { // the age limit passes while nothing is written too
      lock.unlock();
      enforceRetention(file.size);
      lock.lock();
    }
    const auto now = std::chrono::steady_clock::now();
    if (file.isOpen() && options_.fsync_interval.count() > 0 &&
        now - file.last_sync >= options_.fsync_interval) {
      file.last_sync = now;
      lock.unlock();
      ::fdatasync(file.data_fd);
      lock.lock();
    }
    flushes_done_ = std::max(flushes_done_, flush_target);
    space_freed_.notify_all();
    if (closing_ && queue_.empty())
      break;
  }
  lock.unlock();
  closeSegment(file.data_fd, file.index_fd);
  lock.lock();
  closed_ = true;
  space_freed_.notify_all();
}

} // namespace shapetrace::recording
