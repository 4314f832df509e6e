// The stream items as plain C++ values: what encodeItem() writes and decodeItem() returns.
//
// One struct per item of stream/schema/stream.capnp, with the same field meanings (the schema's
// comments are the reference). Consumers work with these values and never with Cap'n Proto readers,
// so validation happens once, in decodeItem().
#pragma once

#include "wire/event.h"

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace shapetrace::wire {

// Tsc: x86-64 `rdtsc`; GenericTimer: AArch64 CNTVCT_EL0; Monotonic: CLOCK_MONOTONIC per event.
enum class ClockSource : uint8_t { Tsc, Monotonic, GenericTimer };

struct ClockCalibration {
  ClockSource source = ClockSource::Monotonic;
  double ticks_per_ns = 1.0;
  uint64_t ref_ticks = 0;
  uint64_t ref_ns = 0;
  friend bool operator==(const ClockCalibration&, const ClockCalibration&) = default;
};

struct ConfigEntry {
  std::string name;
  std::string value;
  friend bool operator==(const ConfigEntry&, const ConfigEntry&) = default;
};

// ProcessOrigin and EndReason of the schema.
enum class ProcessOrigin : uint8_t { Started, Forked, Exec, ExecFailed };
enum class EndReason : uint8_t { Exit, Exec, ExitImmediately, Signal };
const char* processOriginName(ProcessOrigin origin);
const char* endReasonName(EndReason reason);

struct ProcessStart {
  uint32_t pid = 0;
  uint32_t parent_pid = 0;
  uint64_t parent_process = 0;
  std::string executable;
  std::vector<std::string> arguments;
  std::string hostname;
  uint64_t start_ns = 0;
  int64_t start_realtime_ns = 0;
  ClockCalibration clock;
  std::vector<ConfigEntry> config;
  ProcessOrigin origin = ProcessOrigin::Started;
  uint64_t previous_image = 0;
  friend bool operator==(const ProcessStart&, const ProcessStart&) = default;
};

// Why a function of a module's table is not instrumented (stream.capnp's Exclusion).
enum class Exclusion : uint8_t { kNone, kByRule, kBySize };
// "rule", "size" ("" for kNone): as dump and the analysis model name them.
const char* exclusionName(Exclusion exclusion);

struct FunctionInfo {
  uint32_t id = 0;
  std::string mangled_name;
  std::string demangled_name;
  std::string source_file;
  uint32_t line = 0;
  Exclusion excluded = Exclusion::kNone; // left out by the user's filters at build
  friend bool operator==(const FunctionInfo&, const FunctionInfo&) = default;
};

struct ModuleTable {
  std::string module_id;
  uint32_t base_id = 0;
  std::vector<FunctionInfo> functions;
  friend bool operator==(const ModuleTable&, const ModuleTable&) = default;
};

struct ThreadStart {
  uint32_t thread = 0;
  uint64_t timestamp_ns = 0;
  std::string name;
  friend bool operator==(const ThreadStart&, const ThreadStart&) = default;
};

struct ThreadName {
  uint32_t thread = 0;
  uint64_t timestamp_ns = 0;
  std::string name;
  friend bool operator==(const ThreadName&, const ThreadName&) = default;
};

struct ThreadEnd {
  uint32_t thread = 0;
  uint64_t timestamp_ns = 0;
  uint64_t events_recorded = 0;
  uint64_t events_dropped = 0;
  uint64_t batches = 0;
  friend bool operator==(const ThreadEnd&, const ThreadEnd&) = default;
};

// An annotation (shapetrace_annotate): an item of its own, or one of an EventBatch's, where
// `before_event` places it among the batch's events (the index of the first event after it).
struct Annotation {
  uint32_t thread = 0;
  uint64_t timestamp_ns = 0;
  std::string key;
  int64_t value = 0;
  uint32_t before_event = 0;
  friend bool operator==(const Annotation&, const Annotation&) = default;
};

// A wait for ring space the runtime imposed on the thread (lossless recording): see
// stream.capnp's TracerWait.
struct TracerWait {
  uint32_t before_event = 0;
  uint64_t start_ns = 0;
  uint64_t duration_ns = 0;
  friend bool operator==(const TracerWait&, const TracerWait&) = default;
};

// The runtime stopped recording a function (SHAPETRACE_THROTTLE): see stream.capnp's Throttle.
struct Throttle {
  uint32_t before_event = 0;
  uint64_t timestamp_ns = 0;
  uint32_t function = 0;
  uint64_t short_calls = 0;
  friend bool operator==(const Throttle&, const Throttle&) = default;
};

// One argument or return value (stream.capnp's CallValue); a type a newer writer added is read
// as Unsigned (its bits shown as they are).
enum class ValueType : uint8_t { Signed, Unsigned, Pointer, Float, String };
// What a String value's text holds (stream.capnp's TextState).
enum class TextState : uint8_t { Complete, Truncated, Unreadable, Redacted };
// The most text a reader accepts in one value (a longer one is malformed): the runtime's hard
// maximum for SHAPETRACE_VALUE_TEXT_MAX.
inline constexpr size_t kMaxValueText = 4096;
struct CallValue {
  uint8_t position = 0; // N of argN; 0 for the return value
  ValueType type = ValueType::Signed;
  uint64_t bits = 0;
  std::string text{};             // String: the bytes read at the address `bits`
  TextState text_state{};         // String: what `text` holds
  friend bool operator==(const CallValue&, const CallValue&) = default;
};
// The chosen arguments (after the enter event) or the return value (before the exit event) of the
// innermost open call, whose function is `function_id`: stream.capnp's CallValues.
struct CallValues {
  uint32_t before_event = 0;
  uint32_t function_id = 0;
  std::vector<CallValue> values;
  // The return value (position 0) or arguments: the runtime never mixes them in one.
  bool returned() const { return !values.empty() && values.front().position == 0; }
  friend bool operator==(const CallValues&, const CallValues&) = default;
};

struct EventBatch {
  uint32_t thread = 0;
  uint64_t sequence = 0;
  std::vector<Event> events; // timestamps in nanoseconds
  std::vector<Annotation> annotations; // in order, each before_event <= events.size()
  std::vector<TracerWait> tracer_waits; // in order, each before_event <= events.size()
  std::vector<Throttle> throttles{}; // in order, each before_event <= events.size()
  std::vector<CallValues> call_values{}; // in order, each before_event <= events.size()
  friend bool operator==(const EventBatch&, const EventBatch&) = default;
};

inline constexpr uint64_t kNoSequence = UINT64_MAX;

struct Gap {
  uint32_t thread = 0;
  uint64_t dropped = 0;
  uint64_t after_sequence = kNoSequence;
  uint64_t from_ns = 0;
  uint64_t to_ns = 0;
  friend bool operator==(const Gap&, const Gap&) = default;
};

struct ProcessEnd {
  uint64_t timestamp_ns = 0;
  uint64_t events_recorded = 0;
  uint64_t events_dropped = 0;
  int32_t exit_status = 0;
  EndReason reason = EndReason::Exit;
  std::string exec_path;
  bool written_by_collector = false; // for a process that died without warning (stream.capnp)
  // Per function throttled (SHAPETRACE_THROTTLE), the calls not recorded: (function id, calls).
  std::vector<std::pair<uint32_t, uint64_t>> throttled_calls{};
  friend bool operator==(const ProcessEnd&, const ProcessEnd&) = default;
};

struct ExecFailed {
  uint64_t timestamp_ns = 0;
  std::string path;
  int32_t error = 0;
  friend bool operator==(const ExecFailed&, const ExecFailed&) = default;
};

struct ExitStatus {
  uint32_t pid = 0;
  uint64_t timestamp_ns = 0;
  int32_t exit_code = -1;
  int32_t signal = 0;
  bool core_dumped = false;
  friend bool operator==(const ExitStatus&, const ExitStatus&) = default;
};

// "exit status 3", "killed by signal 9 (SIGKILL)", "killed by signal 11 (SIGSEGV), core dumped".
std::string describeExitStatus(const ExitStatus& status);

// A value as uftrace shows one: "-3", "4096", "0x7ffd1234", "2.5" (a double, shortest exact form).
// A string value: `"text"` (after a cut `"text"...`), `null`, `<unreadable 0xADDR>` or
// `<redacted>`; other values as their type says.
std::string describeValue(const CallValue& value);
// `text` in double quotes: UTF-8 as it is, `"` and `\` escaped, other bytes and control
// characters as \xNN (\n and \t as such), the C1 controls and the bidirectional overrides and
// isolates as \uNNNN (a terminal acts on them instead of showing them).
std::string quoteText(std::string_view text);
// A call's values: "arg1=3 arg2=2.5" for arguments, "= 42" for a return value.
std::string describeCallValues(const CallValues& values);
// The value as a double, for analyses (a pointer's address, an integer as its number).
double valueAsDouble(const CallValue& value);
const char* valueTypeName(ValueType type);

using ItemBody = std::variant<ProcessStart, ModuleTable, ThreadStart, ThreadName, ThreadEnd,
                              EventBatch, Gap, Annotation, ProcessEnd, ExecFailed, ExitStatus>;

// The kinds in ItemBody order, for counters and switch statements over a peeked item.
enum class ItemKind : uint8_t {
  ProcessStart,
  ModuleTable,
  ThreadStart,
  ThreadName,
  ThreadEnd,
  EventBatch,
  Gap,
  Annotation,
  ProcessEnd,
  ExecFailed,
  ExitStatus,
};
inline constexpr size_t kItemKindCount = std::variant_size_v<ItemBody>;
const char* itemKindName(ItemKind kind);

struct StreamItem {
  uint64_t process = 0;
  ItemBody body;

  ItemKind kind() const { return static_cast<ItemKind>(body.index()); }
  friend bool operator==(const StreamItem&, const StreamItem&) = default;
};

} // namespace shapetrace::wire
