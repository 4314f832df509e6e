// Writes the seed corpus of summary_fuzzer: the Cap'n Proto messages (decompressed: the fuzzer
// compresses each input itself, so that its mutations change the message, not the zstd frame) of
// real summaries: hosts' analyses of a few threads with shapes, outliers, a gap and a thread end,
// and the forged summary of docs/security.md (threads calling function 2^24-1).
#include "fleet/summary.h"
#include "fleet/hosts.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <zstd.h>

using namespace shapetrace;

namespace {

void writeSummary(const std::filesystem::path& file, const std::vector<wire::StreamItem>& items,
                  uint64_t sequence) {
  analyzer::Analyzer analyzer(analyzer::AnalysisSettings{}, 1);
  for (const auto& item : items)
    analyzer.consume(item);
  const wire::Bytes compressed =
      fleet::encodeSummary({"host", sequence, 0, "/rec", 1}, analyzer.mergeInputs());
  std::vector<char> message(ZSTD_getFrameContentSize(compressed.data(), compressed.size()));
  const size_t size =
      ZSTD_decompress(message.data(), message.size(), compressed.data(), compressed.size());
  if (ZSTD_isError(size) || size != message.size())
    throw std::runtime_error("cannot decompress the summary just encoded");
  std::ofstream(file, std::ios::binary).write(message.data(), static_cast<long>(size));
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_corpus DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  writeSummary(dir / "one_thread", fleet::testing::hostItems(0, 1, 1, 1), 1);
  writeSummary(dir / "two_processes", fleet::testing::hostItems(1, 2, 2, 2), 3);
  writeSummary(dir / "largest_function_id", fleet::testing::largestFunctionIdItems(2), 1);
  return 0;
}
