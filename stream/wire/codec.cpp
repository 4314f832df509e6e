#include "wire/codec.h"

#include "schema/stream.capnp.h"
#include "wire/event_codec.h"
#include "wire/format_error.h"
#include "wire/utf8.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <bit>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string.h> // sigabbrev_np
#include <kj/exception.h>

namespace shapetrace::wire {
namespace s = schema;

namespace {

// ---- encoding --------------------------------------------------------------------------------

inline kj::StringPtr text(const std::string& s) { return kj::StringPtr(s.c_str(), s.size()); }

s::ClockSource encodeClockSource(ClockSource source) {
  switch (source) {
  case ClockSource::Tsc: return s::ClockSource::TSC;
  case ClockSource::GenericTimer: return s::ClockSource::GENERIC_TIMER;
  case ClockSource::Monotonic: break;
  }
  return s::ClockSource::MONOTONIC;
}

// A source this reader does not know (a newer writer's) is read as monotonic: timestamps on the
// wire are nanoseconds whatever the source, only the record of how they were made is lost.
ClockSource decodeClockSource(s::ClockSource source) {
  switch (source) {
  case s::ClockSource::TSC: return ClockSource::Tsc;
  case s::ClockSource::GENERIC_TIMER: return ClockSource::GenericTimer;
  default: return ClockSource::Monotonic;
  }
}

Bytes toBytes(capnp::MessageBuilder& message) {
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  kj::ArrayPtr<const kj::byte> bytes = words.asBytes();
  Bytes out(bytes.size());
  std::memcpy(out.data(), bytes.begin(), bytes.size());
  return out;
}

void fill(s::ProcessStart::Builder b, const ProcessStart& v) {
  b.setPid(v.pid);
  b.setParentPid(v.parent_pid);
  b.setParentProcess(v.parent_process);
  b.setExecutable(text(v.executable));
  auto args = b.initArguments(static_cast<unsigned>(v.arguments.size()));
  for (unsigned i = 0; i < args.size(); ++i)
    args.set(i, text(v.arguments[i]));
  b.setHostname(text(v.hostname));
  b.setStartNs(v.start_ns);
  b.setStartRealtimeNs(v.start_realtime_ns);
  auto clock = b.initClock();
  clock.setSource(encodeClockSource(v.clock.source));
  clock.setTicksPerNs(v.clock.ticks_per_ns);
  clock.setRefTicks(v.clock.ref_ticks);
  clock.setRefNs(v.clock.ref_ns);
  auto config = b.initConfig(static_cast<unsigned>(v.config.size()));
  for (unsigned i = 0; i < config.size(); ++i) {
    config[i].setName(text(v.config[i].name));
    config[i].setValue(text(v.config[i].value));
  }
  b.setOrigin(static_cast<s::ProcessOrigin>(v.origin));
  b.setPreviousImage(v.previous_image);
}

void fill(s::ModuleTable::Builder b, const ModuleTable& v) {
  b.setModuleId(text(v.module_id));
  b.setBaseId(v.base_id);
  auto functions = b.initFunctions(static_cast<unsigned>(v.functions.size()));
  for (unsigned i = 0; i < functions.size(); ++i) {
    const FunctionInfo& f = v.functions[i];
    functions[i].setId(f.id);
    functions[i].setMangledName(text(f.mangled_name));
    functions[i].setDemangledName(text(f.demangled_name));
    functions[i].setSourceFile(text(f.source_file));
    functions[i].setLine(f.line);
    functions[i].setExcluded(static_cast<s::Exclusion>(f.excluded));
  }
}

void fill(s::ThreadStart::Builder b, const ThreadStart& v) {
  b.setThread(v.thread);
  b.setTimestampNs(v.timestamp_ns);
  b.setName(text(v.name));
}

void fill(s::ThreadName::Builder b, const ThreadName& v) {
  b.setThread(v.thread);
  b.setTimestampNs(v.timestamp_ns);
  b.setName(text(v.name));
}

void fill(s::ThreadEnd::Builder b, const ThreadEnd& v) {
  b.setThread(v.thread);
  b.setTimestampNs(v.timestamp_ns);
  b.setEventsRecorded(v.events_recorded);
  b.setEventsDropped(v.events_dropped);
  b.setBatches(v.batches);
}

void fill(s::Annotation::Builder b, const Annotation& v) {
  b.setThread(v.thread);
  b.setTimestampNs(v.timestamp_ns);
  b.setKey(text(v.key));
  b.setValue(v.value);
  b.setBeforeEvent(v.before_event);
}

void fill(s::TracerWait::Builder b, const TracerWait& v) {
  b.setBeforeEvent(v.before_event);
  b.setStartNs(v.start_ns);
  b.setDurationNs(v.duration_ns);
}

void fill(s::Throttle::Builder b, const Throttle& v) {
  b.setBeforeEvent(v.before_event);
  b.setTimestampNs(v.timestamp_ns);
  b.setFunction(v.function);
  b.setShortCalls(v.short_calls);
}

void fill(s::CallValues::Builder b, const CallValues& v) {
  b.setBeforeEvent(v.before_event);
  b.setFunctionId(v.function_id);
  auto values = b.initValues(unsigned(v.values.size()));
  for (unsigned i = 0; i < v.values.size(); ++i) {
    values[i].setPosition(v.values[i].position);
    values[i].setType(static_cast<s::ValueType>(v.values[i].type));
    values[i].setBits(v.values[i].bits);
    if (v.values[i].type == ValueType::String) {
      const std::string& text = v.values[i].text;
      values[i].setText(kj::arrayPtr(reinterpret_cast<const kj::byte*>(text.data()), text.size()));
      values[i].setTextState(static_cast<s::TextState>(v.values[i].text_state));
    }
  }
}

template <typename Builder, typename T> void fillList(Builder list, std::span<const T> values) {
  for (size_t i = 0; i < values.size(); ++i)
    fill(list[unsigned(i)], values[i]);
}

void fillBatch(s::EventBatch::Builder b, uint32_t thread, uint64_t sequence,
               const EventEncoder& events, BatchMarks marks) {
  b.setThread(thread);
  b.setSequence(sequence);
  b.setCount(static_cast<uint32_t>(events.count()));
  b.setBaseNs(events.base());
  b.setEncoding(s::EventEncoding::DELTA_VARINT);
  b.setEvents(kj::arrayPtr(events.bytes().data(), events.bytes().size()));
  if (!marks.annotations.empty())
    fillList(b.initAnnotations(unsigned(marks.annotations.size())), marks.annotations);
  if (!marks.tracer_waits.empty())
    fillList(b.initTracerWaits(unsigned(marks.tracer_waits.size())), marks.tracer_waits);
  if (!marks.throttles.empty())
    fillList(b.initThrottles(unsigned(marks.throttles.size())), marks.throttles);
  if (!marks.call_values.empty())
    fillList(b.initCallValues(unsigned(marks.call_values.size())), marks.call_values);
}

void fillBatch(s::EventBatch::Builder b, uint32_t thread, uint64_t sequence,
               std::span<const Event> events, BatchMarks marks = {}) {
  // One encoder per thread: whoever encodes many batches should not allocate each time.
  thread_local EventEncoder encoder;
  encoder.start(events.size());
  for (const Event& e : events)
    encoder.append(e.timestamp, e.function_id, e.kind);
  fillBatch(b, thread, sequence, encoder, marks);
}

void fill(s::Gap::Builder b, const Gap& v) {
  b.setThread(v.thread);
  b.setDropped(v.dropped);
  b.setAfterSequence(v.after_sequence);
  b.setFromNs(v.from_ns);
  b.setToNs(v.to_ns);
}

void fill(s::ProcessEnd::Builder b, const ProcessEnd& v) {
  b.setTimestampNs(v.timestamp_ns);
  b.setEventsRecorded(v.events_recorded);
  b.setEventsDropped(v.events_dropped);
  b.setExitStatus(v.exit_status);
  b.setReason(static_cast<s::EndReason>(v.reason));
  b.setExecPath(text(v.exec_path));
  b.setWrittenByCollector(v.written_by_collector);
  if (!v.throttled_calls.empty()) {
    auto list = b.initThrottledCalls(unsigned(v.throttled_calls.size()));
    for (unsigned i = 0; i < list.size(); ++i) {
      list[i].setFunction(v.throttled_calls[i].first);
      list[i].setCalls(v.throttled_calls[i].second);
    }
  }
}

void fill(s::ExecFailed::Builder b, const ExecFailed& v) {
  b.setTimestampNs(v.timestamp_ns);
  b.setPath(text(v.path));
  b.setError(v.error);
}

void fill(s::ExitStatus::Builder b, const ExitStatus& v) {
  b.setPid(v.pid);
  b.setTimestampNs(v.timestamp_ns);
  b.setExitCode(v.exit_code);
  b.setSignal(v.signal);
  b.setCoreDumped(v.core_dumped);
}

s::StreamItem::Builder initRoot(capnp::MessageBuilder& message, uint64_t process) {
  auto root = message.initRoot<s::StreamItem>();
  root.setVersion(kFormatVersion);
  root.setProcess(process);
  return root;
}

// ---- decoding --------------------------------------------------------------------------------

inline std::string str(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }

ProcessStart read(s::ProcessStart::Reader r) {
  ProcessStart v;
  v.pid = r.getPid();
  v.parent_pid = r.getParentPid();
  v.parent_process = r.getParentProcess();
  v.executable = str(r.getExecutable());
  for (auto a : r.getArguments())
    v.arguments.push_back(str(a));
  v.hostname = str(r.getHostname());
  v.start_ns = r.getStartNs();
  v.start_realtime_ns = r.getStartRealtimeNs();
  auto clock = r.getClock();
  v.clock.source = decodeClockSource(clock.getSource());
  v.clock.ticks_per_ns = clock.getTicksPerNs();
  // A rate that converts nothing (NaN, infinite, zero, negative) comes from damage or a forgery;
  // NaN would also make the item unequal to itself.
  if (!std::isfinite(v.clock.ticks_per_ns) || v.clock.ticks_per_ns <= 0)
    throw FormatError(FormatErrorReason::BadValue, "process start with a clock of " +
                                                       std::to_string(v.clock.ticks_per_ns) +
                                                       " ticks per nanosecond");
  v.clock.ref_ticks = clock.getRefTicks();
  v.clock.ref_ns = clock.getRefNs();
  for (auto c : r.getConfig())
    v.config.push_back({str(c.getName()), str(c.getValue())});
  // An origin this reader does not know (a newer writer's) is read as a plain start.
  const auto origin = static_cast<uint16_t>(r.getOrigin());
  v.origin = origin <= static_cast<uint16_t>(ProcessOrigin::ExecFailed) ? ProcessOrigin(origin)
                                                                         : ProcessOrigin::Started;
  v.previous_image = r.getPreviousImage();
  return v;
}

// An Exclusion this reader does not know reads as none (stream.capnp).
Exclusion exclusion(s::Exclusion e) {
  switch (e) {
  case s::Exclusion::BY_RULE: return Exclusion::kByRule;
  case s::Exclusion::BY_SIZE: return Exclusion::kBySize;
  default: return Exclusion::kNone;
  }
}

ModuleTable read(s::ModuleTable::Reader r) {
  ModuleTable v;
  v.module_id = str(r.getModuleId());
  v.base_id = r.getBaseId();
  auto functions = r.getFunctions();
  v.functions.reserve(functions.size());
  for (auto f : functions)
    v.functions.push_back({f.getId(), str(f.getMangledName()), str(f.getDemangledName()),
                           str(f.getSourceFile()), f.getLine(), exclusion(f.getExcluded())});
  return v;
}

ThreadStart read(s::ThreadStart::Reader r) {
  return {r.getThread(), r.getTimestampNs(), str(r.getName())};
}
ThreadName read(s::ThreadName::Reader r) {
  return {r.getThread(), r.getTimestampNs(), str(r.getName())};
}
ThreadEnd read(s::ThreadEnd::Reader r) {
  return {r.getThread(), r.getTimestampNs(), r.getEventsRecorded(), r.getEventsDropped(),
          r.getBatches()};
}
Gap read(s::Gap::Reader r) {
  return {r.getThread(), r.getDropped(), r.getAfterSequence(), r.getFromNs(), r.getToNs()};
}
Annotation read(s::Annotation::Reader r) {
  return {r.getThread(), r.getTimestampNs(), str(r.getKey()), r.getValue(), r.getBeforeEvent()};
}
TracerWait read(s::TracerWait::Reader r) {
  return {r.getBeforeEvent(), r.getStartNs(), r.getDurationNs()};
}
Throttle read(s::Throttle::Reader r) {
  return {r.getBeforeEvent(), r.getTimestampNs(), r.getFunction(), r.getShortCalls()};
}

// A string value's text, bounded by kMaxValueText (the message carried its bytes; what the runtime
// never writes is refused rather than kept).
void readText(s::CallValue::Reader r, CallValue& value) {
  const auto text = r.getText();
  if (text.size() > kMaxValueText)
    throw FormatError(FormatErrorReason::Oversized,
                      "a string value of " + std::to_string(text.size()) + " bytes (at most " +
                          std::to_string(kMaxValueText) + ")");
  value.text.assign(reinterpret_cast<const char*>(text.begin()), text.size());
  const auto state = static_cast<uint16_t>(r.getTextState());
  // A state this reader does not know (a newer writer's): the text is not known to be whole.
  value.text_state = state <= static_cast<uint16_t>(TextState::Redacted) ? TextState(state)
                                                                          : TextState::Truncated;
}

CallValues read(s::CallValues::Reader r) {
  CallValues v{r.getBeforeEvent(), r.getFunctionId(), {}};
  const auto values = r.getValues();
  // Sized by the message, which carried at least 8 bytes per value.
  v.values.reserve(values.size());
  for (const auto value : values) {
    const auto type = static_cast<uint16_t>(value.getType());
    CallValue& read = v.values.emplace_back();
    read.position = value.getPosition();
    read.type = type <= static_cast<uint16_t>(ValueType::String) ? ValueType(type)
                                                                 : ValueType::Unsigned;
    read.bits = value.getBits();
    if (read.type == ValueType::String)
      readText(value, read);
  }
  return v;
}
ProcessEnd read(s::ProcessEnd::Reader r) {
  ProcessEnd v;
  v.timestamp_ns = r.getTimestampNs();
  v.events_recorded = r.getEventsRecorded();
  v.events_dropped = r.getEventsDropped();
  v.exit_status = r.getExitStatus();
  // A reason this reader does not know (a newer writer's) is read as an ordinary exit.
  const auto reason = static_cast<uint16_t>(r.getReason());
  v.reason = reason <= static_cast<uint16_t>(EndReason::Signal) ? EndReason(reason)
                                                               : EndReason::Exit;
  v.exec_path = str(r.getExecPath());
  v.written_by_collector = r.getWrittenByCollector();
  for (const auto entry : r.getThrottledCalls())
    v.throttled_calls.emplace_back(entry.getFunction(), entry.getCalls());
  return v;
}
ExecFailed read(s::ExecFailed::Reader r) {
  return {r.getTimestampNs(), str(r.getPath()), r.getError()};
}
ExitStatus read(s::ExitStatus::Reader r) {
  return {r.getPid(), r.getTimestampNs(), r.getExitCode(), r.getSignal(), r.getCoreDumped()};
}

// Checks the batch header and returns its event bytes; shared by decodeItem and peekItem.
std::span<const uint8_t> checkedBatchBytes(s::EventBatch::Reader r) {
  if (r.getEncoding() != s::EventEncoding::DELTA_VARINT)
    throw FormatError(FormatErrorReason::UnknownItem, "unknown event encoding " +
                                                          std::to_string(int(r.getEncoding())));
  if (r.getCount() > kMaxBatchEvents)
    throw FormatError(FormatErrorReason::Oversized,
                      "batch declares " + std::to_string(r.getCount()) + " events (limit " +
                          std::to_string(kMaxBatchEvents) + ")");
  auto data = r.getEvents();
  std::span<const uint8_t> bytes(data.begin(), data.size());
  // Each event takes between 2 and kMaxEncodedEventBytes bytes.
  if (bytes.size() < size_t{r.getCount()} * 2 ||
      bytes.size() > size_t{r.getCount()} * kMaxEncodedEventBytes)
    throw FormatError(FormatErrorReason::BadEvents,
                      std::to_string(bytes.size()) + " event bytes cannot hold " +
                          std::to_string(r.getCount()) + " events");
  return bytes;
}

// A batch's marks, each placed at or before the end of its events and in order.
template <typename List, typename T>
void readMarks(List list, uint32_t event_count, std::vector<T>& out) {
  out.reserve(list.size());
  for (const auto entry : list) {
    T mark = read(entry);
    if (mark.before_event > event_count ||
        (!out.empty() && mark.before_event < out.back().before_event))
      throw FormatError(FormatErrorReason::BadValue,
                        "a batch mark placed before event " + std::to_string(mark.before_event) +
                            " of " + std::to_string(event_count) + ", out of place");
    out.push_back(std::move(mark));
  }
}

EventBatch read(s::EventBatch::Reader r) {
  EventBatch v;
  v.thread = r.getThread();
  v.sequence = r.getSequence();
  // Validate the declared count before reserving for it: it comes from the sender.
  const std::span<const uint8_t> bytes = checkedBatchBytes(r);
  v.events.reserve(r.getCount());
  decodeEvents(bytes, r.getCount(), r.getBaseNs(), v.events);
  readMarks(r.getAnnotations(), r.getCount(), v.annotations);
  readMarks(r.getTracerWaits(), r.getCount(), v.tracer_waits);
  readMarks(r.getThrottles(), r.getCount(), v.throttles);
  readMarks(r.getCallValues(), r.getCount(), v.call_values);
  return v;
}

// Runs `body` on the validated root of `message`, translating every Cap'n Proto failure.
template <typename Body>
auto withRoot(std::span<const std::byte> message, Body&& body) {
  if (message.size() > kMaxMessageBytes)
    throw FormatError(FormatErrorReason::Oversized,
                      "message of " + std::to_string(message.size()) + " bytes (limit " +
                          std::to_string(kMaxMessageBytes) + ")");
  if (message.size() < sizeof(capnp::word) || message.size() % sizeof(capnp::word) != 0)
    throw FormatError(FormatErrorReason::Truncated,
                      "message of " + std::to_string(message.size()) +
                          " bytes is not a whole number of 8-byte words");
  // Cap'n Proto reads words in place; copy only when the transport handed us unaligned bytes.
  kj::Array<capnp::word> aligned;
  const capnp::word* words = reinterpret_cast<const capnp::word*>(message.data());
  size_t wordCount = message.size() / sizeof(capnp::word);
  if (reinterpret_cast<uintptr_t>(message.data()) % alignof(capnp::word) != 0) {
    aligned = kj::heapArray<capnp::word>(wordCount);
    std::memcpy(aligned.begin(), message.data(), message.size());
    words = aligned.begin();
  }
  capnp::ReaderOptions limits;
  // A valid message is traversed about once; a limit proportional to its size stops a small
  // message from declaring millions of zero-sized list elements that each decode into a value
  // (found by the decoder fuzzer: 200 bytes decoding into a 3.5 million entry function table).
  limits.traversalLimitInWords = std::min<uint64_t>(kMaxMessageBytes / sizeof(capnp::word),
                                                    4 * uint64_t{wordCount} + 64);
  limits.nestingLimit = 16;
  try {
    capnp::FlatArrayMessageReader reader(kj::arrayPtr(words, wordCount), limits);
    if (reader.getEnd() != words + wordCount)
      throw FormatError(FormatErrorReason::Malformed, "bytes follow the end of the message");
    auto root = reader.getRoot<s::StreamItem>();
    if (root.getVersion() != kFormatVersion)
      throw FormatError(FormatErrorReason::UnsupportedVersion,
                        "format version " + std::to_string(root.getVersion()) +
                            " (this reader understands " + std::to_string(kFormatVersion) + ")");
    return body(root);
  } catch (const kj::Exception& e) {
    // kj reports a short message as "...; Message ends prematurely ...".
    bool truncated = std::strstr(e.getDescription().cStr(), "ends prematurely") != nullptr;
    throw FormatError(truncated ? FormatErrorReason::Truncated : FormatErrorReason::Malformed,
                      e.getDescription().cStr());
  }
}

[[noreturn]] void unknownItem(s::StreamItem::Reader root) {
  throw FormatError(FormatErrorReason::UnknownItem,
                    "item kind " + std::to_string(static_cast<int>(root.which())));
}

} // namespace

Bytes encodeItem(const StreamItem& item) {
  capnp::MallocMessageBuilder message;
  auto root = initRoot(message, item.process);
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, ProcessStart>)
          fill(root.initProcessStart(), body);
        else if constexpr (std::is_same_v<T, ModuleTable>)
          fill(root.initModuleTable(), body);
        else if constexpr (std::is_same_v<T, ThreadStart>)
          fill(root.initThreadStart(), body);
        else if constexpr (std::is_same_v<T, ThreadName>)
          fill(root.initThreadName(), body);
        else if constexpr (std::is_same_v<T, ThreadEnd>)
          fill(root.initThreadEnd(), body);
        else if constexpr (std::is_same_v<T, EventBatch>)
          fillBatch(root.initEventBatch(), body.thread, body.sequence, body.events,
                    {body.annotations, body.tracer_waits, body.throttles, body.call_values});
        else if constexpr (std::is_same_v<T, Gap>)
          fill(root.initGap(), body);
        else if constexpr (std::is_same_v<T, Annotation>)
          fill(root.initAnnotation(), body);
        else if constexpr (std::is_same_v<T, ProcessEnd>)
          fill(root.initProcessEnd(), body);
        else if constexpr (std::is_same_v<T, ExecFailed>)
          fill(root.initExecFailed(), body);
        else
          fill(root.initExitStatus(), body);
      },
      item.body);
  return toBytes(message);
}

