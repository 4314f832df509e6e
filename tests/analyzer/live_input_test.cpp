// The live input's receiver (analyzer/live_receiver.h): what arrived is counted at once, whether the
// analysis took it or not, so that "analysed X of Y events received" is exact; a stopped live
// analysis catches up with what it received, or leaves it counted as waiting when told to stop now.
#include "input.h"

#include "fanout/fanout.h"
#include "trace_builder.h"
#include "wire/codec.h"

#include <gtest/gtest.h>
#include <zmq.hpp>

#include <chrono>
#include <thread>

namespace shapetrace::analyzer {
namespace {

using testing::batchItem;
using testing::call;
using testing::eventsOf;

class LiveInputTest : public ::testing::Test {
protected:
  LiveInputTest() : publisher_(context_, "tcp://127.0.0.1:*", 100000, "") {}

  void publish(uint32_t thread, uint64_t sequence) {
    const wire::Bytes bytes =
        wire::encodeItem(batchItem(1, thread, sequence, eventsOf({call(1, {call(2), call(3)})})));
    publisher_.publish(bytes);
  }

  // Waits (bounded: the bound only turns a hang into a failure) until `ready` holds.
  template <class F> static bool eventually(F ready) {
    for (int i = 0; i < 1000; ++i) {
      if (ready()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // Connects `input`: a subscriber only receives what is published after it joined, so probe
  // batches go out (one thread each) until one arrived. Returns the events received so far.
  uint64_t join(LiveInput& input) {
    uint32_t probe = 1000;
    EXPECT_TRUE(eventually([&] {
      publish(probe++, 0);
      return input.progress().received_events > 0;
    }));
    std::this_thread::sleep_for(std::chrono::milliseconds(100)); // the last probes arrive too
    return input.progress().received_events;
  }

  zmq::context_t context_;
  fanout::Publisher publisher_;
};

constexpr uint64_t kEventsPerBatch = 6; // three calls

TEST_F(LiveInputTest, CountsWhatItReceivedBeforeTheAnalysisTakesIt) {
  LiveInput input(publisher_.endpoint());
  const uint64_t probes = join(input);
  for (uint64_t i = 0; i < 50; ++i) publish(1, i);
  const uint64_t sent = probes + 50 * kEventsPerBatch;
  ASSERT_TRUE(eventually([&] { return input.progress().received_events == sent; }))
      << input.progress().received_events << " of " << sent;

  // Nothing fed yet: everything received waits.
  LiveProgress p = input.progress();
  EXPECT_EQ(p.analysed_events, 0u);
  EXPECT_EQ(p.waiting_events, sent);
  EXPECT_EQ(p.missed_items, 0u);

  Analyzer analyzer;
  input.catchUp(analyzer, [] { return false; }, "test");
  p = input.progress();
  EXPECT_EQ(p.received_events, sent);
  EXPECT_EQ(p.analysed_events, sent);
  EXPECT_EQ(p.waiting_events, 0u);
  EXPECT_EQ(analyzer.snapshot().events, sent);

  // After catching up nothing more is received: the view ends with what it had.
  publish(2, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(input.progress().received_events, sent);
}

TEST_F(LiveInputTest, StoppedAtOnceWhatWaitsStaysCountedAsWaiting) {
  LiveInput input(publisher_.endpoint());
  const uint64_t probes = join(input);
  Analyzer analyzer;
  // Half fed, half left waiting when the user stops at once (a second Ctrl-C).
  while (input.progress().waiting_events > 0) input.feed(analyzer, std::chrono::milliseconds(0));
  for (uint64_t i = 0; i < 10; ++i) publish(1, i);
  ASSERT_TRUE(eventually(
      [&] { return input.progress().received_events == probes + 10 * kEventsPerBatch; }));
  input.catchUp(analyzer, [] { return true; }, "test");
  const LiveProgress p = input.progress();
  EXPECT_EQ(p.analysed_events, probes);
  EXPECT_EQ(p.waiting_events, 10 * kEventsPerBatch);
  EXPECT_EQ(p.received_events, p.analysed_events + p.waiting_events);
}

} // namespace
} // namespace shapetrace::analyzer
