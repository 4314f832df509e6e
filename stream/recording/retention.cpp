// Retention of a recording being written: deletes the oldest whole segments when the recording
// grows past RecordingOptions::retain_bytes or its oldest closed segment is older than
// retain_age, keeping their non-batch items in a carry segment and counting what went (see
// recording.h, "Retention"). Runs on the RecordingWriter's writer thread only.
#include "recording/retention.h"

#include "wire/format_error.h"
#include "wire/framing.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace shapetrace::recording {

namespace {

std::string errnoText(int err) { return std::strerror(err); }

// Writes `bytes` to a new file at `path` (replacing a leftover) and fdatasyncs it.
void writeFile(const std::string& path, const void* bytes, size_t size, unsigned mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0)
    throw std::runtime_error("cannot create " + path + ": " + errnoText(errno));
  const auto* p = static_cast<const char*>(bytes);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, p + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw std::runtime_error("write " + path + ": " + errnoText(err));
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fdatasync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!synced)
    throw std::runtime_error("fdatasync " + path + ": " + errnoText(err));
}

void renameFile(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    throw std::runtime_error("rename " + from + " to " + to + ": " + errnoText(errno));
}

std::string retentionJson(const RetentionStats& s) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "{\n  \"carry_segment\": %u,\n  \"deleted_segments\": %llu,\n"
                "  \"deleted_bytes\": %llu,\n  \"deleted_batches\": %llu,\n"
                "  \"deleted_events\": %llu,\n  \"deleted_undecodable\": %llu,\n"
                "  \"first_ns\": %llu,\n  \"last_ns\": %llu,\n  \"gap_items\": %llu,\n"
                "  \"threads\": [",
                s.carry_segment, (unsigned long long)s.segments, (unsigned long long)s.bytes,
                (unsigned long long)s.batches, (unsigned long long)s.events,
                (unsigned long long)s.undecodable, (unsigned long long)s.first_ns,
                (unsigned long long)s.last_ns, (unsigned long long)s.gap_items);
  out += line;
  bool first = true;
  for (const auto& [key, t] : s.threads) {
    std::snprintf(line, sizeof line,
                  "%s\n    {\"process\": %llu, \"thread\": %u, \"batches\": %llu, "
                  "\"events\": %llu, \"first_sequence\": %llu, \"last_sequence\": %llu, "
                  "\"first_ns\": %llu, \"last_ns\": %llu}",
                  first ? "" : ",", (unsigned long long)key.first, key.second,
                  (unsigned long long)t.batches, (unsigned long long)t.events,
                  (unsigned long long)t.first_sequence, (unsigned long long)t.last_sequence,
                  (unsigned long long)t.first_ns, (unsigned long long)t.last_ns);
    out += line;
    first = false;
  }
  out += s.threads.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

void widen(uint64_t& first, uint64_t& last, uint64_t time, bool empty) {
  first = empty ? time : std::min(first, time);
  last = empty ? time : std::max(last, time);
}

} // namespace

SegmentRetention::SegmentRetention(std::string dir, const RecordingOptions& options)
    : dir_(std::move(dir)), retain_bytes_(options.retain_bytes),
      retain_age_(options.retain_age), mode_(recordingFileMode(options)) {}

void SegmentRetention::segmentClosed(uint32_t number, uint64_t bytes) {
  closed_.push_back({number, bytes, std::chrono::steady_clock::now()});
  closed_bytes_ += bytes;
}

bool SegmentRetention::enforce(uint64_t open_bytes) {
  if (!error_.empty())
    return false;
  bool deleted = false;
  while (!closed_.empty()) {
    const bool too_large =
        retain_bytes_ > 0 && carry_bytes_ + closed_bytes_ + open_bytes > retain_bytes_;
    const bool too_old = retain_age_.count() > 0 &&
                         std::chrono::steady_clock::now() - closed_.front().closed > retain_age_;
    if (!too_large && !too_old)
      break;
    try {
      deleteOldest();
      deleted = true;
    } catch (const std::exception& e) {
      error_ = std::string(e.what()) + "; retention stopped, nothing more is deleted";
      break;
    }
  }
  return deleted;
}

