// libFuzzer target for the recording reader (recording/recording.h RecordingReader) and its index:
// a recording directory whose segment and index files hold the input, read as the commands read
// one (every item in order, then seeks through the index by thread and by position).
//
// An input (recording_corpus.h): a flags byte, the index file's length (4 bytes, little-endian),
// the index file, then the segment file. Flags: kWithHeader prepends a valid segment file header
// (so that most inputs reach the frames), kWithIndex writes the index file, kSecondCopy also
// writes the segment as 000002.seg (a missing segment, and every frame twice).
//
// Oracles besides "no crash, no sanitizer report, no memory past -rss_limit_mb": the reader throws
// nothing; the index's records are frame boundaries in order; a seek to a thread finds it
// and nextOfThread() returns at most its indexed frames; reading again does not add damage.
//
// Build and run (bounded, as CI does):
//   cmake --build build --target recording_fuzzer
//   build/tests/collector/recording_fuzzer -max_total_time=60 -rss_limit_mb=2048 \
//     build/tests/collector/recording_fuzzer_corpus
#include "fuzz/recording_corpus.h"
#include "recording/recording.h"
#include "wire/format_error.h"
#include "wire/framing.h"

#include <cstdio>
#include <cstdlib>
#include <source_location>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>

using namespace shapetrace;
using namespace shapetrace::fuzz;

namespace {

// An oracle that failed names its line (then aborts: libFuzzer keeps the input).
void check(bool condition, std::source_location where = std::source_location::current()) {
  if (condition)
    return;
  std::fprintf(stderr, "check failed: %s:%u\n", where.file_name(), where.line());
  std::abort();
}

void writeFile(const std::string& path, std::span<const uint8_t> bytes, bool header) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (header) {
    std::vector<std::byte> h;
    wire::appendFileHeader(h);
    out.write(reinterpret_cast<const char*>(h.data()), static_cast<long>(h.size()));
  }
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<long>(bytes.size()));
}

// The directory the inputs are written to, one per fuzzing process, emptied for each input and
// removed at exit.
struct InputDirectory {
  InputDirectory()
      : path(std::filesystem::temp_directory_path() /
             ("recording_fuzzer." + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~InputDirectory() { std::filesystem::remove_all(path); }
  std::string path;
};

const std::string& directory() {
  static const InputDirectory dir;
  return dir.path;
}

void writeRecording(const RecordingInput& input) {
  const std::string& dir = directory();
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    std::filesystem::remove(entry.path());
  const bool header = input.flags & kWithHeader;
  writeFile(recording::segmentPath(dir, 0), input.segment, header);
  if (input.flags & kWithIndex)
    writeFile(recording::indexPath(dir, 0), input.index, false);
  if (input.flags & kSecondCopy)
    writeFile(recording::segmentPath(dir, 2), input.segment, header);
}

// Every thread in the index: sought, and walked through nextOfThread(), which hands out each of
// its indexed frames at most once (callers check whose a frame is: the index is only a hint).
void checkSeeks(recording::RecordingReader& reader) {
  std::map<std::pair<uint64_t, uint32_t>, size_t> records; // per thread
  for (uint32_t position = 0; position < reader.segmentCount(); ++position) {
    uint64_t previous = 0;
    for (const recording::IndexRecord& r : reader.index(reader.segmentNumber(position))) {
      // A frame boundary, in order (its frame may still fail its checksum: readAt() tells).
      check(r.offset >= wire::kFileHeaderBytes && r.offset % 8 == 0 && r.offset > previous);
      previous = r.offset;
      reader.readAt(reader.segmentNumber(position), r.offset);
      ++records[{r.process, r.thread}];
    }
  }
  for (const auto& [thread, count] : records) {
    check(reader.seek(thread.first, thread.second, 0));
    size_t frames = 0;
    while (reader.nextOfThread())
      check(++frames <= count);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto input = splitRecordingInput(std::span(data, size));
  if (!input)
    return 0;
  writeRecording(*input);
  recording::RecordingReader reader(directory());
  while (reader.nextItem()) {
  }
  checkSeeks(reader);
  // Back to the start: the same items again, the damage not counted twice.
  const size_t damage = reader.damage().size();
  reader.rewind();
  while (reader.nextItem()) {
  }
  check(reader.damage().size() == damage);
  return 0;
}
