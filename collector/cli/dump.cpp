// `shapetrace dump DIR`: prints a recording's items and events as text, JSON lines, or the Chrome
// Trace Event format (which the Perfetto UI and chrome://tracing open). --thread with --from seeks
// through the index instead of reading the whole recording.
#include "cli/command.h"
#include "recording/recording.h"
#include "wire/format_error.h"
#include "wire/sequence_runs.h"

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

namespace shapetrace::cli {
namespace {

struct DumpOptions {
  std::string dir;
  std::string format = "text";
  std::string thread; // --thread as given; empty: every thread
  std::optional<uint64_t> from, to;
  // The threads --thread names, as (process, thread id), resolved through the index.
  std::set<std::pair<uint64_t, uint32_t>> threads;
};

const char* kindName(EventKind kind) {
  switch (kind) {
  case EventKind::Enter:
    return "enter";
  case EventKind::Exit:
    return "exit";
  case EventKind::UnwindExit:
    return "unwind";
  case EventKind::AbandonedExit:
    return "abandoned";
  }
  return "?";
}

// The text format's arrow per kind: enter, exit, unwind exit (an exception), abandoned exit (a
// longjmp jumped over the frame).
const char* arrowOf(EventKind kind) {
  switch (kind) {
  case EventKind::Enter:
    return "->";
  case EventKind::Exit:
    return "<-";
  case EventKind::UnwindExit:
    return "<~";
  case EventKind::AbandonedExit:
    return "<x";
  }
  return "??";
}


// Names and pids learnt from ProcessStart and ModuleTable items, per process.
struct Names {
  struct Process {
    uint32_t pid = 0;
    std::unordered_map<uint32_t, std::string> functions;
  };
  std::unordered_map<uint64_t, Process> processes;

