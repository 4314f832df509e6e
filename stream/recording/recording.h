// A recording on disk: a directory of append-only segment files plus one index file per segment.
//
//   DIR/000000.seg  000000.idx  000001.seg  000001.idx  ...
//
// A segment is a recording file in the framing of wire/framing.h (file header, then framed
// StreamItem messages). Segments are numbered from 0 and read in that order; a new one is started
// when the current one would exceed RecordingOptions::segment_bytes.
//
// An index file holds one 32-byte IndexRecord per frame of its segment (little-endian, no header):
// the item's process, thread (0 for process-level items), kind, time (ItemHeader::first_ns) and the
// frame's offset in the segment. It lets a reader jump to the batch of one (process, thread) that
// covers a time without scanning the segments. The index is written after the data it describes
// and is only a hint: a reader checks every frame it jumps to, ignores a torn final record, and
// rebuilds the index of a segment by scanning it when the index file is missing or damaged.
//
// Durability (what reaches the disk when, see RecordingOptions): append() copies the frame into an
// in-memory buffer; a writer thread of its own writes (write(2)) everything appended as soon as it
// is idle (group commit: under light load each message reaches the page cache right away, under
// heavy load buffers grow up to `buffer_bytes` per write), and calls fdatasync every
// `fsync_interval` and when it closes a segment. Neither write(2) nor fsync ever runs on the
// thread that calls append(); a stalled disk blocks append() only once `max_queued_bytes` are
// waiting. So when the process is killed (kill -9) only frames appended during the write(2) in
// progress are lost, and every frame that reached the file reads back; the last one may be torn,
// which the reader reports as a torn tail. After a machine crash, what was written since the last
// fdatasync (at most `fsync_interval`) may be lost.
//
// Disk full (or any write error): the writer cuts the segment back to its last whole frame, stops
// writing and from then on refuses appends (append() returns false, counted in stats). What was
// written stays readable.
#pragma once

#include "wire/codec.h"
#include "wire/items.h"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace shapetrace::recording {

// One index record, exactly as stored in a .idx file.
struct IndexRecord {
  uint64_t process = 0;
  uint32_t thread = 0;   // 0 for process-level items
  uint8_t kind = 0;      // wire::ItemKind
  uint8_t reserved[3] = {};
  uint64_t time_ns = 0;  // wire::ItemHeader::first_ns (a batch's first event)
  uint64_t offset = 0;   // of the frame in its segment
};
static_assert(sizeof(IndexRecord) == 32, "index records are 32 bytes on disk");

std::string segmentPath(const std::string& dir, uint32_t segment);
std::string indexPath(const std::string& dir, uint32_t segment);

struct RecordingOptions {
  // A new segment starts when the next frame would make the current one larger than this.
  uint64_t segment_bytes = uint64_t{256} << 20;
  // Size of one in-memory buffer; a full buffer is handed to the writer thread at once.
  size_t buffer_bytes = size_t{4} << 20;
  // append() blocks (back-pressure) when this many bytes are waiting for the writer thread.
  size_t max_queued_bytes = size_t{64} << 20;
  // Longest time the writer thread sleeps when there is nothing to write (the bound for the
  // fsync interval check); appended data is written as soon as the writer thread is idle.
  std::chrono::milliseconds flush_interval{100};
  // fdatasync this often (0: only when a segment is closed and at close()).
  std::chrono::milliseconds fsync_interval{1000};
  // A recording holds what the traced programs did (names, arguments, timings): private by
  // default, the directory 0700 (when the writer creates it) and its files 0600. True: 0755 and
  // 0644, before the umask (`collect --readable`, `record --readable`).
  bool readable_by_others = false;
  // Retention (`collect --retain-gib`, `--retain-hours`): when the segments take more than
  // `retain_bytes`, or the oldest closed segment was closed longer than `retain_age` ago, the
  // oldest closed segment is deleted, whole. 0: no limit. The segment being written is never
  // deleted. See "Retention" below.
  uint64_t retain_bytes = 0;
  std::chrono::seconds retain_age{0};
};

