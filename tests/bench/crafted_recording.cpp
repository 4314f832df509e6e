// Writes the crafted recordings of docs/security.md ("Hostile input costs what it says"), whose
// cost a reader must keep to what their bytes say, for measuring peak memory with /usr/bin/time -v:
//
//   crafted_recording function-id THREADS DIR   (THREADS threads, each one call of function
//                                                2^24-1 under a call of function 1)
//   crafted_recording module-id PROCESSES DIR   (PROCESSES processes whose module table names
//                                                `serve` with id 0xFFFFFFF0, each with one thread
//                                                calling function 1)
//   crafted_recording short-threads THREADS DIR (one process of THREADS threads one after the
//                                                other, each started, one call of `serve` under
//                                                `main` (4 events) and ended: a thread-per-request
//                                                service)
//   crafted_recording short-processes PROCESSES DIR (PROCESSES processes one after the other,
//                                                each started, its module table, one thread of
//                                                the same call, ended: a process per request)
//
// then, for example, `shapetrace analyze DIR` or `shapetrace explain DIR --function serve --input
// size`. Not a test: it makes no assertion.
#include "recording/recording.h"
#include "wire/codec.h"
#include "wire/items.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace shapetrace;

namespace {

std::vector<Event> callOf(uint32_t outer, uint32_t inner) {
  return {Event{1000, outer, EventKind::Enter}, Event{1010, inner, EventKind::Enter},
          Event{1020, inner, EventKind::Exit}, Event{1030, outer, EventKind::Exit}};
}

} // namespace

// Threads that each start, make one call and end, in turn, each at its own time.
void shortThreads(uint32_t count, recording::RecordingWriter& writer) {
  auto append = [&](const wire::StreamItem& item) { writer.append(wire::encodeItem(item)); };
  append({1, wire::ModuleTable{"m", 0,
                               {{1, "_Z4mainv", "main()", "", 0}, {2, "_Z5servev", "serve()", "", 0}}}});
  for (uint32_t thread = 1; thread <= count; ++thread) {
    const uint64_t start = uint64_t{thread} * 1000;
    append({1, wire::ThreadStart{thread, start, "request"}});
    const std::vector<Event> events{Event{start + 10, 1, EventKind::Enter},
                                    Event{start + 20, 2, EventKind::Enter},
                                    Event{start + 20 + thread % 7, 2, EventKind::Exit},
                                    Event{start + 40, 1, EventKind::Exit}};
    append({1, wire::EventBatch{thread, 0, events, {}, {}}});
    append({1, wire::ThreadEnd{thread, start + 50, 4, 0, 1}});
  }
}

// Processes that each start, name their functions, run one short thread and end, in turn.
void shortProcesses(uint32_t count, recording::RecordingWriter& writer) {
  auto append = [&](const wire::StreamItem& item) { writer.append(wire::encodeItem(item)); };
  for (uint32_t process = 1; process <= count; ++process) {
    const uint64_t start = uint64_t{process} * 1000;
    wire::ProcessStart begin;
    begin.pid = process;
    begin.executable = "/srv/request";
    append({process, begin});
    append({process, wire::ModuleTable{"m", 0,
                                       {{1, "_Z4mainv", "main()", "", 0},
                                        {2, "_Z5servev", "serve()", "", 0}}}});
    append({process, wire::ThreadStart{1, start, "request"}});
    const std::vector<Event> events{Event{start + 10, 1, EventKind::Enter},
                                    Event{start + 20, 2, EventKind::Enter},
                                    Event{start + 20 + process % 7, 2, EventKind::Exit},
                                    Event{start + 40, 1, EventKind::Exit}};
    append({process, wire::EventBatch{1, 0, events, {}, {}}});
    append({process, wire::ThreadEnd{1, start + 50, 4, 0, 1}});
    wire::ProcessEnd end;
    end.timestamp_ns = start + 60;
    end.events_recorded = 4;
    append({process, end});
  }
}

int main(int argc, char** argv) {
  const bool known = argc == 4 && (std::strcmp(argv[1], "function-id") == 0 ||
                                   std::strcmp(argv[1], "module-id") == 0 ||
                                   std::strcmp(argv[1], "short-threads") == 0 ||
                                   std::strcmp(argv[1], "short-processes") == 0);
  if (!known) {
    std::fprintf(stderr, "usage: crafted_recording "
                         "function-id|module-id|short-threads|short-processes COUNT DIR\n");
    return 2;
  }
  const bool function_id = std::strcmp(argv[1], "function-id") == 0;
  const auto count = static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10));
  recording::RecordingWriter writer(argv[3]);
  if (std::strcmp(argv[1], "short-threads") == 0) {
    shortThreads(count, writer);
    return writer.close() ? 0 : 1;
  }
  if (std::strcmp(argv[1], "short-processes") == 0) {
    shortProcesses(count, writer);
    return writer.close() ? 0 : 1;
  }
  auto append = [&](const wire::StreamItem& item) { writer.append(wire::encodeItem(item)); };
  for (uint32_t i = 1; i <= count; ++i) {
    const uint64_t process = function_id ? 1 : i;
    const uint32_t thread = function_id ? i : 1;
    if (function_id && i == 1)
      append({process, wire::ModuleTable{"m", 0, {{1, "_Z4mainv", "main()", "", 0}}}});
    if (!function_id)
      append({process, wire::ModuleTable{"m", 0,
                                         {{1, "_Z4mainv", "main()", "", 0},
                                          {0xFFFFFFF0u, "_Z5servev", "serve()", "", 0}}}});
    const auto events = function_id ? callOf(1, (uint32_t{1} << 24) - 1) : callOf(1, 1);
    append({process, wire::EventBatch{thread, 0, events, {}, {}, {}}});
  }
  return writer.close() ? 0 : 1;
}