  void learn(const wire::StreamItem& item) {
    if (const auto* start = std::get_if<wire::ProcessStart>(&item.body))
      processes[item.process].pid = start->pid;
    if (const auto* table = std::get_if<wire::ModuleTable>(&item.body))
      for (const wire::FunctionInfo& f : table->functions)
        processes[item.process].functions[f.id] =
            f.demangled_name.empty() ? f.mangled_name : f.demangled_name;
  }
  // The pid, or the low 31 bits of the process key when no ProcessStart was recorded.
  uint32_t pid(uint64_t process) const {
    auto it = processes.find(process);
    return it != processes.end() && it->second.pid ? it->second.pid
                                                   : static_cast<uint32_t>(process & 0x7fffffff);
  }
  std::string function(uint64_t process, uint32_t id) const {
    auto it = processes.find(process);
    if (it != processes.end())
      if (auto f = it->second.functions.find(id); f != it->second.functions.end())
        return f->second;
    return "function#" + std::to_string(id);
  }
};

uint32_t threadOf(const wire::StreamItem& item) {
  return std::visit(
      [](const auto& body) -> uint32_t {
        if constexpr (requires { body.thread; })
          return body.thread;
        else
          return 0;
      },
      item.body);
}

// The output formats share one interface: items in recording order, filtered events.
class Sink {
public:
  virtual ~Sink() = default;
  virtual void item(const wire::StreamItem& item, const Names& names) = 0;
  virtual void finish() {}
};

// A batch's call values in order, as an output places them: beside their event (arguments right
// after their call's enter, a return value right before its exit), or loose (arguments whose enter
// ended the batch before, values in a batch without events).
class BatchValues {
public:
  explicit BatchValues(const wire::EventBatch& batch) : batch_(batch) {}
  // The values beside the event at `i`, or nullptr. Call after loose(i) has given nullptr.
  const wire::CallValues* of(size_t i) {
    if (next_ >= batch_.call_values.size())
      return nullptr;
    const wire::CallValues& values = batch_.call_values[next_];
    const Event& e = batch_.events[i];
    const bool enter = e.kind == EventKind::Enter;
    if (values.function_id != e.function_id || values.returned() == enter ||
        values.before_event != (enter ? i + 1 : i))
      return nullptr;
    ++next_;
    return &values;
  }
  // The next loose values before the event at `i` (i == the batch's size: at its end), or nullptr;
  // a return value that precedes the exit at `i` waits for of(i).
  const wire::CallValues* loose(size_t i) {
    if (next_ >= batch_.call_values.size())
      return nullptr;
    const wire::CallValues& values = batch_.call_values[next_];
    if (values.before_event > i ||
        (i < batch_.events.size() && values.before_event == i && values.returned()))
      return nullptr;
    ++next_;
    return &values;
  }

private:
  const wire::EventBatch& batch_;
  size_t next_ = 0;
};

class TextSink : public Sink {
public:
  explicit TextSink(const DumpOptions& o) : options_(o) {}
  void item(const wire::StreamItem& item, const Names& names) override {
    const uint32_t pid = names.pid(item.process);
    const uint32_t thread = threadOf(item);
    if (const auto* batch = std::get_if<wire::EventBatch>(&item.body)) {
      int& depth = depth_[{item.process, thread}];
      size_t next_annotation = 0, next_wait = 0, next_throttle = 0;
      // A call's values shown on its enter line (arguments) or exit line (return value), as
      // uftrace replay shows `serve(3, 4096)` and `= 42`; loose ones on a line of their own.
      BatchValues call_values(*batch);
      // The batch's annotations, tracer waits, throttle marks and values not shown on an event's line (those of
      // a call whose enter was in the batch before) before event `i`, each on a line of its own.
      const auto marksBefore = [&](size_t i) {
        for (; next_annotation < batch->annotations.size() &&
               batch->annotations[next_annotation].before_event <= i;
             ++next_annotation) {
          const wire::Annotation& note = batch->annotations[next_annotation];
          if (inRange(note.timestamp_ns))
            std::printf("%" PRIu64 " %u/%u %*s# %s = %" PRId64 "\n", note.timestamp_ns, pid, thread,
                        2 * depth, "", note.key.c_str(), note.value);
        }
        for (; next_wait < batch->tracer_waits.size() &&
               batch->tracer_waits[next_wait].before_event <= i;
             ++next_wait) {
          const wire::TracerWait& wait = batch->tracer_waits[next_wait];
          if (inRange(wait.start_ns))
            std::printf("%" PRIu64 " %u/%u %*s# tracer wait %" PRIu64 " ns\n", wait.start_ns, pid,
                        thread, 2 * depth, "", wait.duration_ns);
        }
        for (; next_throttle < batch->throttles.size() &&
               batch->throttles[next_throttle].before_event <= i;
             ++next_throttle) {
          const wire::Throttle& mark = batch->throttles[next_throttle];
          if (inRange(mark.timestamp_ns))
            std::printf("%" PRIu64 " %u/%u %*s# throttled %s after %" PRIu64 " short calls\n",
                        mark.timestamp_ns, pid, thread, 2 * depth, "",
                        names.function(item.process, mark.function).c_str(), mark.short_calls);
        }
        // Shown at the time of the event before them (the batch before's last event when they
        // begin the batch); a return value that precedes the exit at `i` waits for its line.
        while (const wire::CallValues* loose = call_values.loose(i)) {
          const wire::CallValues& values = *loose;
          const uint64_t at = values.before_event > 0
                                  ? batch->events[values.before_event - 1].timestamp
                                  : last_ns_[{item.process, thread}];
          if (inRange(at))
            std::printf("%" PRIu64 " %u/%u %*s# %s %s\n", at, pid, thread, 2 * depth, "",
                        names.function(item.process, values.function_id).c_str(),
                        wire::describeCallValues(values).c_str());
        }
      };
      for (size_t i = 0; i < batch->events.size(); ++i) {
        marksBefore(i);
        const Event& e = batch->events[i];
        const bool enter = e.kind == EventKind::Enter;
        if (!enter && depth > 0)
          --depth;
        const wire::CallValues* values = call_values.of(i);
        if (inRange(e.timestamp))
          std::printf("%" PRIu64 " %u/%u %*s%s %s%s%s\n", e.timestamp, pid, thread, 2 * depth, "",
                      arrowOf(e.kind), names.function(item.process, e.function_id).c_str(),
                      values ? " " : "",
                      values ? wire::describeCallValues(*values).c_str() : "");
        if (enter)
          ++depth;
      }
      marksBefore(batch->events.size());
      if (!batch->events.empty())
        last_ns_[{item.process, thread}] = batch->events.back().timestamp;
      return;
    }
    std::printf("# %u/%u %s", pid, thread, wire::itemKindName(item.kind()));
    std::visit(
        [&](const auto& body) {
          using T = std::decay_t<decltype(body)>;
          if constexpr (std::is_same_v<T, wire::ProcessStart>) {
            std::printf(" pid %u %s", body.pid, body.executable.c_str());
            if (body.origin == wire::ProcessOrigin::Forked)
              std::printf(" (forked from %016" PRIx64 ")", body.parent_process);
            else if (body.origin == wire::ProcessOrigin::Exec)
              std::printf(" (exec from %016" PRIx64 ")", body.previous_image);
            else if (body.origin == wire::ProcessOrigin::ExecFailed)
              std::printf(" (continues %016" PRIx64 ")", body.previous_image);
          }
          else if constexpr (std::is_same_v<T, wire::ModuleTable>) {
            std::printf(" %s: %zu functions", body.module_id.c_str(), body.functions.size());
            const auto excluded = std::count_if(
                body.functions.begin(), body.functions.end(),
                [](const wire::FunctionInfo& f) { return f.excluded != wire::Exclusion::kNone; });
            if (excluded > 0)
              std::printf(" (%td of them filtered out at build)", excluded);
          }
          else if constexpr (std::is_same_v<T, wire::ThreadStart> ||
                             std::is_same_v<T, wire::ThreadName>)
            std::printf(" \"%s\"", body.name.c_str());
          else if constexpr (std::is_same_v<T, wire::Gap>)
            std::printf(" %" PRIu64 " events dropped", body.dropped);
          else if constexpr (std::is_same_v<T, wire::Annotation>)
            std::printf(" %s = %" PRId64, body.key.c_str(), body.value);
          else if constexpr (std::is_same_v<T, wire::ThreadEnd>)
            std::printf(" %" PRIu64 " events, %" PRIu64 " dropped", body.events_recorded,
                        body.events_dropped);
          else if constexpr (std::is_same_v<T, wire::ProcessEnd>) {
            if (body.reason == wire::EndReason::Exec)
              std::printf(" exec %s", body.exec_path.c_str());
            else
              std::printf(" %s status %d", wire::endReasonName(body.reason), body.exit_status);
            std::printf(", %" PRIu64 " events, %" PRIu64 " dropped", body.events_recorded,
                        body.events_dropped);
            if (body.written_by_collector)
              std::printf(" (written by the collector)");
            for (const auto& [function, calls] : body.throttled_calls)
              std::printf(", %s throttled: %" PRIu64 " calls not recorded",
                          names.function(item.process, function).c_str(), calls);
          } else if constexpr (std::is_same_v<T, wire::ExecFailed>)
            std::printf(" %s: %s", body.path.c_str(), std::strerror(body.error));
          else if constexpr (std::is_same_v<T, wire::ExitStatus>)
            std::printf(" pid %u %s", body.pid, wire::describeExitStatus(body).c_str());
        },
        item.body);
    std::printf("\n");
  }

private:
  bool inRange(uint64_t t) const {
    return (!options_.from || t >= *options_.from) && (!options_.to || t <= *options_.to);
  }
  const DumpOptions& options_;
  std::map<std::pair<uint64_t, uint32_t>, int> depth_;
  // Per thread, the time of its last event: where values that begin a batch are shown.
  std::map<std::pair<uint64_t, uint32_t>, uint64_t> last_ns_;
};

class JsonSink : public Sink {
public:
  explicit JsonSink(const DumpOptions& o) : options_(o) {}
  void item(const wire::StreamItem& item, const Names& names) override {
    nlohmann::json j = {{"process", item.process},
                        {"pid", names.pid(item.process)},
                        {"kind", wire::itemKindName(item.kind())}};
    std::visit(
        [&](const auto& body) {
          using T = std::decay_t<decltype(body)>;
          if constexpr (std::is_same_v<T, wire::EventBatch>) {
            j["thread"] = body.thread;
            j["sequence"] = body.sequence;
            nlohmann::json events = nlohmann::json::array();
            for (const Event& e : body.events)
              if ((!options_.from || e.timestamp >= *options_.from) &&
                  (!options_.to || e.timestamp <= *options_.to))
                events.push_back({{"t", e.timestamp},
                                  {"f", e.function_id},
                                  {"name", names.function(item.process, e.function_id)},
                                  {"kind", kindName(e.kind)}});
            j["events"] = std::move(events);
            if (!body.annotations.empty()) {
              nlohmann::json notes = nlohmann::json::array();
              for (const wire::Annotation& note : body.annotations)
                notes.push_back({{"t", note.timestamp_ns},
                                 {"key", note.key},
                                 {"value", note.value},
                                 {"before_event", note.before_event}});
              j["annotations"] = std::move(notes);
            }
            if (!body.tracer_waits.empty()) {
              nlohmann::json waits = nlohmann::json::array();
              for (const wire::TracerWait& wait : body.tracer_waits)
                waits.push_back({{"t", wait.start_ns},
                                 {"duration_ns", wait.duration_ns},
                                 {"before_event", wait.before_event}});
              j["tracer_waits"] = std::move(waits);
            }
            if (!body.throttles.empty()) {
              nlohmann::json marks = nlohmann::json::array();
              for (const wire::Throttle& mark : body.throttles)
                marks.push_back({{"t", mark.timestamp_ns},
                                 {"f", mark.function},
                                 {"name", names.function(item.process, mark.function)},
                                 {"short_calls", mark.short_calls},
                                 {"before_event", mark.before_event}});
              j["throttles"] = std::move(marks);
            }
            if (!body.call_values.empty()) {
              nlohmann::json calls = nlohmann::json::array();
              for (const wire::CallValues& values : body.call_values) {
                nlohmann::json list = nlohmann::json::array();
                for (const wire::CallValue& value : values.values)
                  list.push_back({{"position", value.position},
                                  {"type", wire::valueTypeName(value.type)},
                                  {"text", wire::describeValue(value)}});
                calls.push_back({{"f", values.function_id},
                                 {"name", names.function(item.process, values.function_id)},
                                 {"before_event", values.before_event},
                                 {"values", std::move(list)}});
              }
              j["call_values"] = std::move(calls);
            }
          } else if constexpr (std::is_same_v<T, wire::ProcessStart>) {
            j["pid"] = body.pid;
            j["executable"] = body.executable;
            j["start_ns"] = body.start_ns;
            j["origin"] = wire::processOriginName(body.origin);
            j["parent_process"] = body.parent_process;
            j["previous_image"] = body.previous_image;
          } else if constexpr (std::is_same_v<T, wire::ModuleTable>) {
            j["module"] = body.module_id;
            nlohmann::json functions = nlohmann::json::array();
            for (const auto& f : body.functions) {
              nlohmann::json function = {{"id", f.id}, {"name", f.mangled_name},
                                         {"demangled", f.demangled_name}, {"file", f.source_file},
                                         {"line", f.line}};
              if (f.excluded != wire::Exclusion::kNone)
                function["excluded"] = wire::exclusionName(f.excluded);
              functions.push_back(std::move(function));
            }
            j["functions"] = std::move(functions);
          } else if constexpr (std::is_same_v<T, wire::ThreadStart> ||
                               std::is_same_v<T, wire::ThreadName>) {
            j["thread"] = body.thread;
            j["t"] = body.timestamp_ns;
            j["name"] = body.name;
          } else if constexpr (std::is_same_v<T, wire::ThreadEnd>) {
            j["thread"] = body.thread;
            j["t"] = body.timestamp_ns;
            j["events_recorded"] = body.events_recorded;
            j["events_dropped"] = body.events_dropped;
            j["batches"] = body.batches;
          } else if constexpr (std::is_same_v<T, wire::Gap>) {
            j["thread"] = body.thread;
            j["dropped"] = body.dropped;
            j["from_ns"] = body.from_ns;
            j["to_ns"] = body.to_ns;
          } else if constexpr (std::is_same_v<T, wire::Annotation>) {
            j["thread"] = body.thread;
            j["t"] = body.timestamp_ns;
            j["key"] = body.key;
            j["value"] = body.value;
          } else if constexpr (std::is_same_v<T, wire::ProcessEnd>) {
            j["t"] = body.timestamp_ns;
            j["reason"] = wire::endReasonName(body.reason);
            j["exit_status"] = body.exit_status;
            if (body.reason == wire::EndReason::Exec)
              j["exec_path"] = body.exec_path;
            j["events_recorded"] = body.events_recorded;
            j["events_dropped"] = body.events_dropped;
            if (body.written_by_collector)
              j["written_by_collector"] = true;
            if (!body.throttled_calls.empty()) {
              nlohmann::json throttled = nlohmann::json::array();
              for (const auto& [function, calls] : body.throttled_calls)
                throttled.push_back({{"f", function},
                                     {"name", names.function(item.process, function)},
                                     {"calls_not_recorded", calls}});
              j["throttled_calls"] = std::move(throttled);
            }
          } else if constexpr (std::is_same_v<T, wire::ExecFailed>) {
            j["t"] = body.timestamp_ns;
            j["path"] = body.path;
            j["errno"] = body.error;
          } else if constexpr (std::is_same_v<T, wire::ExitStatus>) {
            j["pid"] = body.pid;
            j["t"] = body.timestamp_ns;
            j["exit_code"] = body.exit_code;
            j["signal"] = body.signal;
            j["core_dumped"] = body.core_dumped;
          }
        },
        item.body);
    std::printf("%s\n", j.dump().c_str());
  }

private:
  const DumpOptions& options_;
};

// Chrome Trace Event format: {"traceEvents": [...]} with B/E duration events (ts in microseconds;
// E without its name, as the format allows) and process_name/thread_name metadata. Written as it
// goes, one event per line.
class ChromeSink : public Sink {
public:
  explicit ChromeSink(const DumpOptions& o) : options_(o) {
    std::printf("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  }
  void item(const wire::StreamItem& item, const Names& names) override {
    const uint32_t pid = names.pid(item.process);
    if (const auto* start = std::get_if<wire::ProcessStart>(&item.body)) {
      emit("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid) +
           ",\"args\":{\"name\":" + nlohmann::json(start->executable).dump() + "}}");
    } else if (const auto* thread = std::get_if<wire::ThreadStart>(&item.body)) {
      threadName(pid, thread->thread, thread->name);
    } else if (const auto* renamed = std::get_if<wire::ThreadName>(&item.body)) {
      threadName(pid, renamed->thread, renamed->name);
    } else if (const auto* batch = std::get_if<wire::EventBatch>(&item.body)) {
      BatchValues call_values(*batch);
      uint64_t& last_ns = last_ns_[{item.process, batch->thread}];
      for (size_t i = 0; i <= batch->events.size(); ++i) {
        while (const wire::CallValues* loose = call_values.loose(i))
          looseValues(pid, batch->thread, i > 0 ? batch->events[i - 1].timestamp : last_ns,
                      names.function(item.process, loose->function_id), *loose);
        if (i == batch->events.size())
          break;
        const Event& e = batch->events[i];
        const wire::CallValues* values = call_values.of(i);
        if (!inRange(e.timestamp))
          continue;
        const bool enter = e.kind == EventKind::Enter;
        char head[160];
        std::snprintf(head, sizeof head,
                      "{\"ph\":\"%c\",\"pid\":%u,\"tid\":%u,\"ts\":%" PRIu64 ".%03u",
                      enter ? 'B' : 'E', pid, batch->thread, e.timestamp / 1000,
                      static_cast<unsigned>(e.timestamp % 1000));
        // An E event closes the thread's innermost open B: its name would only repeat the B's
        // (C++ names run to hundreds of bytes, and were half of the output). A call's arguments
        // are its B's args, its return value its E's (viewers merge both into the slice's).
        std::string event = head;
        if (enter)
          event += ",\"name\":" + nameJson(names, item.process, e.function_id);
        if (values)
          event += ",\"args\":" + valuesJson(*values);
        emit(event + "}");
      }
      if (!batch->events.empty())
        last_ns = batch->events.back().timestamp;
    } else if (const auto* note = std::get_if<wire::Annotation>(&item.body)) {
      annotation(pid, *note);
    }
    if (const auto* batch = std::get_if<wire::EventBatch>(&item.body)) {
      for (const wire::Annotation& note : batch->annotations)
        annotation(pid, note);
      for (const wire::TracerWait& wait : batch->tracer_waits)
        tracerWait(pid, batch->thread, wait);
    }
  }
  void finish() override { std::printf("\n]}\n"); }

private:
  void emit(const std::string& event) {
    std::printf("%s%s", first_ ? "" : ",\n", event.c_str());
    first_ = false;
  }
  void threadName(uint32_t pid, uint32_t tid, const std::string& name) {
    emit("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":" +
         nlohmann::json(name).dump() + "}}");
  }
  static std::string micros(uint64_t ns) {
    char text[32];
    std::snprintf(text, sizeof text, "%" PRIu64 ".%03u", ns / 1000, static_cast<unsigned>(ns % 1000));
    return text;
  }
  void annotation(uint32_t pid, const wire::Annotation& note) {
    emit("{\"ph\":\"i\",\"s\":\"t\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(note.thread) + ",\"ts\":" + micros(note.timestamp_ns) +
         ",\"name\":" + nlohmann::json(note.key).dump() + ",\"args\":{\"value\":" +
         std::to_string(note.value) + "}}");
  }
  // A slice of its own, named so that it cannot be mistaken for the program's.
  void tracerWait(uint32_t pid, uint32_t tid, const wire::TracerWait& wait) {
    emit("{\"ph\":\"X\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
         ",\"ts\":" + micros(wait.start_ns) + ",\"dur\":" + micros(wait.duration_ns) +
         ",\"name\":\"shapetrace: tracer wait\",\"cat\":\"shapetrace\"}");
  }
  bool inRange(uint64_t ns) const {
    return !(options_.from && ns < *options_.from) && !(options_.to && ns > *options_.to);
  }
  // {"arg1":-3,"arg2":2.5} or {"retval":-7}: integers and finite doubles as JSON numbers when a
  // double holds them exactly (viewers read numbers as doubles), anything else (a pointer, a
  // larger integer, a NaN) as the string dump's text shows.
  static std::string valuesJson(const wire::CallValues& values) {
    std::string out = "{";
    for (const wire::CallValue& value : values.values) {
      if (out.size() > 1)
        out += ',';
      out += value.position == 0 ? "\"retval\":" : "\"arg" + std::to_string(value.position) + "\":";
      const std::string text = wire::describeValue(value);
      out += exactAsJsonNumber(value) ? text : nlohmann::json(text).dump();
    }
    return out + "}";
  }
  static bool exactAsJsonNumber(const wire::CallValue& value) {
    constexpr uint64_t kExact = uint64_t{1} << 53;
    switch (value.type) {
    case wire::ValueType::Signed: {
      const auto v = static_cast<int64_t>(value.bits);
      return v >= -static_cast<int64_t>(kExact) && v <= static_cast<int64_t>(kExact);
    }
    case wire::ValueType::Unsigned: return value.bits <= kExact;
    case wire::ValueType::Float: return std::isfinite(std::bit_cast<double>(value.bits));
    case wire::ValueType::Pointer:
    case wire::ValueType::String: break;
    }
    return false;
  }
  // Values whose event is not in their batch (arguments whose enter ended the batch before): an
  // instant event at the time of the event before them, named after their function.
  void looseValues(uint32_t pid, uint32_t tid, uint64_t at, const std::string& function,
                   const wire::CallValues& values) {
    if (!inRange(at))
      return;
    emit("{\"ph\":\"i\",\"s\":\"t\",\"pid\":" + std::to_string(pid) + ",\"tid\":" +
         std::to_string(tid) + ",\"ts\":" + micros(at) + ",\"name\":" +
         nlohmann::json("shapetrace: values of " + function).dump() +
         ",\"cat\":\"shapetrace\",\"args\":" + valuesJson(values) + "}");
  }
  // Function names are escaped once per function, not once per event.
  const std::string& nameJson(const Names& names, uint64_t process, uint32_t id) {
    auto [it, inserted] = escaped_.try_emplace({process, id});
    if (inserted)
      it->second = nlohmann::json(names.function(process, id)).dump();
    return it->second;
  }
  const DumpOptions& options_;
  bool first_ = true;
  std::map<std::pair<uint64_t, uint32_t>, std::string> escaped_;
  // Per thread, the time of its last event: where loose values that begin a batch are placed.
  std::map<std::pair<uint64_t, uint32_t>, uint64_t> last_ns_;
};

bool wanted(const wire::StreamItem& item, const DumpOptions& o) {
  if (o.thread.empty())
    return true;
  const uint32_t thread = threadOf(item);
  return thread == 0 || o.threads.contains({item.process, thread}); // process-level items always
}

// The threads `selector` names, as export and summarize read --thread: a thread id (in every
// process), PROCESS:ID, or a thread's name (any name a ThreadStart or ThreadName gave it). Found
// through the index, reading only the threads' start and name items. Throws, listing the
// recording's threads, when none matches.
std::set<std::pair<uint64_t, uint32_t>> selectThreads(recording::RecordingReader& reader,
                                                       const std::string& selector) {
  std::map<std::pair<uint64_t, uint32_t>, std::set<std::string>> names; // every thread with items
  for (uint32_t position = 0; position < reader.segmentCount(); ++position) {
    const uint32_t s = reader.segmentNumber(position);
    for (const recording::IndexRecord& r : reader.index(s)) {
      if (r.thread == 0)
        continue;
      auto& of_thread = names[{r.process, r.thread}];
      if (r.kind != static_cast<uint8_t>(wire::ItemKind::ThreadStart) &&
          r.kind != static_cast<uint8_t>(wire::ItemKind::ThreadName))
        continue;
      if (auto frame = reader.readAt(s, r.offset)) {
        try {
          const wire::StreamItem item = wire::decodeItem(frame->message);
          if (const auto* start = std::get_if<wire::ThreadStart>(&item.body))
            of_thread.insert(start->name);
          if (const auto* renamed = std::get_if<wire::ThreadName>(&item.body))
            of_thread.insert(renamed->name);
        } catch (const wire::FormatError&) {
        }
      }
    }
  }
  std::set<std::pair<uint64_t, uint32_t>> out;
  std::string known;
  for (const auto& [key, thread_names] : names) {
    const std::string id = std::to_string(key.second);
    if (selector == id || selector == std::to_string(key.first) + ":" + id ||
        thread_names.contains(selector))
      out.insert(key);
    known += (known.empty() ? "" : ", ") + id;
    for (const std::string& name : thread_names)
      if (!name.empty())
        known += " (" + name + ")";
  }
  if (out.empty())
    throw std::runtime_error("no thread '" + selector + "' in the recording (threads: " +
                             (known.empty() ? "none" : known) + ")");
  return out;
}

// What a thread's batches say of the recording, as `info` tells it: batches received twice (shown
// once) and a tail its ThreadEnd's count says was sent but is not there.
class BatchCheck {
public:
  // False for a batch received already: not shown again.
  bool take(const wire::StreamItem& item) {
    if (const auto* batch = std::get_if<wire::EventBatch>(&item.body)) {
      Thread& t = threads_[{item.process, batch->thread}];
      if (batch->sequence == wire::kNoSequence) return true;
      if (!t.received.insert(batch->sequence)) {
        ++t.repeated;
        return false;
      }
      t.next = std::max(t.next, batch->sequence + 1);
    } else if (const auto* end = std::get_if<wire::ThreadEnd>(&item.body)) {
      threads_[{item.process, end->thread}].sent = end->batches;
    }
    return true;
  }
  void warn() const {
    for (const auto& [key, t] : threads_) {
      if (t.repeated)
        std::fprintf(stderr,
                     "shapetrace dump: process %016llx thread %u: %llu batches received again (a "
                     "duplicated frame or segment); shown once\n",
                     (unsigned long long)key.first, key.second, (unsigned long long)t.repeated);
      if (t.next > 0 && t.sent > t.next)
        std::fprintf(stderr,
                     "shapetrace dump: process %016llx thread %u: %llu batches lost at its end "
                     "(its end says %llu were sent)\n",
                     (unsigned long long)key.first, key.second,
                     (unsigned long long)(t.sent - t.next), (unsigned long long)t.sent);
    }
  }

private:
  struct Thread {
    wire::SequenceRuns received;
    uint64_t repeated = 0, next = 0, sent = 0;
  };
  std::map<std::pair<uint64_t, uint32_t>, Thread> threads_;
};

// Whole recording, in order.
void dumpAll(recording::RecordingReader& reader, const DumpOptions& o, Sink& sink) {
  Names names;
  BatchCheck check;
  while (auto item = reader.nextItem()) {
    names.learn(*item);
    if (check.take(*item) && wanted(*item, o))
      sink.item(*item, names);
  }
  check.warn();
}

// --thread with --from: process-level items and the threads' items from the covering batch on,
// found through the index.
void dumpSeeking(recording::RecordingReader& reader, const DumpOptions& o, Sink& sink) {
  Names names;
  for (uint32_t position = 0; position < reader.segmentCount(); ++position) {
    const uint32_t s = reader.segmentNumber(position);
    for (const recording::IndexRecord& r : reader.index(s)) {
      if (r.thread != 0)
        continue;
      if (auto frame = reader.readAt(s, r.offset)) {
        try {
          const wire::StreamItem item = wire::decodeItem(frame->message);
          names.learn(item);
          sink.item(item, names);
        } catch (const wire::FormatError&) {
        }
      }
    }
  }
  BatchCheck check;
  for (const auto& [process, thread] : o.threads) {
    if (!reader.seek(process, thread, *o.from))
      continue;
    while (auto item = reader.nextItem()) {
      if (item->process != process || threadOf(*item) != thread)
        continue;
      const auto* batch = std::get_if<wire::EventBatch>(&item->body);
      if (o.to && batch && !batch->events.empty() && batch->events.front().timestamp > *o.to)
        break; // a thread's batches are in time order: nothing later is in range
      if (check.take(*item))
        sink.item(*item, names);
    }
  }
  check.warn();
}

int runDump(DumpOptions& o) {
  if (o.from && o.to && *o.from > *o.to)
    throw std::runtime_error("--from is after --to");
  recording::RecordingReader reader(o.dir, recording::RecordingReader::Pages::kReleaseBehind);
  if (!o.thread.empty())
    o.threads = selectThreads(reader, o.thread);
  std::unique_ptr<Sink> sink;
  if (o.format == "text")
    sink = std::make_unique<TextSink>(o);
  else if (o.format == "json")
    sink = std::make_unique<JsonSink>(o);
  else
    sink = std::make_unique<ChromeSink>(o);
  if (!o.thread.empty() && o.from)
    dumpSeeking(reader, o, *sink);
  else
    dumpAll(reader, o, *sink);
  sink->finish();
  for (const recording::Damage& d : reader.damage()) {
    if (d.kind == recording::Damage::Kind::Lost) {
      std::fprintf(stderr, "shapetrace dump: %s\n", recording::describeDamage(d).c_str());
      continue;
    }
    std::fprintf(stderr, "shapetrace dump: %s in segment %u at bytes %llu..%llu\n",
                 recording::damageKindName(d.kind), d.segment, (unsigned long long)d.offset,
                 (unsigned long long)(d.offset + d.length));
  }
  return 0;
}

Runner setupDump(CLI::App& command) {
  auto o = std::make_shared<DumpOptions>();
  command.add_option("dir", o->dir, "recording directory")->required();
  command.add_option("--format,-f", o->format,
                     "text (one line per event), json (one object per item and line) or chrome "
                     "(Trace Event JSON for the Perfetto UI)")
      ->check(CLI::IsMember({"text", "json", "chrome"}));
  command.add_option("--thread,-t", o->thread,
                     "only this thread: its id, PROCESS:ID, or its name (every thread of that "
                     "name); process-level items stay");
  command.add_option("--from", o->from, "only events at or after this time (ns)");
  command.add_option("--to", o->to, "only events at or before this time (ns)");
  return [o] { return runDump(*o); };
}

const Registration dump{"dump", "Print a recording as text, JSON or Chrome trace events",
                        setupDump};

} // namespace
} // namespace shapetrace::cli