Bytes encodeEventBatch(uint64_t process, uint32_t thread, uint64_t sequence,
                       std::span<const Event> events) {
  // Size the first segment for the whole batch so the message is one segment and one allocation.
  unsigned words = static_cast<unsigned>(events.size() * kMaxEncodedEventBytes / 8 + 32);
  capnp::MallocMessageBuilder message(words);
  fillBatch(initRoot(message, process).initEventBatch(), thread, sequence, events);
  return toBytes(message);
}

Bytes encodeEventBatch(uint64_t process, uint32_t thread, uint64_t sequence,
                       const EventEncoder& events, BatchMarks marks) {
  unsigned words = static_cast<unsigned>(events.bytes().size() / 8 + 32 +
                                         marks.annotations.size() * 8 +
                                         marks.tracer_waits.size() * 4 +
                                         marks.throttles.size() * 5 +
                                         marks.call_values.size() * 8);
  capnp::MallocMessageBuilder message(words);
  fillBatch(initRoot(message, process).initEventBatch(), thread, sequence, events, marks);
  return toBytes(message);
}

StreamItem decodeItem(std::span<const std::byte> message) {
  return withRoot(message, [](s::StreamItem::Reader root) {
    StreamItem item;
    item.process = root.getProcess();
    switch (root.which()) {
    case s::StreamItem::PROCESS_START: item.body = read(root.getProcessStart()); break;
    case s::StreamItem::MODULE_TABLE: item.body = read(root.getModuleTable()); break;
    case s::StreamItem::THREAD_START: item.body = read(root.getThreadStart()); break;
    case s::StreamItem::THREAD_NAME: item.body = read(root.getThreadName()); break;
    case s::StreamItem::THREAD_END: item.body = read(root.getThreadEnd()); break;
    case s::StreamItem::EVENT_BATCH: item.body = read(root.getEventBatch()); break;
    case s::StreamItem::GAP: item.body = read(root.getGap()); break;
    case s::StreamItem::ANNOTATION: item.body = read(root.getAnnotation()); break;
    case s::StreamItem::PROCESS_END: item.body = read(root.getProcessEnd()); break;
    case s::StreamItem::EXEC_FAILED: item.body = read(root.getExecFailed()); break;
    case s::StreamItem::EXIT_STATUS: item.body = read(root.getExitStatus()); break;
    default: unknownItem(root);
    }
    return item;
  });
}

