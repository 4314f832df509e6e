// Writes the seed corpus of recording_fuzzer (recording_corpus.h): a small real recording (two
// threads of a process, with a gap, an annotation and their ends) written by RecordingWriter, its
// segment with and without its index file, and with a second copy of the segment.
#include "fuzz/recording_corpus.h"
#include "recording/recording.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

using namespace shapetrace;
using namespace shapetrace::wire;

namespace {

std::vector<char> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writeInput(const std::filesystem::path& file, uint8_t flags, const std::vector<char>& index,
                const std::vector<char>& segment) {
  std::ofstream out(file, std::ios::binary);
  const auto index_bytes = static_cast<uint32_t>(index.size());
  out.put(static_cast<char>(flags));
  out.write(reinterpret_cast<const char*>(&index_bytes), sizeof index_bytes);
  out.write(index.data(), static_cast<long>(index.size()));
  out.write(segment.data(), static_cast<long>(segment.size()));
}

std::vector<StreamItem> items() {
  ProcessStart start;
  start.pid = 42;
  start.executable = "/bin/app";
  start.arguments = {"app"};
  std::vector<StreamItem> out = {
      {1, start},
      {1, ModuleTable{"app", 0, {{0, "_Z1fv", "f()", "f.cpp", 3}, {1, "main", "main", "m.c", 9}}}},
      {1, ThreadStart{7, 100, "main"}},
      {1, ThreadStart{8, 105, "worker"}},
  };
  for (uint32_t batch = 0; batch < 3; ++batch)
    for (uint32_t thread : {7u, 8u}) {
      const uint64_t t = 120 + 100 * batch + thread;
      out.push_back({1, EventBatch{thread, batch,
                                   {{t, 1, EventKind::Enter},
                                    {t + 5, 0, EventKind::Enter},
                                    {t + 9, 0, EventKind::Exit},
                                    {t + 20, 1, EventKind::Exit}},
                                   {Annotation{thread, t + 6, "rows", 3, 2}},
                                   {TracerWait{3, t + 9, 4}}}});
    }
  out.push_back({1, Gap{8, 3, 2, 430, 440}});
  out.push_back({1, Annotation{7, 450, "input_size", 4096}});
  out.push_back({1, ThreadEnd{7, 500, 12, 0, 3}});
  out.push_back({1, ThreadEnd{8, 510, 12, 3, 3}});
  out.push_back({1, ProcessEnd{600, 24, 3, 0, EndReason::Exit, ""}});
  return out;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_recording_corpus DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  const std::string recording = dir / "recording.tmp";
  std::filesystem::remove_all(recording);
  {
    recording::RecordingWriter writer(recording);
    for (const StreamItem& item : items())
      if (!writer.append(encodeItem(item)))
        throw std::runtime_error(writer.error());
    if (!writer.close())
      throw std::runtime_error(writer.error());
  }
  const auto segment = readFile(recording::segmentPath(recording, 0));
  const auto index = readFile(recording::indexPath(recording, 0));
  std::filesystem::remove_all(recording);
  writeInput(dir / "indexed", fuzz::kWithIndex, index, segment);
  writeInput(dir / "scanned", 0, {}, segment);
  writeInput(dir / "two_copies", fuzz::kWithIndex | fuzz::kSecondCopy, index, segment);
  return 0;
}
