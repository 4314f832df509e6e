// End-to-end tests of the runtime: a real traced program (tests/runtime/traced_program.cpp, linked
// with libshapetrace-rt.so) sends its stream over a real ZeroMQ socket to a PULL socket in this test,
// and every item is decoded with the production decoder. Counts are exact.
#include "trace_capture.h"

#include "recording/recording.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <sys/stat.h>
#include <unistd.h>

namespace shapetrace::test {
namespace {

using wire::StreamItem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A forked child deliberately abandons its parent's drain and sink (their threads do not exist in
// the child, so they can be neither used nor destroyed there); LeakSanitizer would report them.
const std::pair<std::string, std::string> kForkLeaksAreByDesign{"ASAN_OPTIONS", "detect_leaks=0"};

constexpr uint32_t kMain = 0, kWork = 1, kLeaf = 2, kHandler = 3, kThreadBody = 4;

// These tests check what is recorded, as `shapetrace record` runs a program: always on
// (SHAPETRACE_ENABLED=1, unless a test sets it), not attached on demand, which attach_test.cpp
// checks on its own.
std::map<std::string, std::string> envFor(const Capture& capture,
                                          std::map<std::string, std::string> extra = {}) {
  extra.emplace("SHAPETRACE_ENDPOINT", capture.endpoint());
  extra.emplace("SHAPETRACE_ENABLED", "1");
  return extra;
}

struct Traced {
  ProgramRun run;
  std::vector<StreamItem> items;
};

Traced trace(const std::vector<std::string>& args, std::map<std::string, std::string> env = {},
             int processes = 1) {
  Capture capture;
  Traced traced;
  traced.run = runProgram(TRACED_PROGRAM, args, envFor(capture, std::move(env)));
  traced.items = capture.receive(processes);
  return traced;
}

// Enter/exit pairs of `calls N` after main's enter: work, leaf, leaf exit, work exit.
std::vector<std::pair<uint32_t, EventKind>> callsPattern(long n) {
  std::vector<std::pair<uint32_t, EventKind>> out{{kMain, EventKind::Enter}};
  for (long i = 0; i < n; ++i) {
    out.push_back({kWork, EventKind::Enter});
    out.push_back({kLeaf, EventKind::Enter});
    out.push_back({kLeaf, EventKind::Exit});
    out.push_back({kWork, EventKind::Exit});
  }
  out.push_back({kMain, EventKind::Exit});
  return out;
}

std::vector<std::pair<uint32_t, EventKind>> shape(const std::vector<Event>& events) {
  std::vector<std::pair<uint32_t, EventKind>> out;
  for (const Event& event : events)
    out.push_back({event.function_id, event.kind});
  return out;
}

TEST(RuntimeIntegration, SingleThreadStreamIsCompleteAndOrdered) {
  const Traced traced = trace({"calls", "10000"});
  EXPECT_EQ(traced.run.exit_code, 3);
  EXPECT_EQ(traced.run.out, "done calls 10000\n");
  ASSERT_FALSE(traced.items.empty());

  // The process announces itself first, with its configuration, then its module table.
  const auto& first = traced.items.front();
  ASSERT_EQ(first.kind(), wire::ItemKind::ProcessStart);
  const auto& start = std::get<wire::ProcessStart>(first.body);
  EXPECT_THAT(start.executable, HasSubstr("traced_program"));
  EXPECT_THAT(start.arguments, ElementsAre(::testing::_, "calls", "10000"));
  EXPECT_GT(start.clock.ticks_per_ns, 0.0);
  const auto config_has = [&](const std::string& name) {
    return std::any_of(start.config.begin(), start.config.end(),
                       [&](const wire::ConfigEntry& entry) { return entry.name == name; });
  };
  EXPECT_TRUE(config_has("SHAPETRACE_RING"));
  EXPECT_TRUE(config_has("SHAPETRACE_ENDPOINT"));
  ASSERT_EQ(traced.items[1].kind(), wire::ItemKind::ModuleTable);
  const auto& module = std::get<wire::ModuleTable>(traced.items[1].body);
  EXPECT_EQ(module.base_id, 0u);
  EXPECT_EQ(module.module_id, "traced_program.cpp");
  ASSERT_EQ(module.functions.size(), 5u);
  EXPECT_EQ(module.functions[1].demangled_name, "work()");
  EXPECT_EQ(module.functions[1].id, 1u);

  for (const auto& item : traced.items)
    EXPECT_EQ(item.process, first.process);
  auto threads = threadsOf(traced.items);
  ASSERT_EQ(threads.size(), 1u);
  const ThreadTrace& main_thread = threads.begin()->second;
  EXPECT_THAT(main_thread.problems, ::testing::IsEmpty());
  EXPECT_EQ(shape(main_thread.events), callsPattern(10000));
  EXPECT_EQ(main_thread.dropped, 0u);
  EXPECT_TRUE(std::is_sorted(main_thread.events.begin(), main_thread.events.end(),
                             [](const Event& a, const Event& b) { return a.timestamp < b.timestamp; }));
  EXPECT_GE(main_thread.events.front().timestamp, start.start_ns);
  ASSERT_TRUE(main_thread.ended);
  EXPECT_EQ(main_thread.end.events_recorded, 40002u);
  EXPECT_EQ(main_thread.end.batches, main_thread.batches);

  ASSERT_EQ(traced.items.back().kind(), wire::ItemKind::ProcessEnd);
  const auto& end = std::get<wire::ProcessEnd>(traced.items.back().body);
  EXPECT_EQ(end.events_recorded, 40002u);
  EXPECT_EQ(end.events_dropped, 0u);
  // The status main returned, learnt before the library's destructor sent the end.
  EXPECT_EQ(end.reason, wire::EndReason::Exit);
  EXPECT_EQ(end.exit_status, 3);
  EXPECT_EQ(start.origin, wire::ProcessOrigin::Started);
}

// The runtime sends only to the collector of its host: a tcp:// endpoint (a remote collector is
// reached through a local one's --forward) is refused with the reason, and the program is unchanged.
TEST(RuntimeIntegration, ARemoteEndpointIsRefusedAndTheProgramRunsUnchanged) {
  ProgramRun run = runProgram(TRACED_PROGRAM, {"calls", "100"},
                              {{"SHAPETRACE_ENDPOINT", "tcp://127.0.0.1:1"},
                               {"SHAPETRACE_ENABLED", "1"}});
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_EQ(run.out, "done calls 100\n");
  EXPECT_THAT(run.err, HasSubstr("is not a local collector (ipc://PATH)"));
  EXPECT_THAT(run.err, HasSubstr("--forward"));
}

TEST(RuntimeIntegration, ManyThreadsStartAndExitWithExactCounts) {
  const long threads = 24, calls = 2000;
  const Traced traced =
      trace({"threads", std::to_string(threads), std::to_string(calls), "6"});
  EXPECT_EQ(traced.run.exit_code, 3);
  auto all = threadsOf(traced.items);
  ASSERT_EQ(all.size(), size_t(threads + 1));
  long workers = 0;
  for (const auto& [tid, thread] : all) {
    EXPECT_THAT(thread.problems, ::testing::IsEmpty()) << tid;
    EXPECT_TRUE(thread.ended) << tid;
    EXPECT_EQ(thread.dropped, 0u);
    if (thread.events.front().function_id == kMain)
      continue;
    ++workers;
    auto expected = callsPattern(calls);
    expected.front().first = expected.back().first = kThreadBody;
    EXPECT_EQ(shape(thread.events), expected) << tid;
    EXPECT_EQ(thread.end.events_recorded, uint64_t(4 * calls + 2));
  }
  EXPECT_EQ(workers, threads);
  const auto ends = itemsOfType<wire::ProcessEnd>(traced.items);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].events_recorded, uint64_t(threads * (4 * calls + 2) + 2));
  EXPECT_EQ(ends[0].events_dropped, 0u);
}

