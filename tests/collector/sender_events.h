// The events test_sender puts into batch `sequence` of `thread`, shared by the sender and by the
// tests that check every event arrived exactly as sent: a pure function of (thread, sequence, i),
// so a test can rebuild any batch without being told its content.
#pragma once

#include "wire/event.h"

#include <cstdint>
#include <vector>

namespace shapetrace::testing {

inline std::vector<Event> senderBatchEvents(uint32_t thread, uint64_t sequence, uint32_t count) {
  std::vector<Event> events(count);
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t n = sequence * count + i;
    events[i] = Event{n * 10 + thread, static_cast<uint32_t>(n % 1000),
                      i % 2 ? EventKind::Exit : EventKind::Enter};
  }
  return events;
}

} // namespace shapetrace::testing
