// Attach on demand (docs/runtime.md, "Attach on demand"): a real traced program runs with no
// collector, then real PULL sockets bind its endpoint and go away, three times in one run.
#include "trace_capture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <filesystem>
#include <thread>
#include <unistd.h>

namespace shapetrace::test {
namespace {

using ::testing::HasSubstr;

constexpr uint32_t kWork = 1, kLeaf = 2;

struct TempDir {
  std::string path;
  TempDir() {
    char made[] = "/tmp/shapetrace-attach-XXXXXX";
    path = mkdtemp(made);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string endpoint() const { return "ipc://" + path + "/collector.sock"; }
};

void sleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// The traced program serving (`command FILE`) on a thread of its own, attach on demand towards
// `dir`'s endpoint, until stop() makes FILE; finish() waits for it and gives its run.
class Service {
public:
  Service(const TempDir& dir, const std::string& command) : stop_file_(dir.path + "/stop") {
    thread_ = std::thread([this, endpoint = dir.endpoint(), command] {
      run_ = runProgram(TRACED_PROGRAM, {command, stop_file_}, {{"SHAPETRACE_ENDPOINT", endpoint}});
    });
  }
  // A test that failed before stopping it still ends the service and its thread.
  ~Service() {
    if (thread_.joinable()) {
      stop();
      thread_.join();
    }
  }
  const std::string& stopFile() const { return stop_file_; }
  // Until the service's worker runs its loop (its FILE.running): false if it never did within a
  // minute (a bound for a hang only, not a timing the test depends on).
  bool waitUntilRunning() const {
    const std::string running = stop_file_ + ".running";
    for (int i = 0; i < 6000; ++i) {
      if (access(running.c_str(), F_OK) == 0)
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  void stop() { close(open(stop_file_.c_str(), O_CREAT | O_WRONLY, 0600)); }
  ProgramRun finish() {
    thread_.join();
    return run_;
  }

private:
  std::string stop_file_;
  ProgramRun run_;
  std::thread thread_;
};

// What one collector received of a thread: its events before and from the stretch start (its
// ThreadStart in the first stretch, else its Gap of 0 events, the attach marker).
struct Stretch {
  std::vector<Event> before; // the thread's events before the marker
  std::vector<Event> events; // from the marker on
  int markers = 0;           // Gaps of 0 events
  uint64_t dropped = 0;      // events announced lost
  bool started = false, ended = false;
};

Stretch stretchOf(const std::vector<wire::StreamItem>& items, uint32_t thread) {
  Stretch stretch;
  for (const auto& item : items) {
    if (auto* start = std::get_if<wire::ThreadStart>(&item.body); start && start->thread == thread)
      stretch.started = true;
    if (auto* end = std::get_if<wire::ThreadEnd>(&item.body); end && end->thread == thread)
      stretch.ended = true;
    if (auto* gap = std::get_if<wire::Gap>(&item.body); gap && gap->thread == thread) {
      stretch.dropped += gap->dropped;
      if (gap->dropped == 0) {
        ++stretch.markers;
        EXPECT_LE(gap->from_ns, gap->to_ns);
      }
    }
    if (auto* batch = std::get_if<wire::EventBatch>(&item.body); batch && batch->thread == thread) {
      auto& into = (stretch.markers > 0 || stretch.started) ? stretch.events : stretch.before;
      into.insert(into.end(), batch->events.begin(), batch->events.end());
    }
  }
  return stretch;
}

// Whether every exit closes the innermost open call (none is taken for one entered earlier), and
// how many calls are left open.
bool wellNested(const std::vector<Event>& events, size_t& open) {
  std::vector<uint32_t> stack;
  for (const Event& event : events) {
    if (event.kind == EventKind::Enter) {
      stack.push_back(event.function_id);
    } else {
      if (stack.empty() || stack.back() != event.function_id)
        return false;
      stack.pop_back();
    }
  }
  open = stack.size();
  return true;
}

uint32_t workerThread(const std::vector<wire::StreamItem>& items) {
  for (const auto& item : items)
    if (auto* batch = std::get_if<wire::EventBatch>(&item.body))
      return batch->thread;
  return 0;
}

size_t eventsAfterStretchStart(const std::vector<wire::StreamItem>& items, bool first) {
  const uint32_t thread = workerThread(items);
  if (!thread)
    return 0;
  const Stretch stretch = stretchOf(items, thread);
  return first || stretch.markers ? stretch.events.size() : 0;
}

// What `capture` receives until the worker's stretch holds `events` events, or 20 s passed (a
// stream that never marks its stretch fails rather than hangs).
std::vector<wire::StreamItem> receiveStretch(Capture& capture, bool first, size_t events) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  return capture.receiveUntil([&](const std::vector<wire::StreamItem>& items) {
    return eventsAfterStretchStart(items, first) >= events ||
           std::chrono::steady_clock::now() > give_up;
  });
}

TEST(AttachOnDemand, NoCollectorMeansNoEventsAndNothingSent) {
  TempDir dir;
  const ProgramRun run = runProgram(
      TRACED_PROGRAM, {"calls", "1000"},
      {{"SHAPETRACE_ENDPOINT", dir.endpoint()}, {"SHAPETRACE_VERBOSE", "1"}});
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_EQ(run.out, "done calls 1000\n");
  // Nothing was made, so nothing was sent or lost (the exit does not wait either).
  EXPECT_THAT(run.err, HasSubstr("shapetrace: 0 events sent, 0 lost"));
}

TEST(AttachOnDemand, EnabledRestoresAlwaysOnRecording) {
  TempDir dir;
  const ProgramRun run = runProgram(TRACED_PROGRAM, {"calls", "1000"},
                                    {{"SHAPETRACE_ENDPOINT", dir.endpoint()},
                                     {"SHAPETRACE_VERBOSE", "1"},
                                     {"SHAPETRACE_ENABLED", "1"}});
  EXPECT_EQ(run.exit_code, 3);
  // Recorded from the first call as before; with no collector every event is lost at exit.
  EXPECT_THAT(run.err, HasSubstr("shapetrace: 0 events sent, 4002 lost"));
}

// An exec that fails while no collector is connected leaves the image attachable: a collector
// that comes later receives its calls (the drain once stayed in the exec's end for good).
TEST(AttachOnDemand, AFailedExecWhileDetachedLeavesTheProcessAttachable) {
  TempDir dir;
  Service service(dir, "exec-missing-serve");
  ASSERT_TRUE(service.waitUntilRunning()); // the exec failed before, detached
  std::vector<wire::StreamItem> items;
  {
    Capture capture(dir.path);
    items = receiveStretch(capture, true, 200);
    service.stop();
  }
  EXPECT_EQ(service.finish().exit_code, 3);
  EXPECT_GE(eventsAfterStretchStart(items, true), 200u);
  ASSERT_FALSE(items.empty());
  const auto* start = std::get_if<wire::ProcessStart>(&items.front().body);
  ASSERT_NE(start, nullptr);
  EXPECT_EQ(start->origin, wire::ProcessOrigin::ExecFailed);
}

// A service runs with no collector; collectors attach and go away three times. Each stretch starts
// at a marker (ThreadStart for the first, a Gap of 0 events for the others) with a clean call,
// every exit closes a call entered in the same stretch, the last stretch is complete up to the
// thread's end, nothing is announced as dropped, and the program's output and status are its own.
TEST(AttachOnDemand, ThreeAttachesGiveThreeMarkedBalancedStretches) {
  TempDir dir;
  Service service(dir, "serve");
  // Detached until its loop runs: the worker's start is never recorded, whatever the load.
  ASSERT_TRUE(service.waitUntilRunning());

  std::vector<std::vector<wire::StreamItem>> captures;
  for (int attach = 0; attach < 3; ++attach) {
    Capture capture(dir.path);
    captures.push_back(receiveStretch(capture, attach == 0, 400));
    if (attach == 2) {
      service.stop();
      std::vector<wire::StreamItem> rest = capture.receive(1);
      captures.back().insert(captures.back().end(), rest.begin(), rest.end());
    }
    sleepMs(200); // detached after the capture goes away
  }
  const ProgramRun run = service.finish();
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_EQ(run.out, "done serve " + service.stopFile() + "\n");

  ASSERT_FALSE(captures[0].empty());
  // Nothing was sent before the first collector: it sees the process from its start.
  EXPECT_EQ(captures[0].front().kind(), wire::ItemKind::ProcessStart);
  const uint32_t worker = workerThread(captures[0]);
  ASSERT_NE(worker, 0u);
  for (int attach = 0; attach < 3; ++attach) {
    SCOPED_TRACE("attach " + std::to_string(attach + 1));
    const Stretch stretch = stretchOf(captures[attach], worker);
    EXPECT_EQ(stretch.markers, attach == 0 ? 0 : 1);
    EXPECT_EQ(stretch.started, attach == 0);
    EXPECT_EQ(stretch.dropped, 0u);
    ASSERT_GE(stretch.events.size(), 400u);
    // A clean point: the stretch opens with a call, never with the end of one entered before.
    EXPECT_EQ(stretch.events.front().kind, EventKind::Enter);
    EXPECT_EQ(stretch.events.front().function_id, kWork);
    size_t open = 0;
    EXPECT_TRUE(wellNested(stretch.events, open));
    if (attach == 2) {
      // The last stretch runs to the thread's end: complete, every call closed.
      EXPECT_TRUE(stretch.ended);
      EXPECT_EQ(open, 0u);
      ASSERT_EQ(captures[attach].back().kind(), wire::ItemKind::ProcessEnd);
      const auto& end = std::get<wire::ProcessEnd>(captures[attach].back().body);
      EXPECT_EQ(end.exit_status, 3);
    }
    for (const Event& event : stretch.events)
      EXPECT_TRUE(event.function_id == kWork || event.function_id == kLeaf);
  }
}

} // namespace
} // namespace shapetrace::test