// Retention. Deleting a segment must not make the rest unreadable or look clean: the segment's
// items other than event batches (process starts, module tables that name the functions, thread
// starts and names, ends, gaps, annotations, exit statuses: small) are kept, in order, in a
// *carry* segment that takes the deleted segment's number (written beside it and renamed over
// it), followed by one Gap item per thread whose batches were deleted (`dropped`: their events,
// `after_sequence`: the last deleted batch, `from_ns`..`to_ns`: their time span). So every reader
// sees each process and its function names as before and the deleted prefix as a known loss (a
// gap) of each thread, never as a clean, shorter recording. There is at most one carry segment,
// always the first: each deletion rewrites it with the next segment's number and removes the
// previous one. DIR/retention.json (rewritten atomically after each deletion) says what was
// deleted; a reader skips segments numbered below its `carry_segment` (what a crash between the
// rename and the removal can leave behind).
inline constexpr const char* kRetentionFile = "retention.json";

struct RetentionStats {
  uint32_t carry_segment = 0;      // the carry segment's number
  uint64_t segments = 0;           // segments deleted
  uint64_t bytes = 0;              // their bytes (files, headers included)
  uint64_t batches = 0;            // event batches deleted
  uint64_t events = 0;             // events in them
  uint64_t undecodable = 0;        // damaged frames found in deleted segments (deleted too)
  uint64_t first_ns = 0, last_ns = 0; // time span of the deleted events (0 when none)
  uint64_t gap_items = 0;          // Gap items the carry segment adds (one per thread)
  struct Thread {
    uint64_t batches = 0, events = 0;
    uint64_t first_sequence = 0, last_sequence = 0;
    uint64_t first_ns = 0, last_ns = 0;
  };
  std::map<std::pair<uint64_t, uint32_t>, Thread> threads; // by (process, thread)
};
// DIR/retention.json, or nullopt when nothing was deleted. Throws std::runtime_error when the file
// exists but cannot be read as what the writer writes.
std::optional<RetentionStats> readRetention(const std::string& dir);
// The mode of the recording's files for `options` (collector.json too).
inline unsigned recordingFileMode(const RecordingOptions& options) {
  return options.readable_by_others ? 0644 : 0600;
}

struct WriterStats {
  uint64_t items = 0;            // messages accepted by append()
  uint64_t bytes = 0;            // frame bytes accepted (headers included)
  uint64_t items_written = 0;    // messages whose frames reached the file (write(2) returned)
  uint64_t segments = 0;         // segment files started
  uint64_t refused_items = 0;    // appends refused after a write error
  uint64_t max_queued_bytes = 0; // high-water mark of bytes waiting for the writer thread
  RetentionStats retention;      // what retention deleted (RecordingOptions::retain_*)
  std::string retention_error;   // why retention stopped deleting (the recording goes on)
};

class SegmentRetention;

// Writes a recording directory. Thread-safe: any thread may call append(); one writer thread of
// its own does all file I/O. Not fork-safe (the child must not use it).
class RecordingWriter {
public:
  // Creates `dir` (and its parents) if needed. Throws std::runtime_error when the directory
  // cannot be created or already holds a recording (a segment file).
  explicit RecordingWriter(std::string dir, RecordingOptions options = {});
  // Calls close().
  ~RecordingWriter();
  RecordingWriter(const RecordingWriter&) = delete;
  RecordingWriter& operator=(const RecordingWriter&) = delete;

  // Appends one validated message (the flat Cap'n Proto bytes; size a multiple of 8) described by
  // `header` (from wire::peekItem). Returns false, and counts the message as refused, once the
  // writer has failed (see error()) or after close(). Blocks only under back-pressure.
  bool append(std::span<const std::byte> message, const wire::ItemHeader& header);
  // Same, validating the message with wire::peekItem first (throws wire::FormatError).
  bool append(std::span<const std::byte> message);