TEST(RuntimeIntegration, ForkedChildIsANewProcessWithOnlyItsOwnEvents) {
  const Traced traced = trace({"fork", "100"}, {kForkLeaksAreByDesign}, 2);
  EXPECT_EQ(traced.run.exit_code, 3);
  EXPECT_EQ(traced.run.out, "child 0\ndone fork 100\n");
  const auto starts = itemsOfType<wire::ProcessStart>(traced.items);
  ASSERT_EQ(starts.size(), 2u);
  uint64_t parent_key = 0, child_key = 0;
  for (const auto& item : traced.items)
    if (auto* start = std::get_if<wire::ProcessStart>(&item.body))
      (start->parent_process ? child_key : parent_key) = item.process;
  ASSERT_NE(parent_key, 0u);
  ASSERT_NE(child_key, 0u);
  ASSERT_NE(parent_key, child_key);
  const auto child_items = itemsOfProcess(traced.items, child_key);
  const auto& child_start = std::get<wire::ProcessStart>(child_items.front().body);
  EXPECT_EQ(child_start.parent_process, parent_key);
  // The child re-announces the module table before any of its batches.
  ASSERT_EQ(child_items[1].kind(), wire::ItemKind::ModuleTable);

  auto parent_threads = threadsOf(itemsOfProcess(traced.items, parent_key));
  ASSERT_EQ(parent_threads.size(), 1u);
  auto parent_expected = callsPattern(200);
  EXPECT_EQ(shape(parent_threads.begin()->second.events), parent_expected);

  // The child records only what it did after fork: main's exit belongs to the parent's call.
  auto child_threads = threadsOf(child_items);
  ASSERT_EQ(child_threads.size(), 1u);
  auto child_expected = callsPattern(100);
  child_expected.erase(child_expected.begin());
  child_expected.pop_back();
  const ThreadTrace& child_thread = child_threads.begin()->second;
  EXPECT_THAT(child_thread.problems, ::testing::IsEmpty());
  EXPECT_EQ(shape(child_thread.events), child_expected);
  EXPECT_EQ(std::get<wire::ProcessEnd>(child_items.back().body).events_dropped, 0u);
}

// A collector killed with -9 leaves its socket file: nobody listens there, so nobody is waited for,
// even in lossless mode with a ring that fills at once. The program runs to its end, unchanged,
// and says what it could not send.
TEST(RuntimeIntegration, AStaleSocketMakesNoLosslessProgramWait) {
  char directory[] = "/tmp/shapetrace-stale-XXXXXX";
  ASSERT_NE(mkdtemp(directory), nullptr);
  const std::string path = std::string(directory) + "/collector.sock";
  { // a socket bound and closed without unlinking: as a killed collector's
    const int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    close(fd);
  }
  const ProgramRun run = runProgram(TRACED_PROGRAM, {"calls", "100000"},
                                    {{"SHAPETRACE_ENDPOINT", "ipc://" + path},
                                     {"SHAPETRACE_ENABLED", "1"},
                                     {"SHAPETRACE_BLOCKING", "1"},
                                     {"SHAPETRACE_RING", "4K"},
                                     {"SHAPETRACE_VERBOSE", "1"}},
                                    20000);
  unlink(path.c_str());
  rmdir(directory);
  EXPECT_EQ(run.exit_code, 3) << "a hang shows as -1";
  EXPECT_EQ(run.out, "done calls 100000\n");
  EXPECT_THAT(run.err, HasSubstr("shapetrace: 0 events sent, 400002 lost"));
}

