// `shapetrace info DIR`: what a recording holds (processes, threads, functions, events, drops,
// time span) and what is wrong with it (torn tails, corrupt ranges, missing batches), read in one
// pass over every frame. It also checks the segments against what the collector says it recorded
// (DIR/collector.json) and against the index files, so that a segment cut short or emptied after
// the fact is reported with what it lost, not read as a clean, smaller recording.
#include "cli/command.h"
#include "recording/recording.h"
#include "wire/event_codec.h"
#include "wire/framing.h"
#include "wire/sequence_runs.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

namespace shapetrace::cli {
namespace {

struct ThreadInfo {
  std::string name;
  uint64_t events = 0, batches = 0, dropped_gaps = 0, dropped_reported = 0, missing_batches = 0;
  uint64_t deleted_events = 0, deleted_batches = 0; // by the collector's retention
  uint64_t next_sequence = 0;
  uint64_t repeated_batches = 0; // received again (a duplicated frame or segment): counted once
  uint64_t batches_sent = 0;     // its ThreadEnd's count (0: unknown)
  wire::SequenceRuns received;
  uint64_t first_ns = UINT64_MAX, last_ns = 0;
  uint64_t tracer_waits = 0, tracer_wait_ns = 0; // waits for ring space (lossless recording)
  bool ended = false;
};

struct ProcessInfo {
  uint32_t pid = 0;
  std::string executable;
  bool started = false; // its ProcessStart was recorded
  wire::ProcessOrigin origin = wire::ProcessOrigin::Started;
  uint64_t parent_process = 0, previous_image = 0;
  uint64_t functions = 0, modules = 0, annotations = 0;
  std::optional<wire::ProcessEnd> end;
  std::optional<wire::ExecFailed> failed_exec; // why a process of origin execFailed exists
  std::optional<wire::ExitStatus> reaped; // as `shapetrace record` saw it end
  std::map<uint32_t, ThreadInfo> threads;
};

struct RecordingInfo {
  uint32_t segments = 0;
  std::vector<uint32_t> segment_numbers;
  std::optional<recording::RetentionStats> retention;
  uint64_t bytes = 0, frames = 0;
  std::map<uint64_t, ProcessInfo> processes;
  std::vector<uint64_t> order; // process keys in the order they first appear
  std::vector<wire::ExitStatus> untraced; // processes `record` reaped that never connected
  std::vector<recording::Damage> damage;
  uint64_t undecodable = 0;
  // Checks against collector.json and the index files: one sentence per problem, and what the
  // collector recorded that the segments no longer hold (when collector.json says).
  std::vector<std::string> problems;
  uint64_t missing_items = 0, missing_events = 0;
};

uint64_t totalEvents(const RecordingInfo& info) {
  uint64_t events = 0;
  for (const auto& [key, p] : info.processes)
    for (const auto& [tid, t] : p.threads)
      events += t.events;
  return events;
}

// Segment files against their index files, and the whole against collector.json.
void checkCompleteness(const std::string& dir, RecordingInfo& info) {
  for (const uint32_t number : info.segment_numbers) {
    const std::string segment = recording::segmentPath(dir, number);
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(segment, ec);
    if (size < wire::kFileHeaderBytes)
      info.problems.push_back("segment " + std::to_string(number) + " holds no data (" +
                              std::to_string(size) + " bytes)");
    std::ifstream index(recording::indexPath(dir, number), std::ios::binary);
    recording::IndexRecord record;
    uint64_t past_end = 0;
    while (index.read(reinterpret_cast<char*>(&record), sizeof record))
      past_end += record.offset + wire::kFrameHeaderBytes > size;
    if (past_end)
      info.problems.push_back("the index of segment " + std::to_string(number) + " lists " +
                              std::to_string(past_end) + " item(s) past its end (the segment is " +
                              std::to_string(size) + " bytes): it was cut short");
  }
  for (const auto& d : info.damage)
    if (d.kind == recording::Damage::Kind::Lost)
      info.problems.push_back(recording::describeDamage(d));
  for (const auto& d : info.damage)
    if (d.kind == recording::Damage::Kind::UnsupportedVersion)
      info.problems.push_back("segment " + std::to_string(d.segment) + ": unsupported version " +
                              std::to_string(d.version) + " (this reader understands version " +
                              std::to_string(wire::kRecordingFormatVersion) + "); not read");
  std::ifstream file(dir + "/collector.json");
  if (!file)
    return;
  const auto stats = nlohmann::json::parse(file, nullptr, false);
  if (stats.is_discarded()) {
    info.problems.push_back("collector.json is not valid JSON: cannot tell what was recorded");
    return;
  }
  // Retention replaced the deleted segments' batches (and damaged frames) by a gap per thread.
  const recording::RetentionStats deleted = info.retention.value_or(recording::RetentionStats{});
  const uint64_t written = stats.value("recorded_items", uint64_t(0)) + deleted.gap_items;
  const uint64_t recorded = written - std::min(written, deleted.batches + deleted.undecodable);
  const uint64_t held = info.frames + info.undecodable;
  if (recorded > held) {
    info.missing_items = recorded - held;
    info.problems.push_back("collector.json says " + std::to_string(recorded) +
                            " items were recorded (less what retention deleted); the segments "
                            "hold " +
                            std::to_string(held) +
                            ": " + std::to_string(info.missing_items) + " items missing");
  }
  // Events: exact only when every accepted message was recorded.
  uint64_t events = 0, unrecorded = 0;
  for (const auto& sender : stats.value("senders", nlohmann::json::array())) {
    events += sender.value("events", uint64_t(0));
    unrecorded += sender.value("unrecorded", uint64_t(0));
  }
  events -= std::min(events, deleted.events);
  const uint64_t have = totalEvents(info);
  if (unrecorded == 0 && events > have) {
    info.missing_events = events - have;
    info.problems.push_back("collector.json says " + std::to_string(events) +
                            " events were recorded (less what retention deleted); the segments "
                            "hold " +
                            std::to_string(have) +
                            ": " + std::to_string(info.missing_events) + " events missing");
  }
}

// What each thread's batches say of the recording: batches received twice (counted once), and a
// tail its ThreadEnd's count says was sent but that is not there.
void checkThreads(RecordingInfo& info) {
  for (const uint64_t key : info.order)
    for (const auto& [tid, t] : info.processes.at(key).threads) {
      char thread[64];
      std::snprintf(thread, sizeof thread, "process %016llx thread %u: ", (unsigned long long)key,
                    tid);
      if (t.repeated_batches)
        info.problems.push_back(thread + std::to_string(t.repeated_batches) +
                                " batches received again (a duplicated frame or segment); "
                                "counted once");
      if (t.batches_sent > t.next_sequence && (t.batches || t.deleted_batches))
        info.problems.push_back(thread + std::to_string(t.batches_sent - t.next_sequence) +
                                " batches lost at its end (its end says " +
                                std::to_string(t.batches_sent) + " were sent)");
    }
}

void account(ProcessInfo& p, const wire::StreamItem& item) {
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, wire::ProcessStart>) {
          p.pid = body.pid;
          p.executable = body.executable;
          p.started = true;
          p.origin = body.origin;
          p.parent_process = body.parent_process;
          p.previous_image = body.previous_image;
        } else if constexpr (std::is_same_v<T, wire::ModuleTable>) {
          ++p.modules;
          p.functions += body.functions.size();
        } else if constexpr (std::is_same_v<T, wire::ThreadStart> ||
                             std::is_same_v<T, wire::ThreadName>) {
          p.threads[body.thread].name = body.name;
        } else if constexpr (std::is_same_v<T, wire::ThreadEnd>) {
          ThreadInfo& t = p.threads[body.thread];
          t.ended = true;
          t.dropped_reported = body.events_dropped;
          t.batches_sent = body.batches;
        } else if constexpr (std::is_same_v<T, wire::EventBatch>) {
          ThreadInfo& t = p.threads[body.thread];
          if (body.sequence != wire::kNoSequence && !t.received.insert(body.sequence)) {
            ++t.repeated_batches; // read once
            return;
          }
          if (body.sequence > t.next_sequence)
            t.missing_batches += body.sequence - t.next_sequence;
          t.next_sequence = std::max(t.next_sequence, body.sequence + 1);
          ++t.batches;
          t.events += body.events.size();
          p.annotations += body.annotations.size();
          t.tracer_waits += body.tracer_waits.size();
          for (const wire::TracerWait& wait : body.tracer_waits)
            t.tracer_wait_ns += wait.duration_ns;
          if (!body.events.empty()) {
            t.first_ns = std::min(t.first_ns, body.events.front().timestamp);
            t.last_ns = std::max(t.last_ns, body.events.back().timestamp);
          }
        } else if constexpr (std::is_same_v<T, wire::Gap>) {
          ThreadInfo& t = p.threads[body.thread];
          t.dropped_gaps += body.dropped;
          // The batches up to the gap's are accounted for by it (retention's gap follows them).
          if (body.after_sequence != wire::kNoSequence)
            t.next_sequence = std::max(t.next_sequence, body.after_sequence + 1);
        } else if constexpr (std::is_same_v<T, wire::Annotation>) {
          ++p.annotations;
        } else if constexpr (std::is_same_v<T, wire::ProcessEnd>) {
          p.end = body;
        } else if constexpr (std::is_same_v<T, wire::ExecFailed>) {
          p.failed_exec = body;
        } else if constexpr (std::is_same_v<T, wire::ExitStatus>) {
          p.reaped = body;
          if (p.pid == 0) p.pid = body.pid;
        }
      },
      item.body);
}

