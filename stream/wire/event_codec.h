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
// The latest timestamp the encoding carries exactly (2^61 - 1 ns, 73 years): two such times differ
// by less than 2^61, whose zigzag shifted left by two still fits 64 bits. Clocks of running
// programs are far below it; an importer of timestamps from elsewhere must check them against it.
inline constexpr uint64_t kMaxEventTimestampNs = (uint64_t{1} << 61) - 1;

// Encodes one batch's events one at a time, for producers that make each event on the way (the
// runtime's drain converts ring slots from ticks to nanoseconds): no intermediate array of Events,
// whose 16-byte records, assembled field by field and copied whole, stalled store forwarding on
// every event. Room for `capacity` events is made once; append() then only writes bytes.
class EventEncoder {
public:
  // Makes room for `capacity` events per batch and starts an empty batch.
  void start(size_t capacity) {
    if (bytes_.size() < capacity * kMaxEncodedEventBytes)
      bytes_.resize(capacity * kMaxEncodedEventBytes);
    capacity_ = capacity;
    clear();
  }
  // Forgets the events so far; the next append() is the batch's first and sets its base.
  void clear() {
    end_ = 0;
    count_ = 0;
  }
  // At most `capacity` events per start().
  void append(uint64_t timestamp, uint32_t function_id, EventKind kind) {
    if (count_ == 0)
      base_ = previous_ = timestamp;
    uint8_t* p = encodeEvent(bytes_.data() + end_, previous_, timestamp, function_id, kind);
    end_ = size_t(p - bytes_.data());
    ++count_;
  }

  size_t count() const { return count_; }
  bool full() const { return count_ >= capacity_; }
  uint64_t base() const { return count_ ? base_ : empty_base_; }
  // The base of a batch that carries no event, only marks (a call's values whose enter left in
  // the batch before): the time of the thread's last event, so that the batch has a place in time.
  void setEmptyBase(uint64_t timestamp) { empty_base_ = timestamp; }
  std::span<const uint8_t> bytes() const { return {bytes_.data(), end_}; }

  // One event at `p` (at most kMaxEncodedEventBytes), its timestamp relative to `previous`,
  // which it then becomes. Returns the end of what it wrote.
  static uint8_t* encodeEvent(uint8_t* p, uint64_t& previous, uint64_t timestamp,
                              uint32_t function_id, EventKind kind) {
    p = putVarint(p, zigzag(int64_t(timestamp - previous)) << 2 | uint32_t(kind));
    previous = timestamp;
    return putVarint(p, function_id);
  }

private:
  static uint8_t* putVarint(uint8_t* p, uint64_t v) {
    while (v >= 0x80) {
      *p++ = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<uint8_t>(v);
    return p;
  }
  static uint64_t zigzag(int64_t v) {
    return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  }

  std::vector<uint8_t> bytes_;
  size_t capacity_ = 0;
  size_t end_ = 0;
  size_t count_ = 0;
  uint64_t base_ = 0;
  uint64_t previous_ = 0;
  uint64_t empty_base_ = 0;
};

// Appends the encoding of `events` to `out`; returns the number of bytes appended.
size_t encodeEvents(std::span<const Event> events, uint64_t base, std::vector<uint8_t>& out);

// Decodes exactly `count` events from `bytes` into `out` (appending). Throws FormatError
// (BadEvents) when the bytes end early, hold bytes after the last event, or carry an id wider than
// 32 bits.
void decodeEvents(std::span<const uint8_t> bytes, uint32_t count, uint64_t base,
                  std::vector<Event>& out);

} // namespace shapetrace::wire