// Children that crash: each is in the stream with every call it made, to the last one (it dies
// inside work). abort() and SIGSEGV end the image first (the runtime's stand-in at the default
// action: a process end with the signal); a child killed with SIGKILL sends no end, and the
// collector's side finds it gone, finishes its rings (the second half of its calls, which a drain
// waking once a second has not sent) and reads how it died.
TEST(RuntimeIntegration, CrashingChildrenAreRecordedToTheirLastCall) {
  constexpr long kChildren = 30, kCalls = 100;
  Capture capture;
  // Under a sanitizer, whose runtime handles SIGSEGV itself (a report, then its own exit code),
  // the program's action is left at the default, as without it.
  auto sanitizerOptions = [](const char* name) {
    const char* given = std::getenv(name);
    return std::string(given ? given : "") + (given && *given ? ":" : "") + "handle_segv=0";
  };
  const ProgramRun run = runProgram(
      TRACED_PROGRAM, {"crash-children", std::to_string(kChildren), std::to_string(kCalls)},
      envFor(capture, {{"TSAN_OPTIONS", sanitizerOptions("TSAN_OPTIONS")},
                       {"ASAN_OPTIONS", sanitizerOptions("ASAN_OPTIONS")},
                       {"SHAPETRACE_DRAIN_INTERVAL_US", "1000000"}}));
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_EQ(run.out, "abort 10 segv 10 kill 10\ndone crash-children 30 100\n");
  // The parent's end and the 20 children that ended by abort or SIGSEGV.
  std::vector<StreamItem> items = capture.receive(1 + 20);
  for (auto& item : capture.receive(1, 300)) // anything still behind the last end
    items.push_back(std::move(item));

  auto expected = callsPattern(kCalls); // the child's own calls: not main's enter and exit
  expected.erase(expected.begin());
  expected.back() = {kWork, EventKind::Enter};
  std::map<int, int> ends; // by signal; 0: no process end
  size_t children = 0;
  for (const StreamItem& item : items) {
    const auto* start = std::get_if<wire::ProcessStart>(&item.body);
    if (!start || start->origin != wire::ProcessOrigin::Forked)
      continue;
    ++children;
    const std::vector<StreamItem> child = itemsOfProcess(items, item.process);
    const auto threads = threadsOf(child);
    ASSERT_EQ(threads.size(), 1u);
    EXPECT_EQ(shape(threads.begin()->second.events), expected) << "pid " << start->pid;
    const auto* end = std::get_if<wire::ProcessEnd>(&child.back().body);
    if (!end) {
      ++ends[0];
      EXPECT_THAT(capture.vanished(), ::testing::Contains(start->pid));
      // Its thread ended too, by the collector's finish, with the counts of all it recorded.
      const auto* thread_end = std::get_if<wire::ThreadEnd>(&child.back().body);
      ASSERT_NE(thread_end, nullptr) << "pid " << start->pid;
      EXPECT_EQ(thread_end->events_recorded, expected.size());
      EXPECT_EQ(thread_end->events_dropped, 0u);
      continue;
    }
    EXPECT_EQ(end->reason, wire::EndReason::Signal);
    EXPECT_EQ(end->events_dropped, 0u);
    ++ends[end->exit_status];
  }
  EXPECT_EQ(children, size_t(kChildren));
  EXPECT_EQ(ends, (std::map<int, int>{{0, 10}, {SIGABRT, 10}, {SIGSEGV, 10}}));
}

TEST(RuntimeIntegration, SignalHandlerCallingInstrumentedCodeIsRecorded) {
  const long calls = 1000;
  const Traced traced = trace({"signal", std::to_string(calls)});
  EXPECT_EQ(traced.run.exit_code, 3);
  auto threads = threadsOf(traced.items);
  ASSERT_EQ(threads.size(), 1u);
  std::vector<std::pair<uint32_t, EventKind>> expected{{kMain, EventKind::Enter}};
  for (long i = 0; i < calls; ++i) {
    for (auto f : {kWork, kLeaf})
      expected.push_back({f, EventKind::Enter});
    for (auto f : {kLeaf, kWork})
      expected.push_back({f, EventKind::Exit});
    if (i % 10 == 0) // raise() runs the handler synchronously, between hooks
      for (auto [f, kind] : {std::pair{kHandler, EventKind::Enter}, {kLeaf, EventKind::Enter},
                             {kLeaf, EventKind::Exit}, {kHandler, EventKind::Exit}})
        expected.push_back({f, kind});
  }
  expected.push_back({kMain, EventKind::Exit});
  EXPECT_EQ(shape(threads.begin()->second.events), expected);
}

TEST(RuntimeIntegration, AsynchronousSignalsNeverCorruptTheStream) {
  // A 100 us timer interrupts the program anywhere, including inside a hook: such nested events
  // are dropped and counted; all others are recorded. Recorded + dropped is exact.
  const long calls = 200000;
  const Traced traced = trace({"timer", std::to_string(calls)});
  EXPECT_EQ(traced.run.exit_code, 3);
  long handler_calls = -1;
  ASSERT_EQ(std::sscanf(traced.run.out.c_str(), "handler calls %ld", &handler_calls), 1);
  auto threads = threadsOf(traced.items);
  ASSERT_EQ(threads.size(), 1u);
  const ThreadTrace& thread = threads.begin()->second;
  EXPECT_THAT(thread.problems, ::testing::IsEmpty());
  const uint64_t expected_total = uint64_t(4 * calls + 2 + 4 * handler_calls);
  EXPECT_EQ(thread.events.size() + thread.dropped, expected_total);
  // Whatever was recorded is balanced: every exit closes the innermost open enter.
  std::vector<uint32_t> stack;
  for (const Event& event : thread.events) {
    if (event.kind == EventKind::Enter) {
      stack.push_back(event.function_id);
    } else {
      ASSERT_FALSE(stack.empty());
      EXPECT_EQ(stack.back(), event.function_id);
      stack.pop_back();
    }
  }
}

TEST(RuntimeIntegration, TinyRingDropsAreCountedExactlyInGaps) {
  const long calls = 300000;
  const Traced traced = trace({"calls", std::to_string(calls)}, {{"SHAPETRACE_RING", "256"}});
  EXPECT_EQ(traced.run.exit_code, 3);
  auto threads = threadsOf(traced.items);
  ASSERT_EQ(threads.size(), 1u);
  const ThreadTrace& thread = threads.begin()->second;
  EXPECT_THAT(thread.problems, ::testing::IsEmpty());
  const uint64_t total = uint64_t(4 * calls + 2);
  EXPECT_GT(thread.dropped, 0u);
  EXPECT_EQ(thread.events.size() + thread.dropped, total);
  EXPECT_EQ(thread.end.events_recorded, thread.events.size());
  EXPECT_EQ(thread.end.events_dropped, thread.dropped);
  const auto ends = itemsOfType<wire::ProcessEnd>(traced.items);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].events_recorded + ends[0].events_dropped, total);
  // Each gap's time range lies within the run, and its first dropped event is not in the future.
  for (const auto& gap : itemsOfType<wire::Gap>(traced.items))
    EXPECT_LE(gap.from_ns, gap.to_ns);
}