RecordingInfo readInfo(const std::string& dir) {
  RecordingInfo info;
  recording::RecordingReader reader(dir, recording::RecordingReader::Pages::kReleaseBehind);
  info.segments = reader.segmentCount();
  info.retention = reader.retention();
  for (uint32_t position = 0; position < reader.segmentCount(); ++position) {
    info.segment_numbers.push_back(reader.segmentNumber(position));
    info.bytes +=
        std::filesystem::file_size(recording::segmentPath(dir, info.segment_numbers.back()));
  }
  while (auto item = reader.nextItem()) {
    ++info.frames;
    if (item->process == 0 && item->kind() == wire::ItemKind::ExitStatus) {
      info.untraced.push_back(std::get<wire::ExitStatus>(item->body));
      continue;
    }
    if (!info.processes.count(item->process))
      info.order.push_back(item->process);
    account(info.processes[item->process], *item);
  }
  info.damage = reader.damage();
  info.undecodable = reader.undecodable();
  if (info.retention)
    for (const auto& [key, deleted] : info.retention->threads) {
      ThreadInfo& t = info.processes[key.first].threads[key.second];
      t.deleted_events = deleted.events;
      t.deleted_batches = deleted.batches;
    }
  checkCompleteness(dir, info);
  checkThreads(info);
  return info;
}

