// Test helpers: the stream items of a few "hosts", each with its own processes running a mix of
// call trees (some slow enough to be outliers), with module tables naming the functions alike
// across hosts (as one program deployed on many hosts does), a lost-events gap and a thread end.
#pragma once

#include "analyzer/trace_builder.h"
#include "wire/items.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace shapetrace::fleet::testing {

using analyzer::testing::call;
using analyzer::testing::Call;

inline const char* const kFunctionNames[] = {"_Z4mainv",  "_Z6handlev", "_Z5parsev",
                                             "_Z5queryv", "_Z6renderv", "_Z3logv"};

// A request tree drawn from a small set of structures, with durations that vary.
inline Call request(std::mt19937_64& random) {
  const uint64_t slow = random() % 40 == 0 ? 50000 : random() % 200;
  switch (random() % 4) {
  case 0:
    return call(1, {call(2), call(3, {}, 100 + slow)});
  case 1:
    return call(1, {call(2), call(4, {call(5)})}, 30 + slow);
  case 2:
    return call(1, {call(3), call(3), call(5, {}, 10 + slow)});
  default:
    return call(5, {}, 5 + slow);
  }
}

// The items of host `host` (0, 1, 2...): `processes` processes of `threads` threads each, every
// thread sending `batches` batches of requests. Process keys are distinct across hosts, as the
// runtime's random keys are.
inline std::vector<wire::StreamItem> hostItems(unsigned host, unsigned processes = 2,
                                               unsigned threads = 2, unsigned batches = 3) {
  std::vector<wire::StreamItem> items;
  std::mt19937_64 random(1000 + host);
  for (unsigned p = 0; p < processes; ++p) {
    const uint64_t process = 0x1000 * (host + 1) + p;
    wire::ModuleTable table{"module", 0, {}};
    // Each process numbers the functions its own way (ids are process-local).
    for (uint32_t id = 0; id < std::size(kFunctionNames); ++id)
      table.functions.push_back(
          wire::FunctionInfo{id, kFunctionNames[(id + p) % std::size(kFunctionNames)], "", "", 0});
    items.push_back({process, table});
    for (unsigned t = 0; t < threads; ++t) {
      const uint32_t thread = 100 + t;
      items.push_back({process, wire::ThreadStart{thread, 1000, "worker-" + std::to_string(t)}});
      uint64_t time = 1000 + 7919 * host;
      for (unsigned b = 0; b < batches; ++b) {
        std::vector<Call> calls;
        for (int i = 0; i < 40; ++i)
          calls.push_back(request(random));
        auto events = analyzer::testing::eventsOf(calls, time);
        time = events.back().timestamp + 1000;
        if (b == 1 && t == 0)
          items.push_back({process, wire::Gap{thread, 17, b - 1, time, time}});
        items.push_back(analyzer::testing::batchItem(process, thread, b, std::move(events)));
      }
      if (t == 1)
        items.push_back({process, wire::ThreadEnd{thread, time}});
    }
  }
  return items;
}

// The forged summary's items: `threads` threads of one process, each with one call of the largest
// function id the analyzer takes (2^24-1), which dense tables made 4 GB a thread (docs/security.md).
inline std::vector<wire::StreamItem> largestFunctionIdItems(unsigned threads = 8) {
  std::vector<wire::StreamItem> items;
  constexpr uint32_t kLargest = (uint32_t{1} << 24) - 1;
  for (uint32_t thread = 1; thread <= threads; ++thread)
    items.push_back(analyzer::testing::batchItem(
        0x66, thread, 0, analyzer::testing::eventsOf({call(kLargest, {call(1)})})));
  return items;
}

} // namespace shapetrace::fleet::testing