TEST(RuntimeIntegration, BlockingModeLosesNothingWithATinyRing) {
  const long calls = 50000;
  const Traced traced = trace({"calls", std::to_string(calls)},
                              {{"SHAPETRACE_RING", "4K"}, {"SHAPETRACE_BLOCKING", "1"}});
  EXPECT_EQ(traced.run.exit_code, 3);
  auto threads = threadsOf(traced.items);
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_EQ(shape(threads.begin()->second.events), callsPattern(calls));
  EXPECT_EQ(threads.begin()->second.dropped, 0u);
  // The thread waited for the drain (256 slots for 200,000 events): each wait is in the stream,
  // placed after the event it delayed (whose time was taken before it) and before the next one.
  // (A wait may open the next batch: the drain can take the event before its wait is written.)
  size_t waits = 0;
  uint64_t previous_ns = 0; // the thread's last event before the batch
  for (const auto& item : traced.items) {
    const auto* batch = std::get_if<wire::EventBatch>(&item.body);
    if (!batch)
      continue;
    for (const wire::TracerWait& wait : batch->tracer_waits) {
      ++waits;
      ASSERT_LE(wait.before_event, batch->events.size());
      EXPECT_GE(wait.start_ns, wait.before_event ? batch->events[wait.before_event - 1].timestamp
                                                 : previous_ns);
      if (wait.before_event < batch->events.size())
        EXPECT_LE(wait.start_ns + wait.duration_ns, batch->events[wait.before_event].timestamp);
    }
    if (!batch->events.empty())
      previous_ns = batch->events.back().timestamp;
  }
  EXPECT_GT(waits, 0u);
}

TEST(RuntimeIntegration, NoCollectorChangesNothing) {
  // Nothing listens at this endpoint: same output, same exit code, and the program finishes.
  char directory[] = "/tmp/shapetrace-nocollector-XXXXXX";
  ASSERT_NE(mkdtemp(directory), nullptr);
  const std::string endpoint = std::string("ipc://") + directory + "/nobody.sock";
  for (const char* command : {"calls", "fork", "flush"}) {
    const ProgramRun run = runProgram(TRACED_PROGRAM, {command, "20000"},
                                      {{"SHAPETRACE_ENDPOINT", endpoint}, kForkLeaksAreByDesign},
                                      20000);
    EXPECT_EQ(run.exit_code, 3) << command;
    EXPECT_EQ(run.err, "") << command;
    if (std::string(command) == "calls")
      EXPECT_EQ(run.out, "done calls 20000\n");
    if (std::string(command) == "fork")
      EXPECT_EQ(run.out, "child 0\ndone fork 20000\n");
    if (std::string(command) == "flush")
      EXPECT_EQ(run.out, "flush 3\ndone flush 20000\n"); // SHAPETRACE_TIMEOUT
  }
  rmdir(directory);
}

TEST(RuntimeIntegration, AnnotationsAndThreadNamesArriveInPlace) {
  const Traced traced = trace({"annotate"});
  EXPECT_EQ(traced.run.exit_code, 3);
  EXPECT_EQ(traced.run.out, "name 0\nannotate 0\nannotate 0\nannotate 0\ninvalid 2 2\ndone annotate\n");
  const auto names = itemsOfType<wire::ThreadName>(traced.items);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].name, "main-loop");
  // Each annotation comes after the events recorded before it and before those recorded after it:
  // in the batch that holds those events (placed by before_event), or as an item between batches.
  // Events counted between annotations, however the drain happened to cut the batches.
  std::vector<std::string> order;
  long events = 0;
  const auto annotation = [&](const wire::Annotation& note) {
    EXPECT_EQ(note.key, "request.size");
    order.push_back(std::to_string(events));
    order.push_back("a" + std::to_string(note.value));
    events = 0;
  };
  size_t in_batches = 0;
  for (const auto& item : traced.items) {
    if (auto* note = std::get_if<wire::Annotation>(&item.body)) {
      annotation(*note);
    } else if (auto* batch = std::get_if<wire::EventBatch>(&item.body)) {
      uint32_t placed = 0;
      for (const wire::Annotation& mark : batch->annotations) {
        events += long(mark.before_event - placed);
        placed = mark.before_event;
        annotation(mark);
        ++in_batches;
      }
      events += long(batch->events.size() - placed);
    }
  }
  order.push_back(std::to_string(events));
  EXPECT_THAT(order, ElementsAre("1", "a100", "4", "a101", "4", "a102", "5"));
  // Annotations travel in the batch of the events around them (only one made when nothing was left
  // to send would go as an item of its own): they do not cut batches.
  EXPECT_GE(in_batches, 2u);
}

TEST(RuntimeIntegration, SwitchingRecordingOffKeepsCallsBalanced) {
  const Traced traced = trace({"toggle"});
  EXPECT_EQ(traced.run.exit_code, 3);
  EXPECT_EQ(traced.run.out, "enabled 0\ndone toggle\n");
  auto threads = threadsOf(traced.items);
  ASSERT_EQ(threads.size(), 1u);
  using K = EventKind;
  EXPECT_THAT(shape(threads.begin()->second.events),
              ElementsAre(std::pair{kMain, K::Enter}, std::pair{kWork, K::Enter},
                          std::pair{kWork, K::Exit}, std::pair{kLeaf, K::Enter},
                          std::pair{kLeaf, K::Exit}, std::pair{kWork, K::Enter},
                          std::pair{kLeaf, K::Enter}, std::pair{kLeaf, K::Exit},
                          std::pair{kWork, K::Exit}, std::pair{kMain, K::Exit}));
}

TEST(RuntimeIntegration, RecordingOffAtStartBeginsWhenSwitchedOn) {
  // SHAPETRACE_ENABLED=0 starts no drain; shapetrace_set_enabled(1) starts it, and the calls made
  // from then on are recorded (those open before are not: their exits are skipped).
  const Traced traced = trace({"toggle"}, {{"SHAPETRACE_ENABLED", "0"}});
  EXPECT_EQ(traced.run.exit_code, 3);
  EXPECT_EQ(itemsOfType<wire::ProcessStart>(traced.items).size(), 1u);
  auto threads = threadsOf(traced.items);
  ASSERT_EQ(threads.size(), 1u);
  using K = EventKind;
  EXPECT_THAT(shape(threads.begin()->second.events),
              ElementsAre(std::pair{kLeaf, K::Enter}, std::pair{kLeaf, K::Exit},
                          std::pair{kWork, K::Enter}, std::pair{kLeaf, K::Enter},
                          std::pair{kLeaf, K::Exit}, std::pair{kWork, K::Exit}));
}

