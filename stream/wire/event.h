// The fixed-size trace event: the unit the runtime's rings hold and the wire's batches carry.
//
// In a ring the timestamp is in raw clock ticks (TSC or CLOCK_MONOTONIC, see the runtime's clock);
// the runtime's drain converts it to nanoseconds on CLOCK_MONOTONIC before encoding, so every
// decoded Event carries nanoseconds and consumers never need the calibration.
#pragma once

#include <cstdint>

namespace shapetrace {

enum class EventKind : uint32_t {
  Enter = 0,
  Exit = 1,
  // The function was left by an exception unwinding through it; the analyzer treats it as an exit.
  UnwindExit = 2,
  // The frame was abandoned by a longjmp (longjmp, _longjmp, siglongjmp, __longjmp_chk) that jumped
  // over it: sent at the time of the jump, one per frame, innermost first. Treated as an exit.
  AbandonedExit = 3,
};
inline constexpr uint32_t kEventKindCount = 4;
// Every kind but Enter ends a call.
inline constexpr bool isExit(EventKind kind) { return kind != EventKind::Enter; }

struct alignas(16) Event {
  // Left uninitialised, as a plain struct's members would be, but also by std::vector's resize:
  // a decoded batch is sized first and then written event by event, and filling it with zeros
  // beforehand cost 3% of an analysis.
  Event() noexcept {} // NOLINT(modernize-use-equals-default): `= default` would zero in resize
  constexpr Event(uint64_t timestamp, uint32_t function_id, EventKind kind) noexcept
      : timestamp(timestamp), function_id(function_id), kind(kind) {}

  uint64_t timestamp;   // ticks in a ring, nanoseconds once decoded
  uint32_t function_id; // global function id, see ModuleTable
  EventKind kind;

  friend bool operator==(const Event&, const Event&) = default;
};
static_assert(sizeof(Event) == 16, "Event is the 16-byte record of the hot path");

} // namespace shapetrace