  // Hands everything appended so far to the writer thread and waits until it is written (not
  // necessarily fsynced). Returns false if the writer has failed.
  bool flush();
  // Writes and fsyncs everything, closes the files and stops the writer thread. Idempotent.
  // Returns false if the writer has failed.
  bool close();

  // Empty while healthy; otherwise what went wrong ("write 000003.seg: No space left on device").
  std::string error() const;
  bool failed() const;
  WriterStats stats() const;
  const std::string& directory() const { return dir_; }

private:
  struct Buffer {
    uint32_t segment = 0;
    std::vector<std::byte> data;
    std::vector<IndexRecord> index;
    std::vector<uint64_t> frame_ends; // segment offsets where the buffer's frames end
    uint64_t items = 0;
  };
  struct SegmentFile;

  void startBuffer();
  void queueCurrent(std::unique_lock<std::mutex>& lock);
  void writerLoop();
  void writeBuffer(Buffer& buffer, SegmentFile& file);
  void fail(const std::string& what);
  void enforceRetention(uint64_t open_bytes);

  const std::string dir_;
  const RecordingOptions options_;

  mutable std::mutex mutex_;
  std::condition_variable queue_changed_; // writer thread waits for buffers
  std::condition_variable space_freed_;   // append()/flush() wait for the writer
  std::unique_ptr<Buffer> current_;
  std::deque<std::unique_ptr<Buffer>> queue_;
  std::vector<std::unique_ptr<Buffer>> free_; // written buffers, for reuse
  size_t queued_bytes_ = 0;
  uint32_t segment_ = 0;
  uint64_t segment_size_ = 0; // logical size of segment_ including what is still buffered
  bool segment_started_ = false;
  uint64_t flush_requests_ = 0, flushes_done_ = 0;
  bool writer_idle_ = false; // the writer thread waits for data (append() must wake it)
  bool closing_ = false, closed_ = false;
  std::string error_;
  WriterStats stats_;
  std::unique_ptr<SegmentRetention> retention_; // the writer thread's (retain_* set)
  std::thread writer_;
};

// Something a reader found wrong in a segment.
struct Damage {
  enum class Kind : uint8_t {
    TornTail, // the segment ends inside a frame (the writer stopped mid-write)
    Corrupt,  // bytes that are not intact frames, followed by intact ones; skipped
    UnsupportedVersion, // a segment written in a recording format version this reader does not
                        // know (`version`); not read
    Lost, // `length` segments from `segment` on whose frames are gone: numbers missing from the
          // sequence of segment files, or an empty segment followed by others
  };
  Kind kind = Kind::TornTail;
  uint32_t segment = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint32_t version = 0; // UnsupportedVersion: the segment's format version
};
const char* damageKindName(Damage::Kind kind);
// "segment 3: torn tail at offset 4096 (12 bytes)", "segment 2: lost (1 segment: its frames are
// gone)": what the commands print for each damage.
std::string describeDamage(const Damage& damage);

// One intact frame read from a recording. `message` points into the mapped segment and stays
// valid as long as the reader.
struct Frame {
  uint32_t segment = 0;
  uint64_t offset = 0;
  std::span<const std::byte> message;
};

// Reads a recording directory: every intact frame in order (segment by segment), the damage it
// met on the way, and seeks through the index. Not thread-safe; segments are mapped read-only
// on first use and kept mapped until the reader is destroyed.
class RecordingReader {
public:
  // What becomes of the pages read. kKeep: they stay resident (file-backed, reclaimable) for
  // whatever reads them again (a report's look-ups after its analysis). kReleaseBehind: for a
  // reader that goes through the recording once, the pages well behind it leave the process's
  // resident memory (they come back from the page cache if a frame handed out earlier is read
  // again), so RSS does not grow with the recording; re-reading them would cost page faults.
  enum class Pages : uint8_t { kKeep, kReleaseBehind };
  // Throws std::runtime_error when `dir` is not a directory or holds no segment file.
  explicit RecordingReader(std::string dir, Pages pages = Pages::kKeep);
  ~RecordingReader();
  RecordingReader(const RecordingReader&) = delete;
  RecordingReader& operator=(const RecordingReader&) = delete;