TEST(RuntimeIntegration, FlushReportsSuccessWhenTheCollectorTookEverything) {
  const Traced traced = trace({"flush"});
  EXPECT_EQ(traced.run.out, "flush 0\ndone flush\n");
}

// An id that no module table names never leaves the process: the events are counted as lost, in
// a Gap where they were, and the stream goes on.
TEST(RuntimeIntegration, UnregisteredIdsAreNeverSentButCountedAsLost) {
  const Traced traced = trace({"unregistered"});
  auto threads = threadsOf(traced.items);
  ASSERT_EQ(threads.size(), 1u);
  const ThreadTrace& thread = threads.begin()->second;
  using K = EventKind;
  EXPECT_THAT(shape(thread.events), ElementsAre(std::pair{kMain, K::Enter}, std::pair{kMain, K::Exit}));
  EXPECT_EQ(thread.dropped, 2u);
  const auto gaps = itemsOfType<wire::Gap>(traced.items);
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].dropped, 2u);
  EXPECT_EQ(gaps[0].after_sequence, 0u); // after the batch with main's enter
  const auto end = itemsOfType<wire::ProcessEnd>(traced.items);
  ASSERT_EQ(end.size(), 1u);
  EXPECT_EQ(end[0].events_dropped, 2u);
}

TEST(RuntimeIntegration, ModulesLoadedLaterGetTheNextIds) {
  const Traced traced = trace({"dlopen", TRACED_MODULE});
  EXPECT_EQ(traced.run.exit_code, 3);
  const auto modules = itemsOfType<wire::ModuleTable>(traced.items);
  ASSERT_EQ(modules.size(), 2u);
  EXPECT_EQ(modules[1].module_id, "traced_module.cpp");
  EXPECT_EQ(modules[1].base_id, 5u);
  EXPECT_EQ(modules[1].functions[1].id, 6u);
  auto threads = threadsOf(traced.items);
  const auto& events = threads.begin()->second.events;
  const long from_module = std::count_if(events.begin(), events.end(),
                                         [](const Event& e) { return e.function_id >= 5; });
  EXPECT_EQ(from_module, 2 + 2 * 5);
}

// Each image's recording flag (abi.h, image_enabled) follows every switch while its module is
// registered, starts at the current value when a library is loaded, and is left alone once
// dlclose unloads it: the second round loads the library again and switches after the unload.
TEST(RuntimeIntegration, EveryRegisteredImageFlagFollowsTheSwitchUntilItsLibraryIsUnloaded) {
  const Traced traced = trace({"image-flags", TRACED_MODULE});
  EXPECT_EQ(traced.run.exit_code, 3) << traced.run.err;
  EXPECT_EQ(traced.run.out, "program 1\nprogram 0\n"
                            "loaded: program 0 module 0\non: program 1 module 1\n"
                            "unloaded, off: program 0\n"
                            "loaded: program 0 module 0\non: program 1 module 1\n"
                            "unloaded, off: program 0\n"
                            "done image-flags " TRACED_MODULE "\n");
}

TEST(RuntimeIntegration, BadConfigurationIsReportedAndDefaultsUsed) {
  const Traced traced = trace({"calls", "10"}, {{"SHAPETRACE_RING", "lots"}});
  EXPECT_EQ(traced.run.exit_code, 3);
  EXPECT_THAT(traced.run.err, HasSubstr("SHAPETRACE_RING"));
  EXPECT_EQ(shape(threadsOf(traced.items).begin()->second.events), callsPattern(10));
}

std::vector<StreamItem> readRecording(const std::string& directory) {
  recording::RecordingReader reader(directory);
  std::vector<StreamItem> items;
  while (auto item = reader.nextItem())
    items.push_back(std::move(*item));
  EXPECT_TRUE(reader.damage().empty()) << directory;
  return items;
}

TEST(RuntimeIntegration, OutputWritesTheSameStreamToARecording) {
  char directory[] = "/tmp/shapetrace-output-XXXXXX";
  ASSERT_NE(mkdtemp(directory), nullptr);
  const std::string output = std::string(directory) + "/rec";
  const ProgramRun run = runProgram(TRACED_PROGRAM, {"fork", "1000"},
                                    {{"SHAPETRACE_OUTPUT", output},
                                     {"SHAPETRACE_ENDPOINT", "ipc:///nonexistent/x.sock"},
                                     kForkLeaksAreByDesign});
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_EQ(run.err, "");
  EXPECT_EQ(run.out, "child 0\ndone fork 1000\n");
  const auto parent = readRecording(output);
  ASSERT_FALSE(parent.empty());
  EXPECT_EQ(parent.front().kind(), wire::ItemKind::ProcessStart);
  EXPECT_EQ(parent.back().kind(), wire::ItemKind::ProcessEnd);
  auto threads = threadsOf(parent);
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_EQ(shape(threads.begin()->second.events), callsPattern(2000));
  // The forked child writes its own recording next to the parent's: <output>-<child pid>.
  std::string child_directory;
  for (const auto& entry : std::filesystem::directory_iterator(directory))
    if (entry.path().filename() != "rec")
      child_directory = entry.path();
  ASSERT_FALSE(child_directory.empty());
  const auto child = readRecording(child_directory);
  const auto& child_start = std::get<wire::ProcessStart>(child.front().body);
  EXPECT_EQ(child_start.parent_process, parent.front().process);
  EXPECT_EQ(child_directory, output + "-" + std::to_string(child_start.pid));
  auto child_threads = threadsOf(child);
  ASSERT_EQ(child_threads.size(), 1u);
  EXPECT_EQ(child_threads.begin()->second.events.size(), 4000u);
  std::filesystem::remove_all(directory);
}

