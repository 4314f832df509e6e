// RecordingReader: walks the segments of a recording with wire::FrameScanner, records the damage it
// meets, and uses (or rebuilds) the per-segment index to seek.
#include "recording/recording.h"

#include "wire/format_error.h"
#include "wire/framing.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace shapetrace::recording {

namespace fs = std::filesystem;

const char* damageKindName(Damage::Kind kind) {
  switch (kind) {
  case Damage::Kind::TornTail:
    return "torn tail";
  case Damage::Kind::Corrupt:
    return "corrupt";
  case Damage::Kind::UnsupportedVersion:
    return "unsupported version";
  case Damage::Kind::Lost:
    return "lost";
  }
  return "?";
}

std::string describeDamage(const Damage& d) {
  const std::string segment = "segment " + std::to_string(d.segment) + ": ";
  if (d.kind == Damage::Kind::Lost)
    return segment + "lost (" + std::to_string(d.length) +
           (d.length == 1 ? " segment" : " segments") + ": its frames are gone)";
  return segment + damageKindName(d.kind) + " at offset " + std::to_string(d.offset) + " (" +
         std::to_string(d.length) + " bytes)";
}

struct RecordingReader::Segment {
  uint32_t number = 0;
  std::string path;
  std::unique_ptr<wire::MappedFile> file;
  std::optional<wire::FrameScanner> scanner; // empty when the file is not a segment at all
  std::optional<std::vector<IndexRecord>> index;
  bool unreadable_reported = false;
  size_t prefaulted = 0; // the bytes below are mapped in (reading in order)
  size_t released = 0;   // the bytes below were let go of behind the reader (reading in order)
};

namespace {
// Reading a segment in order maps it in ahead of the scanner, a few megabytes at a time, instead
// of a page fault per 64 KiB (6 K of them for the analyzer benchmark's 380 MB, about 1% of its
// time); mapping a whole segment up front would read all of it before the first frame.
constexpr size_t kPrefaultChunk = size_t{8} << 20;
// How far behind the reader its pages are let go of (MappedFile::release): a recording read in
// order keeps about this much of it resident, not the whole of it (2.2 GB of RSS for a 580 M-event
// recording before).
constexpr size_t kReleaseLag = size_t{32} << 20;
} // namespace

