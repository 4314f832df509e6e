// libFuzzer target for the collector's reading of a local channel (stream/channel/channel.h): the
// ring's bytes and the header's indices are the input, as a hostile process could write them. The
// reader must never read outside the mapping, never allocate more than the message bound, and
// either hand on messages or call the channel broken.
//
//   build/tests/collector/channel_fuzzer -max_total_time=60 -rss_limit_mb=2048
#include "channel/channel.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shapetrace::channel;
  // The smallest ring, so that wrap-around and overruns are within the fuzzer's reach.
  constexpr uint64_t kDataBytes = kMinDataBytes;
  static std::vector<std::byte> memory(kHeaderBytes + kDataBytes);
  std::memset(memory.data(), 0, memory.size());
  Writer::initialise(memory.data(), kDataBytes, 1);
  auto* header = reinterpret_cast<Header*>(memory.data());
  // The first 16 bytes: where the consumer starts and how much the producer claims to have
  // written (any value: the reader must check it); the rest: the ring from the start.
  uint64_t tail = 0, written = 0;
  if (size >= 16) {
    std::memcpy(&tail, data, 8);
    std::memcpy(&written, data + 8, 8);
    data += 16;
    size -= 16;
  }
  std::memcpy(memory.data() + kHeaderBytes, data, std::min<size_t>(size, kDataBytes));
  header->tail.store(tail % (kDataBytes * 4));
  header->head.store(header->tail.load() + written % (kDataBytes * 2));
  std::string error;
  if (!Reader::validate(memory.data(), memory.size(), error))
    __builtin_trap(); // the memory is made right above: a failure here is the reader's
  Reader reader(memory.data());
  size_t bytes = 0;
  reader.read([&](std::span<const std::byte> message) { bytes += message.size(); }, [] {}, 1 << 20,
              1 << 20, error);
  return 0;
}