TEST(RuntimeIntegration, UnusableOutputIsReportedAndTheProgramRunsUnchanged) {
  const ProgramRun run = runProgram(TRACED_PROGRAM, {"calls", "100"},
                                    {{"SHAPETRACE_OUTPUT", "/proc/self/no/such/dir"}});
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_EQ(run.out, "done calls 100\n");
  EXPECT_THAT(run.err, HasSubstr("SHAPETRACE_OUTPUT"));
}

} // namespace
} // namespace shapetrace::test

namespace shapetrace::test {
namespace {

// The default socket (no SHAPETRACE_ENDPOINT) is used only when its directory is the user's own,
// private and not a symlink, as the collector requires; otherwise the program connects nowhere,
// sends nothing and runs as it would untraced, saying why only when asked (SHAPETRACE_VERBOSE).
class DefaultSocketTest : public ::testing::Test {
protected:
  void SetUp() override {
    char made[] = "/tmp/shapetrace-xdg-XXXXXX";
    ASSERT_NE(mkdtemp(made), nullptr);
    runtime_dir = made;
    socket_dir = runtime_dir + "/shapetrace";
  }
  void TearDown() override { std::filesystem::remove_all(runtime_dir); }

  // Runs `calls 100` with XDG_RUNTIME_DIR pointing here while a listener waits in socket_dir.
  std::pair<ProgramRun, std::vector<wire::StreamItem>> runAgainstListener(bool verbose) {
    Capture listener(socket_dir);
    std::map<std::string, std::string> env{{"XDG_RUNTIME_DIR", runtime_dir}};
    env.emplace("SHAPETRACE_ENDPOINT", ""); // unset for the program: the default applies
    if (verbose) env.emplace("SHAPETRACE_VERBOSE", "1");
    ProgramRun run = runProgram(TRACED_PROGRAM, {"calls", "100"}, env);
    return {run, listener.receive(1, verbose ? 1500 : 3000)};
  }