  // The next intact frame, or nullopt at the end of the recording. Damage met on the way is
  // appended to damage() (once, even when the same bytes are read again after a seek).
  std::optional<Frame> next();
  // The next frame decoded. Frames that are intact but do not decode (wire::FormatError) are
  // skipped and counted in undecodable().
  std::optional<wire::StreamItem> nextItem();

  // Positions the reader so that next() returns the frame of (process, thread) whose time range
  // covers `time_ns`: the indexed item of that thread with the latest time <= time_ns (the first
  // in recording order among equals, so that a copy stored later is not taken for it), or its
  // first item when all are later. Frames of other threads follow it as usual; callers filter. Returns
  // false (position unchanged) when the recording has no item of that thread.
  bool seek(uint64_t process, uint32_t thread, uint64_t time_ns);
  // After a seek(): the next intact frame of that thread from the seek's frame on, found through
  // the index (the other threads' frames are not read); nullopt after the thread's last indexed
  // item. Does not move next()'s position.
  std::optional<Frame> nextOfThread();
  // Back to the first frame of the first segment.
  void rewind();
  // Positions the reader at the frame at `offset` of `segment` (a Frame's position): next()
  // returns it. False (position unchanged) when the recording has no such segment or `offset` is
  // not a frame boundary inside it.
  bool seekTo(uint32_t segment, uint64_t offset);
  // The intact frame at `offset` of `segment` (an index record's position), or nullopt when no
  // intact frame is there. Does not move the reader's position.
  std::optional<Frame> readAt(uint32_t segment, uint64_t offset);

  // Every index record of a segment (read from its .idx file, or rebuilt by scanning the segment
  // when that file is missing or does not match the segment).
  const std::vector<IndexRecord>& index(uint32_t segment);
  uint32_t segmentCount() const { return static_cast<uint32_t>(segments_.size()); }
  // The number of the segment at `position` (0 .. segmentCount() - 1): segments are numbered from
  // 0, but retention deletes the oldest, so the first one read may have a higher number.
  uint32_t segmentNumber(uint32_t position) const;
  const std::vector<Damage>& damage() const { return damage_; }
  uint64_t undecodable() const { return undecodable_; }
  // What retention deleted from this recording (DIR/retention.json), nullopt when nothing.
  const std::optional<RetentionStats>& retention() const { return retention_; }
  const std::string& directory() const { return dir_; }

private:
  struct Segment;
  struct ThreadPlace {
    uint64_t time_ns;
    uint32_t position; // in segments_
    uint64_t offset;
  };
  Segment& open(uint32_t segment);
  void moveTo(uint32_t position, uint64_t offset);
  // Lets go of `s`'s pages from where it last did up to `end`, when reading once (Pages).
  void releaseBelow(Segment& s, size_t end);
  void noteDamage(const Damage& damage);
  void noteMissingSegments();

  std::string dir_;
  Pages pages_;
  std::vector<std::unique_ptr<Segment>> segments_;
  // Per (process, thread): its items' places in recording order (seek()), built at the first seek.
  std::optional<std::map<std::pair<uint64_t, uint32_t>, std::vector<ThreadPlace>>> thread_places_;
  const std::vector<ThreadPlace>* sought_places_ = nullptr; // the last seek()'s thread
  size_t next_place_ = 0;                                   // nextOfThread()'s next, in it
  uint32_t current_ = 0;
  std::vector<Damage> damage_;
  uint64_t undecodable_ = 0;
  std::optional<RetentionStats> retention_;
};

} // namespace shapetrace::recording
