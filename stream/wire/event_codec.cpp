#include "wire/event_codec.h"

#include "wire/format_error.h"

namespace shapetrace::wire {
namespace {

// Returns nullptr when the varint runs past `end` or is longer than 64 bits. kChecked = false
// leaves out the bounds checks, for when 10 bytes surely remain (most of a batch): the loop then
// unrolls into straight-line code.
template <bool kChecked>
inline const uint8_t* getVarint(const uint8_t* p, const uint8_t* end, uint64_t& v) {
  uint64_t result = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (kChecked && p >= end) return nullptr;
    const uint64_t byte = *p++;
    result |= (byte & 0x7f) << shift;
    if (byte < 0x80) {
      v = result;
      return p;
    }
  }
  return nullptr;
}

inline int64_t unzigzag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

} // namespace

size_t encodeEvents(std::span<const Event> events, uint64_t base, std::vector<uint8_t>& out) {
  size_t start = out.size();
  out.resize(start + events.size() * kMaxEncodedEventBytes);
  uint8_t* p = out.data() + start;
  uint64_t previous = base;
  for (const Event& e : events)
    p = EventEncoder::encodeEvent(p, previous, e.timestamp, e.function_id, e.kind);
  size_t written = static_cast<size_t>(p - (out.data() + start));
  out.resize(start + written);
  return written;
}

void decodeEvents(std::span<const uint8_t> bytes, uint32_t count, uint64_t base,
                  std::vector<Event>& out) {
  const uint8_t* p = bytes.data();
  const uint8_t* end = p + bytes.size();
  // Every event takes at least two bytes, so a hostile count cannot make us allocate more than
  // the message itself justifies.
  if (count > bytes.size() / 2)
    throw FormatError(FormatErrorReason::BadEvents,
                      "batch declares " + std::to_string(count) + " events in " +
                          std::to_string(bytes.size()) + " bytes");
  size_t first = out.size();
  out.resize(first + count);
  Event* e = out.data() + first;
  uint64_t previous = base;
  for (uint32_t i = 0; i < count; ++i, ++e) {
    uint64_t head, function;
    // Two varints of at most 10 bytes each (a hostile head may take 10) cannot run past the end.
    if (end - p >= 20) [[likely]] {
      if ((p = getVarint<false>(p, end, head))) p = getVarint<false>(p, end, function);
    } else if ((p = getVarint<true>(p, end, head))) {
      p = getVarint<true>(p, end, function);
    }
    // The kind takes the head's two low bits, and all four values are kinds.
    static_assert(kEventKindCount == 4);
    if (!p || function > UINT32_MAX) {
      out.resize(first);
      throw FormatError(FormatErrorReason::BadEvents,
                        "event " + std::to_string(i) + " of " + std::to_string(count) +
                            " is cut short or invalid");
    }
    previous += static_cast<uint64_t>(unzigzag(head >> 2));
    *e = Event{previous, static_cast<uint32_t>(function), static_cast<EventKind>(head & 3)};
  }
  if (p != end) {
    out.resize(first);
    throw FormatError(FormatErrorReason::BadEvents,
                      std::to_string(end - p) + " bytes follow the last of " +
                          std::to_string(count) + " events");
  }
}

} // namespace shapetrace::wire