ItemHeader peekItem(std::span<const std::byte> message) {
  return withRoot(message, [](s::StreamItem::Reader root) {
    ItemHeader h;
    h.process = root.getProcess();
    switch (root.which()) {
    case s::StreamItem::PROCESS_START:
      h.kind = ItemKind::ProcessStart;
      h.first_ns = root.getProcessStart().getStartNs();
      break;
    case s::StreamItem::MODULE_TABLE: h.kind = ItemKind::ModuleTable; break;
    case s::StreamItem::THREAD_START:
      h.kind = ItemKind::ThreadStart;
      h.thread = root.getThreadStart().getThread();
      h.first_ns = root.getThreadStart().getTimestampNs();
      break;
    case s::StreamItem::THREAD_NAME:
      h.kind = ItemKind::ThreadName;
      h.thread = root.getThreadName().getThread();
      h.first_ns = root.getThreadName().getTimestampNs();
      break;
    case s::StreamItem::THREAD_END:
      h.kind = ItemKind::ThreadEnd;
      h.thread = root.getThreadEnd().getThread();
      h.first_ns = root.getThreadEnd().getTimestampNs();
      break;
    case s::StreamItem::EVENT_BATCH: {
      auto batch = root.getEventBatch();
      checkedBatchBytes(batch);
      h.kind = ItemKind::EventBatch;
      h.thread = batch.getThread();
      h.sequence = batch.getSequence();
      h.event_count = batch.getCount();
      h.first_ns = batch.getBaseNs();
      break;
    }
    case s::StreamItem::GAP:
      h.kind = ItemKind::Gap;
      h.thread = root.getGap().getThread();
      h.first_ns = root.getGap().getFromNs();
      break;
    case s::StreamItem::ANNOTATION:
      h.kind = ItemKind::Annotation;
      h.thread = root.getAnnotation().getThread();
      h.first_ns = root.getAnnotation().getTimestampNs();
      break;
    case s::StreamItem::PROCESS_END:
      h.kind = ItemKind::ProcessEnd;
      h.first_ns = root.getProcessEnd().getTimestampNs();
      break;
    case s::StreamItem::EXEC_FAILED:
      h.kind = ItemKind::ExecFailed;
      h.first_ns = root.getExecFailed().getTimestampNs();
      break;
    case s::StreamItem::EXIT_STATUS:
      h.kind = ItemKind::ExitStatus;
      h.first_ns = root.getExitStatus().getTimestampNs();
      break;
    default: unknownItem(root);
    }
    return h;
  });
}