// Dropped by the runtime: its gap markers or its own count at the thread's end, without the gap
// that stands for what retention deleted.
uint64_t dropped(const ThreadInfo& t) {
  return std::max(t.dropped_gaps - std::min(t.dropped_gaps, t.deleted_events), t.dropped_reported);
}

// "exit status 3", "_exit status 0", "ended by exec of /bin/ls", "killed by signal 15 (SIGTERM),
// everything sent", "killed by signal 9 (SIGKILL), its rings finished by the collector", with how
// `shapetrace record` saw it die.
std::string describeEnd(const ProcessInfo& p) {
  std::string text;
  if (p.end && p.end->written_by_collector)
    text = (p.end->reason != wire::EndReason::Signal
                ? std::string(wire::endReasonName(p.end->reason)) + " status " +
                      std::to_string(p.end->exit_status)
            : p.end->exit_status == 0
                ? std::string("killed by a signal not known")
                : wire::describeExitStatus({.signal = p.end->exit_status})) +
           ", its rings finished by the collector";
  else if (p.end)
    text = p.end->reason == wire::EndReason::Exec ? "ended by exec of " + p.end->exec_path
           : p.end->reason == wire::EndReason::Signal
               ? wire::describeExitStatus({.signal = p.end->exit_status}) + ", everything sent"
               : std::string(wire::endReasonName(p.end->reason)) + " status " +
                     std::to_string(p.end->exit_status);
  else if (p.reaped)
    text = wire::describeExitStatus(*p.reaped);
  return text;
}

