// Counts the enter and exit records of some functions in an XRay FDR log (format version 5):
// a 32-byte file header, then 16-byte metadata records (low bit 1; custom and typed event markers
// carry a payload whose int32 size follows the kind byte) and 8-byte function records (low bit 0:
// kind in bits 1-3, function id in bits 4-31). `llvm-xray account` needs minutes and gigabytes for
// fib(32)'s 14 M records; this takes a fraction of a second. Used by runtime_hooks_bench.py.
//
//   xray_fdr_count LOG ID...     prints the number of function records of those ids
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s LOG FUNCTION_ID...\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "xray_fdr_count: cannot read %s\n", argv[1]);
    return 1;
  }
  const std::vector<unsigned char> data((std::istreambuf_iterator<char>(in)), {});
  std::set<uint32_t> ids;
  for (int i = 2; i < argc; ++i)
    ids.insert(uint32_t(std::strtoul(argv[i], nullptr, 10)));
  uint64_t count = 0;
  for (size_t offset = 32; offset + 8 <= data.size();) {
    uint32_t word;
    std::memcpy(&word, &data[offset], sizeof word);
    if (word & 1) {
      const uint32_t kind = (word >> 1) & 0x7F;
      int32_t payload = 0;
      if ((kind == 5 || kind == 8) && offset + 5 <= data.size()) // custom / typed event marker
        std::memcpy(&payload, &data[offset + 1], sizeof payload);
      offset += 16 + size_t(payload > 0 ? payload : 0);
      continue;
    }
    if (ids.count(word >> 4) && ((word >> 1) & 7) <= 3)
      ++count;
    offset += 8;
  }
  std::printf("%llu\n", (unsigned long long)count);
  return 0;
}
