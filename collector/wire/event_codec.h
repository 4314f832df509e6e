// The encoding of events inside an EventBatch (EventEncoding.deltaVarint in the schema).
//
// Per event: varint(zigzag(timestamp - previous timestamp) << 2 | kind), then varint(function id).
// The first event's previous timestamp is the batch's base. Zigzag keeps a clock that steps back
// (recalibration) representable. Measured against a raw 16-byte blob and a Cap'n Proto struct list
// in tests/bench/wire_encoding_bench.cpp; figures in docs/BENCHMARKS.md.
#pragma once

#include "wire/event.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace shapetrace::wire {

// The most bytes one event can take: a 64-bit varint (10 bytes) and a 32-bit one (5 bytes).
inline constexpr size_t kMaxEncodedEventBytes = 15;

// Appends the encoding of `events` to `out`; returns the number of bytes appended.
size_t encodeEvents(std::span<const Event> events, uint64_t base, std::vector<uint8_t>& out);

// Decodes exactly `count` events from `bytes` into `out` (appending). Throws FormatError
// (BadEvents) when the bytes end early, hold bytes after the last event, or carry an unknown kind.
void decodeEvents(std::span<const uint8_t> bytes, uint32_t count, uint64_t base,
                  std::vector<Event>& out);

} // namespace shapetrace::wire