void SegmentRetention::deleteOldest() {
  const Closed oldest = closed_.front();
  const std::string path = segmentPath(dir_, oldest.number);
  RetentionStats next = stats_;
  std::vector<Carried> carried = carried_;
  {
    wire::MappedFile file(path);
    std::optional<wire::FrameScanner> scanner;
    try {
      scanner.emplace(file.bytes());
    } catch (const wire::FormatError&) {
      ++next.undecodable; // not a segment at all (cut short at creation): nothing to keep
    }
    using Status = wire::FrameScanner::Status;
    for (auto r = scanner ? scanner->next() : wire::FrameScanner::Result{};
         r.status != Status::End; r = scanner->next()) {
      if (r.status != Status::Frame) {
        ++next.undecodable;
        continue;
      }
      wire::ItemHeader header;
      try {
        header = wire::peekItem(r.message);
      } catch (const wire::FormatError&) {
        ++next.undecodable;
        continue;
      }
      if (header.kind != wire::ItemKind::EventBatch) {
        carried.push_back({header, {r.message.begin(), r.message.end()}});
        continue;
      }
      RetentionStats::Thread& t = next.threads[{header.process, header.thread}];
      widen(t.first_sequence, t.last_sequence, header.sequence, t.batches == 0);
      widen(t.first_ns, t.last_ns, header.first_ns, t.batches == 0);
      widen(next.first_ns, next.last_ns, header.first_ns, next.batches == 0);
      ++t.batches;
      t.events += header.event_count;
      ++next.batches;
      next.events += header.event_count;
    }
  }
  // The carry: the kept items in order, then one gap per thread for everything deleted so far.
  std::vector<std::byte> data;
  std::vector<IndexRecord> index;
  wire::appendFileHeader(data);
  auto add = [&](const wire::ItemHeader& h, std::span<const std::byte> message) {
    IndexRecord record;
    record.process = h.process;
    record.thread = h.thread;
    record.kind = static_cast<uint8_t>(h.kind);
    record.time_ns = h.first_ns;
    record.offset = data.size();
    index.push_back(record);
    wire::appendFrame(data, message);
  };
  for (const Carried& item : carried)
    add(item.header, item.message);
  for (const auto& [key, t] : next.threads) {
    const wire::Bytes gap = wire::encodeItem(
        {key.first, wire::Gap{key.second, t.events, t.last_sequence, t.first_ns, t.last_ns}});
    add(wire::peekItem(gap), gap);
  }
  next.gap_items = next.threads.size();
  next.carry_segment = oldest.number;
  ++next.segments;
  next.bytes += oldest.bytes;

  // Replace the segment by its carry, then say so, then remove the previous carry: a crash in
  // between leaves an older carry that readers skip (it is below carry_segment) or, before the
  // retention file is rewritten, a recording whose newest deletion is not counted yet (readers
  // still see its gap items).
  writeFile(path + ".tmp", data.data(), data.size(), mode_);
  writeFile(indexPath(dir_, oldest.number) + ".tmp", index.data(),
            index.size() * sizeof(IndexRecord), mode_);
  renameFile(path + ".tmp", path);
  renameFile(indexPath(dir_, oldest.number) + ".tmp", indexPath(dir_, oldest.number));
  const std::string json = retentionJson(next);
  const std::string json_path = dir_ + "/" + kRetentionFile;
  writeFile(json_path + ".tmp", json.data(), json.size(), mode_);
  renameFile(json_path + ".tmp", json_path);
  if (carry_number_) {
    ::unlink(segmentPath(dir_, *carry_number_).c_str());
    ::unlink(indexPath(dir_, *carry_number_).c_str());
  }
  if (const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  stats_ = std::move(next);
  carried_ = std::move(carried);
  carry_number_ = oldest.number;
  carry_bytes_ = data.size();
  closed_bytes_ -= oldest.bytes;
  closed_.pop_front();
}

} // namespace shapetrace::recording