  std::string runtime_dir, socket_dir;
};

TEST_F(DefaultSocketTest, APrivateDirectoryOfTheUserIsUsed) {
  ASSERT_EQ(::mkdir(socket_dir.c_str(), 0700), 0);
  auto [run, items] = runAgainstListener(false);
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_EQ(run.out, "done calls 100\n");
  EXPECT_EQ(itemsOfType<wire::ProcessEnd>(items).size(), 1u);
}

TEST_F(DefaultSocketTest, ADirectoryOfAnotherUserIsNotConnectedTo) {
  ASSERT_EQ(::mkdir(socket_dir.c_str(), 0700), 0);
  ASSERT_EQ(::chown(socket_dir.c_str(), 4242, 4242), 0) << "the tests run as root";
  for (bool verbose : {false, true}) {
    auto [run, items] = runAgainstListener(verbose);
    EXPECT_EQ(run.exit_code, 3);
    EXPECT_EQ(run.out, "done calls 100\n");
    EXPECT_TRUE(items.empty()) << items.size() << " items reached the other user's socket";
    if (verbose)
      EXPECT_THAT(run.err, HasSubstr(socket_dir + " is not a directory owned by you; not "
                                                  "connecting to the default collector socket"));
    else
      EXPECT_EQ(run.err, "");
  }
}

TEST_F(DefaultSocketTest, ADirectoryOthersCanEnterIsNotConnectedTo) {
  ASSERT_EQ(::mkdir(socket_dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(socket_dir.c_str(), 0777), 0);
  auto [run, items] = runAgainstListener(true);
  EXPECT_EQ(run.out, "done calls 100\n");
  EXPECT_TRUE(items.empty());
  EXPECT_THAT(run.err, HasSubstr("is accessible to other users (mode 777)"));
}

TEST_F(DefaultSocketTest, ASymlinkedDirectoryIsNotConnectedTo) {
  const std::string target = runtime_dir + "/elsewhere";
  ASSERT_EQ(::mkdir(target.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(target.c_str(), socket_dir.c_str()), 0);
  auto [run, items] = runAgainstListener(true);
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_EQ(run.out, "done calls 100\n");
  EXPECT_TRUE(items.empty());
  EXPECT_THAT(run.err, HasSubstr("is not a directory owned by you"));
}

TEST_F(DefaultSocketTest, AMissingDirectoryIsMadePrivateBeforeAnyoneElseCanMakeIt) {
  ProgramRun run = runProgram(TRACED_PROGRAM, {"calls", "10"},
                              {{"XDG_RUNTIME_DIR", runtime_dir}, {"SHAPETRACE_ENDPOINT", ""}});
  EXPECT_EQ(run.out, "done calls 10\n");
  struct stat st {};
  ASSERT_EQ(::lstat(socket_dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(RuntimeIntegration, RedactedArgumentsStayOutOfTheStream) {
  const Traced plain = trace({"calls", "10", "s3cr3t-argument"});
  ASSERT_EQ(itemsOfType<wire::ProcessStart>(plain.items).size(), 1u);
  EXPECT_THAT(itemsOfType<wire::ProcessStart>(plain.items)[0].arguments,
              ElementsAre(TRACED_PROGRAM, "calls", "10", "s3cr3t-argument"));
  const Traced redacted = trace({"calls", "10", "s3cr3t-argument"}, {{"SHAPETRACE_REDACT_ARGS", "1"}});
  EXPECT_EQ(redacted.run.out, "done calls 10 s3cr3t-argument\n");
  const auto starts = itemsOfType<wire::ProcessStart>(redacted.items);
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_THAT(starts[0].arguments, ElementsAre(TRACED_PROGRAM));
}

} // namespace
} // namespace shapetrace::test

namespace shapetrace::test {
namespace {

// --- process boundaries: exec, _exit, daemon, longjmp (docs/runtime.md, "Lifecycle") ---------

// The processes of a stream in the order they started, with their items.
struct Image {
  uint64_t key = 0;
  wire::ProcessStart start;
  std::vector<StreamItem> items;
  const wire::ProcessEnd* end() const {
    for (auto it = items.rbegin(); it != items.rend(); ++it)
      if (const auto* e = std::get_if<wire::ProcessEnd>(&it->body))
        return e;
    return nullptr;
  }
};

std::vector<Image> imagesOf(const std::vector<StreamItem>& items) {
  std::vector<Image> images;
  for (const auto& item : items)
    if (const auto* start = std::get_if<wire::ProcessStart>(&item.body))
      images.push_back({item.process, *start, itemsOfProcess(items, item.process)});
  return images;
}

// The one image of `origin`. Images of different connections may arrive in any order, so tests
// find them by how they began, never by arrival.
const Image& imageOf(const std::vector<Image>& images, wire::ProcessOrigin origin) {
  for (const Image& image : images)
    if (image.start.origin == origin)
      return image;
  ADD_FAILURE() << "no image of origin " << wire::processOriginName(origin);
  return images.front();
}

// A process whose exec failed: the image the exec ended (its end says exec) and the image it went
// on as. Null when the stream does not hold exactly those two.
struct AroundFailedExec {
  const Image* before = nullptr;
  const Image* after = nullptr;
};
AroundFailedExec aroundFailedExec(const std::vector<Image>& images) {
  EXPECT_EQ(images.size(), 2u);
  if (images.size() != 2)
    return {};
  const Image& before = imageOf(images, wire::ProcessOrigin::Started);
  EXPECT_NE(before.end(), nullptr);
  if (!before.end())
    return {};
  EXPECT_EQ(before.end()->reason, wire::EndReason::Exec);
  return {&before, &imageOf(images, wire::ProcessOrigin::ExecFailed)};
}

std::vector<std::pair<uint32_t, EventKind>> eventsOf(const Image& image) {
  auto threads = threadsOf(image.items);
  std::vector<std::pair<uint32_t, EventKind>> out;
  for (const auto& [tid, thread] : threads) {
    EXPECT_THAT(thread.problems, ::testing::IsEmpty());
    for (const auto& e : shape(thread.events))
      out.push_back(e);
  }
  return out;
}

TEST(ProcessBoundaries, UnderscoreExitSendsEverythingAndLeavesTheOpenCallsOpen) {
  const Traced traced = trace({"_exit", "50"});
  EXPECT_EQ(traced.run.exit_code, 4);
  const auto images = imagesOf(traced.items);
  ASSERT_EQ(images.size(), 1u);
  auto expected = callsPattern(50);
  expected.pop_back(); // main's exit never ran
  expected.insert(expected.begin() + 1, {kWork, EventKind::Enter}); // nor work's
  EXPECT_EQ(eventsOf(images[0]), expected);
  const wire::ProcessEnd* end = images[0].end();
  ASSERT_NE(end, nullptr);
  EXPECT_EQ(end->reason, wire::EndReason::ExitImmediately);
  EXPECT_EQ(end->exit_status, 4);
  EXPECT_EQ(end->events_recorded, 202u);
  EXPECT_EQ(end->events_dropped, 0u);
  auto threads = threadsOf(images[0].items);
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_TRUE(threads.begin()->second.ended);
}

// exec from main: the first image ends with reason exec and the program's path; the new image
// (same pid, a new key) says it was exec'd by the first. Nothing is lost on either side.
TEST(ProcessBoundaries, ExecEndsTheImageAndTheNewImageLinksToIt) {
  for (const char* form : {"exec", "fexec", "exec-clean-env"}) {
    SCOPED_TRACE(form);
    const Traced traced = trace({form, "20", "calls", "5"}, {}, 2);
    EXPECT_EQ(traced.run.exit_code, 3);
    EXPECT_EQ(traced.run.out, "done calls 5\n");
    const auto images = imagesOf(traced.items);
    ASSERT_EQ(images.size(), 2u);
    const Image& before = imageOf(images, wire::ProcessOrigin::Started);
    const Image& after = imageOf(images, wire::ProcessOrigin::Exec);
    EXPECT_EQ(before.start.pid, after.start.pid);
    EXPECT_NE(before.key, after.key);
    EXPECT_EQ(after.start.origin, wire::ProcessOrigin::Exec);
    EXPECT_EQ(after.start.previous_image, before.key);
    EXPECT_EQ(after.start.parent_process, 0u);
    const wire::ProcessEnd* end = before.end();
    ASSERT_NE(end, nullptr);
    EXPECT_EQ(end->reason, wire::EndReason::Exec);
    EXPECT_EQ(end->exec_path, TRACED_PROGRAM); // fexecve's as /proc names its descriptor
    EXPECT_EQ(end->events_dropped, 0u);
    EXPECT_TRUE(itemsOfType<wire::ExecFailed>(traced.items).empty());
    auto expected = callsPattern(20);
    expected.pop_back(); // main is left open by the exec
    EXPECT_EQ(eventsOf(before), expected);
    EXPECT_EQ(eventsOf(after), callsPattern(5));
    ASSERT_NE(after.end(), nullptr);
    EXPECT_EQ(after.end()->reason, wire::EndReason::Exit);
    EXPECT_EQ(after.end()->exit_status, 3);
  }
}

// exec from a thread: the exec'ing thread's calls and the waiting main thread's are all sent.
TEST(ProcessBoundaries, ExecFromAThreadSendsEveryThreadsCalls) {
  const Traced traced = trace({"exec-thread", "calls", "3"}, {}, 2);
  EXPECT_EQ(traced.run.out, "done calls 3\n");
  const auto images = imagesOf(traced.items);
  ASSERT_EQ(images.size(), 2u);
  const Image& before = imageOf(images, wire::ProcessOrigin::Started);
  const Image& after = imageOf(images, wire::ProcessOrigin::Exec);
  auto threads = threadsOf(before.items);
  ASSERT_EQ(threads.size(), 2u);
  using K = EventKind;
  EXPECT_THAT(shape(threads[before.start.pid].events), ElementsAre(std::pair{kMain, K::Enter}));
  threads.erase(before.start.pid);
  EXPECT_THAT(shape(threads.begin()->second.events), ElementsAre(std::pair{kThreadBody, K::Enter}));
  ASSERT_NE(before.end(), nullptr);
  EXPECT_EQ(before.end()->reason, wire::EndReason::Exec);
  EXPECT_EQ(before.end()->events_dropped, 0u);
  EXPECT_EQ(after.start.previous_image, before.key);
  EXPECT_EQ(eventsOf(after), callsPattern(3));
}

// An exec that fails leaves the process recording as before: the image's ProcessEnd said exec, so
// it goes on under a new key (origin execFailed, linked to the old one, ExecFailed says why), on a
// new connection. Its calls from before the exec are the old key's: their exits are not sent.
TEST(ProcessBoundaries, AFailedExecLeavesTheProcessRecording) {
  const Traced traced = trace({"exec-missing", "10"}, {}, 2);
  EXPECT_EQ(traced.run.exit_code, 3);
  EXPECT_EQ(traced.run.out, "exec failed: No such file or directory\ndone exec-missing 10\n");
  const auto images = imagesOf(traced.items);
  const AroundFailedExec around = aroundFailedExec(images);
  ASSERT_TRUE(around.before && around.after);
  const Image& before = *around.before;
  const Image& after = *around.after;
  EXPECT_EQ(before.end()->exec_path, "/nonexistent/program");
  using K = EventKind;
  EXPECT_THAT(eventsOf(before), ElementsAre(std::pair{kMain, K::Enter}, std::pair{kWork, K::Enter}));
  EXPECT_EQ(after.start.origin, wire::ProcessOrigin::ExecFailed);
  EXPECT_EQ(after.start.previous_image, before.key);
  EXPECT_EQ(after.start.pid, before.start.pid);
  ASSERT_GE(after.items.size(), 2u);
  const auto* failed = std::get_if<wire::ExecFailed>(&after.items[1].body);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->path, "/nonexistent/program");
  EXPECT_EQ(failed->error, ENOENT);
  auto expected = callsPattern(10); // work's and main's exits close the old key's calls: not sent
  expected.erase(expected.begin());
  expected.pop_back();
  EXPECT_EQ(eventsOf(after), expected);
  ASSERT_NE(after.end(), nullptr);
  EXPECT_EQ(after.end()->reason, wire::EndReason::Exit);
  EXPECT_EQ(after.end()->exit_status, 3);
  EXPECT_EQ(after.end()->events_dropped, 0u);
}

// A failed exec followed at once by _exit (a fork child whose exec failed): the image the failed
// exec began ends there too, with its process end, as soon as the drain has taken it up.
TEST(ProcessBoundaries, UnderscoreExitRightAfterAFailedExecEndsTheNewImage) {
  const Traced traced = trace({"exec-missing-exit"}, {}, 2);
  EXPECT_EQ(traced.run.exit_code, 127);
  const auto images = imagesOf(traced.items);
  const AroundFailedExec around = aroundFailedExec(images);
  ASSERT_TRUE(around.before && around.after);
  const Image& after = *around.after;
  ASSERT_NE(after.end(), nullptr);
  EXPECT_EQ(after.end()->reason, wire::EndReason::ExitImmediately);
  EXPECT_EQ(after.end()->exit_status, 127);
  EXPECT_EQ(after.end()->events_dropped, 0u);
}

// daemon(): the parent _exits inside it (its open calls stay open), the daemon goes on as a forked
// process of its own.
TEST(ProcessBoundaries, DaemonsParentEndsAndTheDaemonIsItsChild) {
  const Traced traced = trace({"daemon", "7"}, {kForkLeaksAreByDesign}, 2);
  EXPECT_EQ(traced.run.exit_code, 0); // the parent's _exit(0)
  const auto images = imagesOf(traced.items);
  ASSERT_EQ(images.size(), 2u);
  const Image& parent = imageOf(images, wire::ProcessOrigin::Started);
  const Image& daemon = imageOf(images, wire::ProcessOrigin::Forked);
  ASSERT_NE(parent.end(), nullptr);
  EXPECT_EQ(parent.end()->reason, wire::EndReason::ExitImmediately);
  EXPECT_EQ(parent.end()->exit_status, 0);
  using K = EventKind;
  EXPECT_THAT(eventsOf(parent), ElementsAre(std::pair{kMain, K::Enter}, std::pair{kWork, K::Enter}));
  EXPECT_EQ(daemon.start.origin, wire::ProcessOrigin::Forked);
  EXPECT_EQ(daemon.start.parent_process, parent.key);
  EXPECT_NE(daemon.start.pid, parent.start.pid);
  // The daemon's calls after fork; work's and main's exits are not its own (their enters are the
  // parent's), as for any forked child.
  auto calls_only = callsPattern(7);
  calls_only.erase(calls_only.begin());
  calls_only.pop_back();
  EXPECT_EQ(eventsOf(daemon), calls_only);
  ASSERT_NE(daemon.end(), nullptr);
  EXPECT_EQ(daemon.end()->reason, wire::EndReason::Exit);
}

// longjmp out of D frames: one abandoned exit per frame, innermost first, at the jump, then the
// frame setjmp returned to exits normally. With a batch of 3 events the abandoned exits of one
// jump fill several batches.
TEST(ProcessBoundaries, LongjmpEndsTheJumpedOverFramesAsAbandoned) {
  for (const char* batch : {"4096", "3"}) {
    SCOPED_TRACE(std::string("batch ") + batch);
    const Traced traced = trace({"longjmp", "5", "3"}, {{"SHAPETRACE_BATCH", batch}});
    EXPECT_EQ(traced.run.exit_code, 3);
    const auto images = imagesOf(traced.items);
    ASSERT_EQ(images.size(), 1u);
    using K = EventKind;
    std::vector<std::pair<uint32_t, EventKind>> expected{{kMain, K::Enter}};
    for (int jump = 0; jump < 3; ++jump) {
      expected.push_back({kWork, K::Enter});
      for (int d = 0; d < 5; ++d)
        expected.push_back({kLeaf, K::Enter});
      for (int d = 0; d < 5; ++d)
        expected.push_back({kLeaf, K::AbandonedExit});
      expected.push_back({kWork, K::Exit});
    }
    expected.push_back({kMain, K::Exit});
    EXPECT_EQ(eventsOf(images[0]), expected);
    // The abandoned exits of one jump share its time, between the last enter and the next exit.
    const auto threads = threadsOf(images[0].items);
    const auto& events = threads.begin()->second.events;
    for (size_t i = 0; i < events.size(); ++i)
      if (events[i].kind == K::AbandonedExit && events[i - 1].kind == K::AbandonedExit)
        EXPECT_EQ(events[i].timestamp, events[i - 1].timestamp) << i;
    EXPECT_EQ(images[0].end()->events_dropped, 0u);
  }
}

} // namespace
} // namespace shapetrace::test