// The processes whose runtime never announced their end: killed, crashed, or still running when
// the recording stopped. What they had not sent is lost, and nothing says how much.
size_t processesWithoutEnd(const RecordingInfo& info) {
  size_t count = 0;
  for (const auto& [key, p] : info.processes)
    count += !p.end;
  return count;
}

std::string missingEndLine(uint64_t key, const ProcessInfo& p) {
  char head[64];
  std::snprintf(head, sizeof head, "process %016llx (pid %u", (unsigned long long)key, p.pid);
  std::string line = std::string(head) + (p.executable.empty() ? "" : ", " + p.executable) +
                     ") ended without a process end";
  if (p.reaped)
    line += " (" + wire::describeExitStatus(*p.reaped) + ", as shapetrace record saw it)";
  return line + ": the events it had not sent yet are lost, how many is unknown";
}

nlohmann::json toJson(const RecordingInfo& info) {
  nlohmann::json processes = nlohmann::json::array();
  for (const uint64_t key : info.order) {
    const ProcessInfo& p = info.processes.at(key);
    nlohmann::json threads = nlohmann::json::array();
    for (const auto& [tid, t] : p.threads)
      threads.push_back({{"tid", tid},
                         {"name", t.name},
                         {"events", t.events},
                         {"batches", t.batches},
                         {"dropped", dropped(t)},
                         {"missing_batches", t.missing_batches},
                         {"repeated_batches", t.repeated_batches},
                         {"tracer_waits", t.tracer_waits},
                         {"tracer_wait_ns", t.tracer_wait_ns},
                         {"deleted_events", t.deleted_events},
                         {"deleted_batches", t.deleted_batches},
                         {"first_ns", t.events ? t.first_ns : 0},
                         {"last_ns", t.last_ns},
                         {"ended", t.ended}});
    nlohmann::json end = nullptr;
    if (p.end) {
      end = {{"reason", wire::endReasonName(p.end->reason)},
             {"exit_status", p.end->exit_status},
             {"events_recorded", p.end->events_recorded},
             {"events_dropped", p.end->events_dropped},
             {"written_by_collector", p.end->written_by_collector}};
      if (p.end->reason == wire::EndReason::Exec) end["exec_path"] = p.end->exec_path;
    }
    nlohmann::json reaped = nullptr;
    if (p.reaped)
      reaped = {{"exit_code", p.reaped->exit_code},
                {"signal", p.reaped->signal},
                {"core_dumped", p.reaped->core_dumped},
                {"text", wire::describeExitStatus(*p.reaped)}};
    processes.push_back({{"process", key},
                         {"pid", p.pid},
                         {"executable", p.executable},
                         {"origin", wire::processOriginName(p.origin)},
                         {"parent_process", p.parent_process},
                         {"previous_image", p.previous_image},
                         {"modules", p.modules},
                         {"functions", p.functions},
                         {"annotations", p.annotations},
                         {"ended", p.end.has_value()},
                         {"end", end},
                         {"failed_exec", p.failed_exec ? nlohmann::json({{"path", p.failed_exec->path},
                                                                         {"errno", p.failed_exec->error}})
                                                       : nlohmann::json(nullptr)},
                         {"reaped", reaped},
                         {"threads", threads}});
  }
  nlohmann::json untraced = nlohmann::json::array();
  for (const wire::ExitStatus& s : info.untraced)
    untraced.push_back({{"pid", s.pid},
                        {"exit_code", s.exit_code},
                        {"signal", s.signal},
                        {"core_dumped", s.core_dumped},
                        {"text", wire::describeExitStatus(s)}});
  nlohmann::json damage = nlohmann::json::array();
  for (const auto& d : info.damage)
    damage.push_back({{"kind", recording::damageKindName(d.kind)},
                      {"segment", d.segment},
                      {"offset", d.offset},
                      {"length", d.length}});
  nlohmann::json retention = nullptr;
  if (info.retention)
    retention = {{"deleted_segments", info.retention->segments},
                 {"deleted_bytes", info.retention->bytes},
                 {"deleted_batches", info.retention->batches},
                 {"deleted_events", info.retention->events},
                 {"deleted_undecodable", info.retention->undecodable},
                 {"first_ns", info.retention->first_ns},
                 {"last_ns", info.retention->last_ns},
                 {"first_segment", info.retention->carry_segment}};
  return {{"segments", info.segments},
          {"bytes", info.bytes},
          {"retention", retention},
          {"frames", info.frames},
          {"processes", processes},
          {"processes_without_end", processesWithoutEnd(info)},
          {"untraced_processes", untraced},
          {"damage", damage},
          {"undecodable", info.undecodable},
          {"missing_items", info.missing_items},
          {"missing_events", info.missing_events},
          {"problems", info.problems}};
}

