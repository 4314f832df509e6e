// Test helpers: Function Call Instances written as nested literals, turned into the events a
// runtime would send, and shapes built directly in a ShapeTable.
#pragma once

#include "shape_table.h"
#include "wire/event.h"
#include "wire/items.h"

#include <cstdint>
#include <vector>

namespace shapetrace::analyzer::testing {

// A Function Call Instance [f, (children...)] with the time it spends besides its children.
struct Call {
  uint32_t function = 0;
  std::vector<Call> children;
  uint64_t self_ns = 10;
};

inline Call call(uint32_t function, std::vector<Call> children = {}, uint64_t self_ns = 10) {
  return Call{function, std::move(children), self_ns};
}

// Appends the enter/exit events of `c` starting at `time` (advanced past the call).
inline void appendEvents(const Call& c, uint64_t& time, std::vector<Event>& out) {
  out.push_back(Event{time, c.function, EventKind::Enter});
  time += c.self_ns / 2;
  for (const Call& child : c.children)
    appendEvents(child, time, out);
  time += c.self_ns - c.self_ns / 2;
  out.push_back(Event{time, c.function, EventKind::Exit});
}

inline std::vector<Event> eventsOf(const std::vector<Call>& calls, uint64_t start = 1000) {
  std::vector<Event> events;
  uint64_t time = start;
  for (const Call& c : calls)
    appendEvents(c, time, events);
  return events;
}

// A shape [f, {null} + children] interned in `table` (children in any order, repeats allowed).
inline ShapeId shape(ShapeTable& table, uint32_t function, std::vector<ShapeId> children = {}) {
  const size_t size = canonicalizeChildSet(children);
  return table.intern(function, std::span(children).first(size));
}

// Def. 5.3 on a Call: its shape, interned in `table`.
inline ShapeId shapeOf(ShapeTable& table, const Call& c) {
  std::vector<ShapeId> children;
  for (const Call& child : c.children)
    children.push_back(shapeOf(table, child));
  return shape(table, c.function, std::move(children));
}

inline wire::StreamItem batchItem(uint64_t process, uint32_t thread, uint64_t sequence,
                                  std::vector<Event> events) {
  return wire::StreamItem{process, wire::EventBatch{thread, sequence, std::move(events), {}, {}, {}}};
}

} // namespace shapetrace::analyzer::testing