const char* itemKindName(ItemKind kind) {
  static constexpr const char* kNames[] = {"process_start", "module_table", "thread_start",
                                           "thread_name",   "thread_end",   "event_batch",
                                           "gap",           "annotation",   "process_end",
                                           "exec_failed",   "exit_status"};
  static_assert(std::size(kNames) == kItemKindCount);
  return kNames[static_cast<size_t>(kind)];
}

const char* exclusionName(Exclusion exclusion) {
  switch (exclusion) {
  case Exclusion::kByRule: return "rule";
  case Exclusion::kBySize: return "size";
  case Exclusion::kNone: break;
  }
  return "";
}

const char* processOriginName(ProcessOrigin origin) {
  switch (origin) {
  case ProcessOrigin::Started: return "started";
  case ProcessOrigin::Forked: return "forked";
  case ProcessOrigin::Exec: return "exec";
  case ProcessOrigin::ExecFailed: return "exec_failed";
  }
  return "?";
}

std::string describeExitStatus(const ExitStatus& status) {
  if (status.signal == 0)
    return "exit status " + std::to_string(status.exit_code);
  const char* name = sigabbrev_np(status.signal);
  return "killed by signal " + std::to_string(status.signal) +
         (name ? std::string(" (SIG") + name + ")" : std::string()) +
         (status.core_dumped ? ", core dumped" : "");
}