void printText(const std::string& dir, const RecordingInfo& info) {
  uint64_t events = 0, drops = 0, threads = 0, first = UINT64_MAX, last = 0;
  for (const auto& [key, p] : info.processes)
    for (const auto& [tid, t] : p.threads) {
      ++threads;
      events += t.events;
      drops += dropped(t);
      if (t.events) {
        first = std::min(first, t.first_ns);
        last = std::max(last, t.last_ns);
      }
    }
  std::printf("recording %s: %u segment(s), %.1f MB, %llu items\n", dir.c_str(), info.segments,
              static_cast<double>(info.bytes) / 1e6, (unsigned long long)info.frames);
  const size_t without_end = processesWithoutEnd(info);
  std::printf("processes %zu, threads %llu, events %llu, dropped %llu%s, time span %.6f s\n",
              info.processes.size(), (unsigned long long)threads, (unsigned long long)events,
              (unsigned long long)drops,
              without_end ? (" + an unknown number (" + std::to_string(without_end) +
                             " process(es) ended without a process end)")
                                .c_str()
                          : "",
              events ? static_cast<double>(last - first) / 1e9 : 0.0);
  if (info.retention)
    std::printf("DELETED BY RETENTION: the %llu oldest segment(s) (%.1f MB): %llu events in %llu "
                "batches of %zu thread(s), first events from %llu to %llu ns; the recording starts "
                "at segment %u, each thread with a gap for its deleted events\n",
                (unsigned long long)info.retention->segments,
                static_cast<double>(info.retention->bytes) / 1e6,
                (unsigned long long)info.retention->events,
                (unsigned long long)info.retention->batches, info.retention->threads.size(),
                (unsigned long long)info.retention->first_ns,
                (unsigned long long)info.retention->last_ns, info.retention->carry_segment);
  if (info.missing_items || info.missing_events)
    std::printf("LOST AFTER RECORDING: %llu items, %llu events (recorded by the collector, missing "
                "from the segments)\n",
                (unsigned long long)info.missing_items, (unsigned long long)info.missing_events);
  for (const uint64_t key : info.order) {
    const ProcessInfo& p = info.processes.at(key);
    std::string origin;
    char link[64];
    if (p.origin == wire::ProcessOrigin::Forked) {
      std::snprintf(link, sizeof link, " (forked by %016llx)", (unsigned long long)p.parent_process);
      origin = link;
    } else if (p.origin == wire::ProcessOrigin::Exec) {
      std::snprintf(link, sizeof link, " (exec by %016llx)", (unsigned long long)p.previous_image);
      origin = link;
    } else if (p.origin == wire::ProcessOrigin::ExecFailed) {
      std::snprintf(link, sizeof link, " (continues %016llx", (unsigned long long)p.previous_image);
      origin = std::string(link) + (p.failed_exec ? " after its exec of " + p.failed_exec->path +
                                                        " failed: " + std::strerror(p.failed_exec->error)
                                                  : std::string()) +
               ")";
    }
    std::string end = p.end ? describeEnd(p) : "NO PROCESS END";
    if (p.reaped && p.end && p.end->reason != wire::EndReason::Exec)
      end += " (reaped: " + wire::describeExitStatus(*p.reaped) + ")";
    std::printf("  process %016llx pid %u %s%s: %llu function(s) in %llu module(s), %s\n",
                (unsigned long long)key, p.pid,
                p.started ? p.executable.c_str() : "(no process start recorded)", origin.c_str(),
                (unsigned long long)p.functions, (unsigned long long)p.modules, end.c_str());
    for (const auto& [tid, t] : p.threads) {
      std::printf("    thread %u%s%s%s: %llu events in %llu batches, %llu dropped", tid,
                  t.name.empty() ? "" : " \"", t.name.c_str(), t.name.empty() ? "" : "\"",
                  (unsigned long long)t.events, (unsigned long long)t.batches,
                  (unsigned long long)dropped(t));
      if (t.deleted_events)
        std::printf(", %llu deleted by retention", (unsigned long long)t.deleted_events);
      if (t.missing_batches)
        std::printf(", %llu batches missing", (unsigned long long)t.missing_batches);
      if (t.tracer_waits)
        std::printf(", waited %.3f ms for the tracer (%llu times)",
                    static_cast<double>(t.tracer_wait_ns) / 1e6,
                    (unsigned long long)t.tracer_waits);
      if (t.events)
        std::printf(", %.6f s", static_cast<double>(t.last_ns - t.first_ns) / 1e9);
      std::printf("\n");
    }
  }
  for (const wire::ExitStatus& s : info.untraced)
    std::printf("  untraced process pid %u: %s (it never connected: not built with the plugin?)\n",
                s.pid, wire::describeExitStatus(s).c_str());
  for (const uint64_t key : info.order)
    if (const ProcessInfo& p = info.processes.at(key); !p.end) {
      const std::string line = missingEndLine(key, p);
      std::printf("PROCESS END MISSING: %s\n", line.c_str());
      std::fprintf(stderr, "shapetrace info: warning: %s\n", line.c_str());
    }
  size_t torn = 0, corrupt = 0;
  for (const auto& d : info.damage)
    if (d.kind == recording::Damage::Kind::TornTail || d.kind == recording::Damage::Kind::Corrupt)
      ++(d.kind == recording::Damage::Kind::TornTail ? torn : corrupt);
  std::printf("torn tails %zu, corrupt ranges %zu, undecodable items %llu\n", torn, corrupt,
              (unsigned long long)info.undecodable);
  for (const auto& d : info.damage)
    if (d.kind != recording::Damage::Kind::Lost) // a problem line of its own
    std::printf("  %s: segment %u, bytes %llu..%llu (%llu bytes)\n",
                recording::damageKindName(d.kind), d.segment, (unsigned long long)d.offset,
                (unsigned long long)(d.offset + d.length), (unsigned long long)d.length);
  std::ifstream collector_stats(dir + "/collector.json");
  if (collector_stats) {
    const auto stats = nlohmann::json::parse(collector_stats, nullptr, false);
    if (!stats.is_discarded() && !stats.value("recording_error", std::string()).empty())
      std::printf("the collector stopped recording early: %s\n",
                  stats["recording_error"].get<std::string>().c_str());
  }
  for (const std::string& problem : info.problems) {
    std::printf("PROBLEM: %s\n", problem.c_str());
    std::fprintf(stderr, "shapetrace info: warning: %s\n", problem.c_str());
  }
}

struct InfoOptions {
  std::string dir;
  bool json = false;
};

Runner setupInfo(CLI::App& command) {
  auto o = std::make_shared<InfoOptions>();
  command.add_option("dir", o->dir, "recording directory")->required();
  command.add_flag("--json", o->json, "print the summary as JSON");
  return [o] {
    const RecordingInfo info = readInfo(o->dir);
    if (o->json)
      std::printf("%s\n", toJson(info).dump(2).c_str());
    else
      printText(o->dir, info);
    return 0;
  };
}

const Registration info{"info", "Summarise a recording: processes, threads, events, damage",
                        setupInfo};

} // namespace
} // namespace shapetrace::cli
