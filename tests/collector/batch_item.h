// Test helper: an event batch item with events of a simple, checkable pattern.
#pragma once

#include "wire/items.h"

#include <cstdint>

namespace shapetrace::testing {

// A batch of `n` events of `thread` starting at `t0`, 10 ns apart: enters and exits in turn of
// functions 0, 1 and 2.
inline wire::StreamItem batchItem(uint64_t process, uint32_t thread, uint64_t sequence, uint64_t t0,
                                  int n = 8) {
  wire::EventBatch b{thread, sequence, {}, {}, {}};
  for (int i = 0; i < n; ++i)
    b.events.push_back(Event{t0 + 10 * static_cast<uint64_t>(i), static_cast<uint32_t>(i % 3),
                             i % 2 ? EventKind::Exit : EventKind::Enter});
  return wire::StreamItem{process, b};
}

} // namespace shapetrace::testing