namespace {

// The code point of the well-formed UTF-8 sequence of `length` bytes at the start of `text`.
uint32_t codePoint(std::string_view text, size_t length) {
  static constexpr unsigned char kLeadBits[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
  uint32_t point = static_cast<unsigned char>(text[0]) & kLeadBits[length];
  for (size_t i = 1; i < length; ++i)
    point = point << 6 | (static_cast<unsigned char>(text[i]) & 0x3f);
  return point;
}

// Characters a terminal or an editor acts on instead of showing: the C1 controls (U+009B starts an
// escape sequence on some terminals) and the bidirectional overrides and isolates, which reorder
// what is shown around them.
bool actsOnDisplay(uint32_t point) {
  return (point >= 0x80 && point <= 0x9f) || point == 0x061c || point == 0x200e ||
         point == 0x200f || (point >= 0x202a && point <= 0x202e) ||
         (point >= 0x2066 && point <= 0x2069);
}

} // namespace

std::string quoteText(std::string_view text) {
  std::string out = "\"";
  while (!text.empty()) {
    const unsigned char byte = static_cast<unsigned char>(text.front());
    const size_t length = utf8SequenceLength(text);
    const uint32_t point = length > 1 ? codePoint(text, length) : byte;
    if (byte == '"' || byte == '\\') {
      out += '\\';
      out += char(byte);
    } else if (byte == '\n') {
      out += "\\n";
    } else if (byte == '\t') {
      out += "\\t";
    } else if (length == 0 || byte < 0x20 || byte == 0x7f) {
      // Not UTF-8, or a control character: its byte in hex.
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", byte);
      out += hex;
    } else if (actsOnDisplay(point)) {
      char escaped[12];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", point);
      out += escaped;
      text.remove_prefix(length);
      continue;
    } else {
      out.append(text.substr(0, length));
      text.remove_prefix(length);
      continue;
    }
    text.remove_prefix(1);
  }
  return out + '"';
}

namespace {

// A string value as uftrace's replay shows one: "text", cut ones followed by "...".
std::string describeString(const CallValue& value) {
  char address[48];
  switch (value.text_state) {
  case TextState::Complete:
    return value.bits == 0 ? std::string("null") : quoteText(value.text);
  case TextState::Truncated:
    return quoteText(value.text) + "...";
  case TextState::Unreadable:
    std::snprintf(address, sizeof address, "<unreadable 0x%" PRIx64 ">", value.bits);
    return value.text.empty() ? std::string(address) : quoteText(value.text) + "..." + address;
  case TextState::Redacted:
    return "<redacted>";
  }
  return "?";
}

} // namespace

std::string describeValue(const CallValue& value) {
  char text[32];
  switch (value.type) {
  case ValueType::String:
    return describeString(value);
  case ValueType::Signed:
    return std::to_string(int64_t(value.bits));
  case ValueType::Unsigned:
    return std::to_string(value.bits);
  case ValueType::Pointer:
    std::snprintf(text, sizeof text, "0x%" PRIx64, value.bits);
    return text;
  case ValueType::Float: {
    const auto [end, error] = std::to_chars(text, text + sizeof text, std::bit_cast<double>(value.bits));
    return error == std::errc() ? std::string(text, end) : std::string("?");
  }
  }
  return "?";
}

std::string describeCallValues(const CallValues& values) {
  std::string text;
  for (const CallValue& value : values.values) {
    if (!text.empty())
      text += ' ';
    text += value.position == 0 ? "= " : "arg" + std::to_string(value.position) + "=";
    text += describeValue(value);
  }
  return text;
}

double valueAsDouble(const CallValue& value) {
  switch (value.type) {
  case ValueType::Signed:
    return double(int64_t(value.bits));
  case ValueType::Float:
    return std::bit_cast<double>(value.bits);
  case ValueType::Unsigned:
  case ValueType::Pointer:
  case ValueType::String: // its address: a string has no number (explain refuses it)
    break;
  }
  return double(value.bits);
}

const char* valueTypeName(ValueType type) {
  switch (type) {
  case ValueType::Signed: return "signed";
  case ValueType::Unsigned: return "unsigned";
  case ValueType::Pointer: return "pointer";
  case ValueType::Float: return "float";
  case ValueType::String: return "string";
  }
  return "?";
}

const char* endReasonName(EndReason reason) {
  switch (reason) {
  case EndReason::Exit: return "exit";
  case EndReason::Exec: return "exec";
  case EndReason::ExitImmediately: return "_exit";
  case EndReason::Signal: return "signal";
  }
  return "?";
}

} // namespace shapetrace::wire
