// `shapetrace info DIR`: what a recording holds (processes, threads, functions, events, drops,
// time span) and what is wrong with it (torn tails, corrupt ranges, missing batches), read in one
// pass over every frame. It also checks the segments against what the collector says it recorded
// (DIR/collector.json) and against the index files, so that a segment cut short or emptied after
// the fact is reported with what it lost, not read as a clean, smaller recording.
#include "cli/command.h"
#include "recording/recording.h"
#include "wire/event_codec.h"
#include "wire/framing.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace shapetrace::cli {
namespace {

struct ThreadInfo {
  std::string name;
  uint64_t events = 0, batches = 0, dropped_gaps = 0, dropped_reported = 0, missing_batches = 0;
  uint64_t next_sequence = 0;
  uint64_t first_ns = UINT64_MAX, last_ns = 0;
  bool ended = false;
};

struct ProcessInfo {
  uint32_t pid = 0;
  std::string executable;
  uint64_t functions = 0, modules = 0, annotations = 0;
  bool ended = false;
  int32_t exit_status = 0;
  std::map<uint32_t, ThreadInfo> threads;
};

struct RecordingInfo {
  uint32_t segments = 0;
  uint64_t bytes = 0, frames = 0;
  std::map<uint64_t, ProcessInfo> processes;
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
  for (uint32_t number = 0;; ++number) {
    const std::string segment = recording::segmentPath(dir, number);
    std::error_code ec;
    if (!std::filesystem::exists(segment, ec))
      break;
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
  const uint64_t recorded = stats.value("recorded_items", uint64_t(0));
  const uint64_t held = info.frames + info.undecodable;
  if (recorded > held) {
    info.missing_items = recorded - held;
    info.problems.push_back("collector.json says " + std::to_string(recorded) +
                            " items were recorded; the segments hold " + std::to_string(held) +
                            ": " + std::to_string(info.missing_items) + " items missing");
  }
  // Events: exact only when every accepted message was recorded.
  uint64_t events = 0, unrecorded = 0;
  for (const auto& sender : stats.value("senders", nlohmann::json::array())) {
    events += sender.value("events", uint64_t(0));
    unrecorded += sender.value("unrecorded", uint64_t(0));
  }
  const uint64_t have = totalEvents(info);
  if (unrecorded == 0 && events > have) {
    info.missing_events = events - have;
    info.problems.push_back("collector.json says " + std::to_string(events) +
                            " events were recorded; the segments hold " + std::to_string(have) +
                            ": " + std::to_string(info.missing_events) + " events missing");
  }
}

void account(ProcessInfo& p, const wire::StreamItem& item) {
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, wire::ProcessStart>) {
          p.pid = body.pid;
          p.executable = body.executable;
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
        } else if constexpr (std::is_same_v<T, wire::EventBatch>) {
          ThreadInfo& t = p.threads[body.thread];
          if (body.sequence > t.next_sequence)
            t.missing_batches += body.sequence - t.next_sequence;
          t.next_sequence = std::max(t.next_sequence, body.sequence + 1);
          ++t.batches;
          t.events += body.events.size();
          if (!body.events.empty()) {
            t.first_ns = std::min(t.first_ns, body.events.front().timestamp);
            t.last_ns = std::max(t.last_ns, body.events.back().timestamp);
          }
        } else if constexpr (std::is_same_v<T, wire::Gap>) {
          p.threads[body.thread].dropped_gaps += body.dropped;
        } else if constexpr (std::is_same_v<T, wire::Annotation>) {
          ++p.annotations;
        } else if constexpr (std::is_same_v<T, wire::ProcessEnd>) {
          p.ended = true;
          p.exit_status = body.exit_status;
        }
      },
      item.body);
}

RecordingInfo readInfo(const std::string& dir) {
  RecordingInfo info;
  recording::RecordingReader reader(dir);
  info.segments = reader.segmentCount();
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".seg")
      info.bytes += entry.file_size();
  while (auto item = reader.nextItem()) {
    ++info.frames;
    account(info.processes[item->process], *item);
  }
  info.damage = reader.damage();
  info.undecodable = reader.undecodable();
  checkCompleteness(dir, info);
  return info;
}

uint64_t dropped(const ThreadInfo& t) { return std::max(t.dropped_gaps, t.dropped_reported); }

nlohmann::json toJson(const RecordingInfo& info) {
  nlohmann::json processes = nlohmann::json::array();
  for (const auto& [key, p] : info.processes) {
    nlohmann::json threads = nlohmann::json::array();
    for (const auto& [tid, t] : p.threads)
      threads.push_back({{"tid", tid},
                         {"name", t.name},
                         {"events", t.events},
                         {"batches", t.batches},
                         {"dropped", dropped(t)},
                         {"missing_batches", t.missing_batches},
                         {"first_ns", t.events ? t.first_ns : 0},
                         {"last_ns", t.last_ns},
                         {"ended", t.ended}});
    processes.push_back({{"process", key},
                         {"pid", p.pid},
                         {"executable", p.executable},
                         {"modules", p.modules},
                         {"functions", p.functions},
                         {"annotations", p.annotations},
                         {"ended", p.ended},
                         {"exit_status", p.exit_status},
                         {"threads", threads}});
  }
  nlohmann::json damage = nlohmann::json::array();
  for (const auto& d : info.damage)
    damage.push_back({{"kind", recording::damageKindName(d.kind)},
                      {"segment", d.segment},
                      {"offset", d.offset},
                      {"length", d.length}});
  return {{"segments", info.segments},
          {"bytes", info.bytes},
          {"frames", info.frames},
          {"processes", processes},
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
  std::printf("processes %zu, threads %llu, events %llu, dropped %llu, time span %.6f s\n",
              info.processes.size(), (unsigned long long)threads, (unsigned long long)events,
              (unsigned long long)drops, events ? static_cast<double>(last - first) / 1e9 : 0.0);
  if (info.missing_items || info.missing_events)
    std::printf("LOST AFTER RECORDING: %llu items, %llu events (recorded by the collector, missing "
                "from the segments)\n",
                (unsigned long long)info.missing_items, (unsigned long long)info.missing_events);
  for (const auto& [key, p] : info.processes) {
    std::printf("  process %016llx pid %u %s: %llu function(s) in %llu module(s)%s\n",
                (unsigned long long)key, p.pid,
                p.executable.empty() ? "(no process start recorded)" : p.executable.c_str(),
                (unsigned long long)p.functions, (unsigned long long)p.modules,
                p.ended ? "" : ", no process end recorded");
    for (const auto& [tid, t] : p.threads) {
      std::printf("    thread %u%s%s%s: %llu events in %llu batches, %llu dropped", tid,
                  t.name.empty() ? "" : " \"", t.name.c_str(), t.name.empty() ? "" : "\"",
                  (unsigned long long)t.events, (unsigned long long)t.batches,
                  (unsigned long long)dropped(t));
      if (t.missing_batches)
        std::printf(", %llu batches missing", (unsigned long long)t.missing_batches);
      if (t.events)
        std::printf(", %.6f s", static_cast<double>(t.last_ns - t.first_ns) / 1e9);
      std::printf("\n");
    }
  }
  size_t torn = 0, corrupt = 0;
  for (const auto& d : info.damage)
    if (d.kind != recording::Damage::Kind::UnsupportedVersion)
      ++(d.kind == recording::Damage::Kind::TornTail ? torn : corrupt);
  std::printf("torn tails %zu, corrupt ranges %zu, undecodable items %llu\n", torn, corrupt,
              (unsigned long long)info.undecodable);
  for (const auto& d : info.damage)
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