RecordingReader::RecordingReader(std::string dir, Pages pages)
    : dir_(std::move(dir)), pages_(pages) {
  std::error_code ec;
  if (!fs::is_directory(dir_, ec))
    throw std::runtime_error(dir_ + " is not a directory");
  std::vector<uint32_t> numbers;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    const fs::path& p = entry.path();
    const std::string stem = p.stem().string();
    if (p.extension() != ".seg" || stem.empty() ||
        !std::all_of(stem.begin(), stem.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    // A FIFO named like a segment would block the reader forever; a device is no recording.
    if (!fs::is_regular_file(fs::status(p, ec)))
      throw std::runtime_error(p.string() + " is not a regular file: a segment must be one");
    numbers.push_back(static_cast<uint32_t>(std::stoul(stem)));
  }
  if (numbers.empty())
    throw std::runtime_error(dir_ + " holds no recording (no *.seg file)");
  std::sort(numbers.begin(), numbers.end());
  retention_ = readRetention(dir_);
  for (uint32_t n : numbers) {
    // A segment below the carry segment is an older carry that a crash left behind (its items are
    // all in the newer one).
    if (retention_ && n < retention_->carry_segment)
      continue;
    auto segment = std::make_unique<Segment>();
    segment->number = n;
    segment->path = segmentPath(dir_, n);
    segments_.push_back(std::move(segment));
  }
  if (segments_.empty())
    throw std::runtime_error(dir_ + " holds no recording (no segment from the carry segment " +
                             std::to_string(retention_->carry_segment) + " on)");
  noteMissingSegments();
}

// Segments are numbered without a hole from the first (0, or retention's carry segment): a
// number missing is a deleted segment, its frames lost. One damage per run of missing numbers.
void RecordingReader::noteMissingSegments() {
  uint32_t expected = retention_ ? retention_->carry_segment : 0;
  for (const auto& segment : segments_) {
    if (segment->number > expected)
      noteDamage({Damage::Kind::Lost, expected, 0, segment->number - uint64_t{expected}});
    expected = segment->number + 1;
  }
}

RecordingReader::~RecordingReader() = default;

std::optional<RetentionStats> readRetention(const std::string& dir) {
  const std::string path = dir + "/" + kRetentionFile;
  std::ifstream in(path);
  if (!in)
    return std::nullopt;
  const auto json = nlohmann::json::parse(in, nullptr, false);
  try {
    if (json.is_discarded() || !json.is_object())
      throw std::runtime_error("not JSON");
    RetentionStats stats;
    stats.carry_segment = json.at("carry_segment").get<uint32_t>();
    stats.segments = json.at("deleted_segments").get<uint64_t>();
    stats.bytes = json.at("deleted_bytes").get<uint64_t>();
    stats.batches = json.at("deleted_batches").get<uint64_t>();
    stats.events = json.at("deleted_events").get<uint64_t>();
    stats.undecodable = json.at("deleted_undecodable").get<uint64_t>();
    stats.first_ns = json.at("first_ns").get<uint64_t>();
    stats.last_ns = json.at("last_ns").get<uint64_t>();
    stats.gap_items = json.at("gap_items").get<uint64_t>();
    for (const auto& t : json.at("threads")) {
      RetentionStats::Thread& thread =
          stats.threads[{t.at("process").get<uint64_t>(), t.at("thread").get<uint32_t>()}];
      thread.batches = t.at("batches").get<uint64_t>();
      thread.events = t.at("events").get<uint64_t>();
      thread.first_sequence = t.at("first_sequence").get<uint64_t>();
      thread.last_sequence = t.at("last_sequence").get<uint64_t>();
      thread.first_ns = t.at("first_ns").get<uint64_t>();
      thread.last_ns = t.at("last_ns").get<uint64_t>();
    }
    return stats;
  } catch (const std::exception&) {
    // Deleted data is never taken for a clean recording: a retention file that cannot be read
    // stops the reader.
    throw std::runtime_error(path + " is damaged: cannot tell what retention deleted from the "
                             "recording");
  }
}

void RecordingReader::noteDamage(const Damage& damage) {
  for (const Damage& d : damage_)
    if (d.segment == damage.segment && d.offset == damage.offset)
      return;
  damage_.push_back(damage);
}

RecordingReader::Segment& RecordingReader::open(uint32_t position) {
  Segment& s = *segments_[position];
  if (s.file)
    return s;
  s.file = std::make_unique<wire::MappedFile>(s.path);
  const auto bytes = s.file->bytes();
  try {
    s.scanner.emplace(bytes);
  } catch (const wire::FormatError& e) {
    // A file shorter than a header is a segment whose creation was cut short: a torn tail.
    // A newer (or older) format is named as such. Anything else is not a segment we can read.
    const bool torn = bytes.size() < wire::kFileHeaderBytes;
    if (e.reason() == wire::FormatErrorReason::UnsupportedVersion) {
      Damage damage{Damage::Kind::UnsupportedVersion, s.number, 0, bytes.size()};
      std::memcpy(&damage.version, bytes.data() + 8, sizeof damage.version);
      noteDamage(damage);
    } else if (!bytes.empty()) {
      noteDamage({torn ? Damage::Kind::TornTail : Damage::Kind::Corrupt, s.number, 0,
                  bytes.size()});
    } else if (position + 1 < segments_.size()) {
      // An empty file is a segment whose creation was cut short: harmless as the last one; with
      // segments after it, a whole segment's frames are gone.
      noteDamage({Damage::Kind::Lost, s.number, 0, 1});
    }
  }
  return s;
}

std::optional<Frame> RecordingReader::next() {
  while (current_ < segments_.size()) {
    Segment& s = open(current_);
    if (s.scanner) {
      for (;;) {
        const auto r = s.scanner->next();
        using Status = wire::FrameScanner::Status;
        if (r.status == Status::Frame) {
          if (r.offset + kPrefaultChunk / 2 >= s.prefaulted) {
            s.prefaulted = std::max(s.prefaulted, r.offset);
            s.file->prefault(s.prefaulted, kPrefaultChunk);
            s.prefaulted += kPrefaultChunk;
            // What lies a few chunks behind was read: out of the process's memory.
            releaseBelow(s, r.offset > kReleaseLag ? r.offset - kReleaseLag : 0);
          }
          return Frame{s.number, r.offset, r.message};
        }
        if (r.status == Status::End)
          break;
        noteDamage({r.status == Status::TornTail ? Damage::Kind::TornTail : Damage::Kind::Corrupt,
                    s.number, r.offset, r.length});
      }
    }
    if (s.file)
      releaseBelow(s, s.file->bytes().size());
    ++current_;
    if (current_ < segments_.size())
      moveTo(current_, wire::kFileHeaderBytes);
  }
  return std::nullopt;
}

std::optional<wire::StreamItem> RecordingReader::nextItem() {
  while (auto frame = next()) {
    try {
      return wire::decodeItem(frame->message);
    } catch (const wire::FormatError&) {
      ++undecodable_;
    }
  }
  return std::nullopt;
}

void RecordingReader::rewind() { moveTo(0, wire::kFileHeaderBytes); }

void RecordingReader::releaseBelow(Segment& s, size_t end) {
  // The frames handed out stay readable: their pages come back from the page cache.
  if (pages_ == Pages::kReleaseBehind && end > s.released) {
    s.file->release(s.released, end - s.released);
    s.released = end;
  }
}

void RecordingReader::moveTo(uint32_t position, uint64_t offset) {
  current_ = position;
  Segment& s = open(position);
  if (s.scanner)
    s.scanner->seek(offset);
  s.released = std::min<size_t>(s.released, offset);
}

bool RecordingReader::seekTo(uint32_t segment_number, uint64_t offset) {
  auto it = std::find_if(segments_.begin(), segments_.end(),
                         [&](const auto& s) { return s->number == segment_number; });
  if (it == segments_.end() || !readAt(segment_number, offset))
    return false;
  moveTo(static_cast<uint32_t>(it - segments_.begin()), offset);
  return true;
}

uint32_t RecordingReader::segmentNumber(uint32_t position) const {
  return segments_.at(position)->number;
}

const std::vector<IndexRecord>& RecordingReader::index(uint32_t segment_number) {
  auto it = std::find_if(segments_.begin(), segments_.end(),
                         [&](const auto& s) { return s->number == segment_number; });
  if (it == segments_.end())
    throw std::out_of_range("no segment " + std::to_string(segment_number) + " in " + dir_);
  Segment& s = open(static_cast<uint32_t>(it - segments_.begin()));
  if (s.index)
    return *s.index;
  s.index.emplace();
  if (!s.scanner)
    return *s.index;
  const auto bytes = s.file->bytes();

  // The stored index, trusted only as far as each record points at a frame boundary inside the
  // intact part of the file and the records cover every frame: the first frame follows the file
  // header and each next one the frame before it (a record the writer failed to write, from a full
  // disk say, would otherwise hide its frame from seek()). A torn final record is dropped; frames
  // after the last record (the writer stopped between a frame and its record) are indexed below.
  std::ifstream in(indexPath(dir_, s.number), std::ios::binary);
  bool usable = static_cast<bool>(in);
  IndexRecord record;
  uint64_t expected = wire::kFileHeaderBytes; // where the next frame starts
  while (usable && in.read(reinterpret_cast<char*>(&record), sizeof record)) {
    uint32_t magic = 0, length = 0;
    if (record.offset != expected || record.offset + wire::kFrameHeaderBytes > bytes.size() ||
        (std::memcpy(&magic, bytes.data() + record.offset, 4), magic != wire::kFrameMagic)) {
      usable = false;
      break;
    }
    std::memcpy(&length, bytes.data() + record.offset + 4, 4);
    expected = record.offset + wire::frameBytes(length);
    if (length % 8 != 0 || expected > bytes.size()) { // a damaged header: scan instead
      usable = false;
      break;
    }
    s.index->push_back(record);
  }
  if (pages_ == Pages::kReleaseBehind) {
    // Checking each record touched a page per frame: a third of the segment, not to be kept.
    s.file->release(0, bytes.size());
    s.released = 0;
  }
  // Rebuild by scanning, from the first frame the stored index lacks: peek every intact frame.
  wire::FrameScanner scanner(bytes);
  if (usable && !s.index->empty())
    scanner.seek(expected);
  else
    s.index->clear();
  for (auto r = scanner.next(); r.status != wire::FrameScanner::Status::End; r = scanner.next()) {
    if (r.status != wire::FrameScanner::Status::Frame)
      continue;
    try {
      const wire::ItemHeader h = wire::peekItem(r.message);
      IndexRecord rebuilt;
      rebuilt.process = h.process;
      rebuilt.thread = h.thread;
      rebuilt.kind = static_cast<uint8_t>(h.kind);
      rebuilt.time_ns = h.first_ns;
      rebuilt.offset = r.offset;
      s.index->push_back(rebuilt);
    } catch (const wire::FormatError&) {
      // Undecodable frames are not indexed; next() still returns them.
    }
  }
  return *s.index;
}

std::optional<Frame> RecordingReader::readAt(uint32_t segment_number, uint64_t offset) {
  auto it = std::find_if(segments_.begin(), segments_.end(),
                         [&](const auto& s) { return s->number == segment_number; });
  if (it == segments_.end())
    return std::nullopt;
  Segment& s = open(static_cast<uint32_t>(it - segments_.begin()));
  if (!s.scanner || offset % 8 != 0 || offset < wire::kFileHeaderBytes ||
      offset >= s.file->bytes().size())
    return std::nullopt;
  wire::FrameScanner scanner(s.file->bytes());
  scanner.seek(offset);
  const auto r = scanner.next();
  if (r.status != wire::FrameScanner::Status::Frame || r.offset != offset)
    return std::nullopt;
  return Frame{s.number, r.offset, r.message};
}

bool RecordingReader::seek(uint64_t process, uint32_t thread, uint64_t time_ns) {
  if (!thread_places_) {
    // Each thread's items in recording order, gathered once: a report seeks hundreds of times.
    thread_places_.emplace();
    for (uint32_t position = 0; position < segments_.size(); ++position)
      for (const IndexRecord& r : index(segments_[position]->number))
        (*thread_places_)[{r.process, r.thread}].push_back({r.time_ns, position, r.offset});
  }
  const auto it = thread_places_->find({process, thread});
  if (it == thread_places_->end())
    return false;
  // The latest item with time <= time_ns, the first in recording order of those with its time,
  // or the first item when all are later. (Not the last in recording order: a copy of an early
  // batch stored later, a duplicated segment, would send the reader past everything between.)
  const std::vector<ThreadPlace>& places = it->second;
  const ThreadPlace* best = nullptr;
  for (const ThreadPlace& place : places)
    if (place.time_ns <= time_ns && (best == nullptr || place.time_ns > best->time_ns))
      best = &place;
  if (best == nullptr)
    best = &places.front();
  moveTo(best->position, best->offset);
  sought_places_ = &places;
  next_place_ = static_cast<size_t>(best - places.data());
  return true;
}

std::optional<Frame> RecordingReader::nextOfThread() {
  while (sought_places_ != nullptr && next_place_ < sought_places_->size()) {
    const ThreadPlace& place = (*sought_places_)[next_place_++];
    // A damaged frame was noted by whatever read the recording in order: skipped here.
    if (auto frame = readAt(segments_[place.position]->number, place.offset))
      return frame;
  }
  return std::nullopt;
}

} // namespace shapetrace::recording
