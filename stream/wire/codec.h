// Turning stream items into Cap'n Proto messages and back, with every check a reader of untrusted
// bytes needs.
//
// A message is the flat-array serialization of one StreamItem (segment table included), the same
// bytes on a ZeroMQ socket and inside a recording frame.
#pragma once

#include "wire/event_codec.h"
#include "wire/items.h"

#include <cstddef>
#include <span>
#include <vector>

namespace shapetrace::wire {

// The format version this build writes and the only one it reads (see stream.capnp).
inline constexpr uint16_t kFormatVersion = 1;
// Largest message accepted, and the Cap'n Proto traversal limit derived from it. A batch of the
// runtime's default size is far below this (about 64 KiB).
inline constexpr size_t kMaxMessageBytes = size_t{64} << 20;
// Most events one batch may declare; bounds what a decoder allocates for one message.
inline constexpr uint32_t kMaxBatchEvents = uint32_t{1} << 22;

using Bytes = std::vector<std::byte>;

// Serializes `item`. Never fails for items built by this process.
Bytes encodeItem(const StreamItem& item);

// Serializes an event batch straight from the caller's events (timestamps in nanoseconds), without
// building an EventBatch value first: the runtime's drain path.
Bytes encodeEventBatch(uint64_t process, uint32_t thread, uint64_t sequence,
                       std::span<const Event> events);
// What a batch carries besides its events (EventBatch.annotations and tracer_waits).
struct BatchMarks {
  std::span<const Annotation> annotations;
  std::span<const TracerWait> tracer_waits;
  std::span<const Throttle> throttles{};
  std::span<const CallValues> call_values{};
};
// The same from events already encoded one by one (the runtime's drain path).
Bytes encodeEventBatch(uint64_t process, uint32_t thread, uint64_t sequence,
                       const EventEncoder& events, BatchMarks marks = {});

// Parses and fully validates one message. Throws FormatError on anything wrong.
StreamItem decodeItem(std::span<const std::byte> message);

// What a relay needs to know about a message without decoding its events: validated structure,
// version and kind, the thread and sequence where the item has them.
struct ItemHeader {
  uint64_t process = 0;
  ItemKind kind = ItemKind::ProcessStart;
  uint32_t thread = 0;        // 0 for process-level items
  uint64_t sequence = 0;      // EventBatch only
  uint32_t event_count = 0;   // EventBatch only
  uint64_t first_ns = 0;      // EventBatch: base timestamp; thread/annotation items: their time
};
// Validates like decodeItem() but leaves batch events undecoded (their size is still checked
// against the declared count). Throws FormatError.
ItemHeader peekItem(std::span<const std::byte> message);

} // namespace shapetrace::wire
