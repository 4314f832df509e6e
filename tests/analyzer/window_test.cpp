// Time windows of a recording (input.h): parsing "FROM..TO", and the WindowFilter that lets only
// the calls of a window through: the events in it, without the exits of calls entered before it,
// so that the analysis of a window holds exactly the calls that started in it.
#include "analyzer.h"
#include "input.h"
#include "trace_builder.h"

#include <gtest/gtest.h>

namespace shapetrace::analyzer {
namespace {

using testing::batchItem;

Event enter(uint64_t t, uint32_t f) { return Event{t, f, EventKind::Enter}; }
Event leave(uint64_t t, uint32_t f) { return Event{t, f, EventKind::Exit}; }

TEST(TimeWindowTest, ParsesUnitsAndOpenEnds) {
  const TimeWindow w = parseTimeWindow("2.5s..4s");
  EXPECT_EQ(w.from, "2.5s");
  EXPECT_EQ(w.to, "4s");
  EXPECT_EQ(parseTimeWindow("3s..").to, "");
  EXPECT_EQ(parseTimeWindow("..20us").from, "");
  EXPECT_TRUE(parseTimeWindow("..").whole());
  // Resolved against the recording's first event; digits alone are absolute nanoseconds.
  WindowFilter filter(parseTimeWindow("1us..1500"), 1000);
  auto item = batchItem(1, 7, 0, {enter(1999, 1), leave(2000, 1), enter(2001, 2), leave(1600, 2)});
  ASSERT_FALSE(filter.admit(item)); // [2000, 1500): nothing
}

TEST(TimeWindowTest, BadWindowsSayWhatIsWrong) {
  auto message = [](const char* text) {
    try {
      parseTimeWindow(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("5s"), "time window '5s': expected FROM..TO (for example 2s..5s, ..10s, 500ms..)");
  EXPECT_EQ(message("5m..6m"), "time window '5m..6m': '5m' is not a time (absolute nanoseconds, or a "
                               "number with a unit ns, us, ms or s from the run's start, e.g. 1.5s)");
  EXPECT_EQ(message("4s..2s"), "time window '4s..2s': FROM is not before TO");
  EXPECT_EQ(message("400..300"), "time window '400..300': FROM is not before TO");
  EXPECT_EQ(message("1s..5000"), "no error"); // relative and absolute: checked against the recording
}

TEST(WindowFilterTest, KeepsTheCallsThatStartInTheWindow) {
  // Relative to a first event at 1000: the window [100, 300) is [1100, 1300).
  WindowFilter filter(parseTimeWindow("100ns..300ns"), 1000);
  // main (1) enters before the window; a (2) before and returns inside; b (3) inside and returns
  // inside; c (4) inside, still open when the window ends; d (5) after.
  auto item = batchItem(1, 7, 0,
                        {enter(1000, 1), enter(1050, 2), leave(1150, 2), enter(1200, 3),
                         leave(1210, 3), enter(1250, 4), leave(1310, 4), enter(1320, 5),
                         leave(1330, 5), leave(1400, 1)});
  ASSERT_TRUE(filter.admit(item));
  const auto& events = std::get<wire::EventBatch>(item.body).events;
  EXPECT_EQ(events, (std::vector<Event>{enter(1200, 3), leave(1210, 3), enter(1250, 4)}));
}

TEST(WindowFilterTest, CountsOpenCallsAcrossBatchesAndThreads) {
  WindowFilter filter(parseTimeWindow("100ns.."), 0);
  auto before = batchItem(1, 7, 0, {enter(10, 1), enter(20, 2)});
  EXPECT_FALSE(filter.admit(before)); // nothing of it is in the window
  auto other = batchItem(1, 8, 0, {enter(150, 2), leave(160, 2)});
  EXPECT_TRUE(filter.admit(other)); // another thread has nothing open before
  EXPECT_EQ(std::get<wire::EventBatch>(other.body).events.size(), 2u);
  auto inside = batchItem(1, 7, 1, {enter(120, 3), leave(130, 3), leave(140, 2), leave(150, 1)});
  ASSERT_TRUE(filter.admit(inside));
  EXPECT_EQ(std::get<wire::EventBatch>(inside.body).events,
            (std::vector<Event>{enter(120, 3), leave(130, 3)}));
}

TEST(WindowFilterTest, OtherItemsPassAndGapsOutsideAreDropped) {
  WindowFilter filter(parseTimeWindow("100ns..200ns"), 0);
  wire::StreamItem name{1, wire::ThreadName{7, 5, "worker"}};
  EXPECT_TRUE(filter.admit(name));
  wire::StreamItem early{1, wire::Gap{7, 3, wire::kNoSequence, 10, 20}};
  EXPECT_FALSE(filter.admit(early));
  wire::StreamItem inside{1, wire::Gap{7, 3, wire::kNoSequence, 150, 160}};
  EXPECT_TRUE(filter.admit(inside));
  wire::StreamItem late{1, wire::Gap{7, 3, wire::kNoSequence, 250, 260}};
  EXPECT_FALSE(filter.admit(late));
}

TEST(WindowFilterTest, TheAnalysisOfAWindowHoldsItsCalls) {
  Analyzer analyzer;
  WindowFilter filter(parseTimeWindow("100ns..300ns"), 1000);
  auto item = batchItem(1, 7, 0,
                        {enter(1000, 1), enter(1050, 2), leave(1150, 2), enter(1200, 3),
                         leave(1210, 3), enter(1220, 3), leave(1240, 3), leave(1400, 1)});
  ASSERT_TRUE(filter.admit(item));
  analyzer.consume(std::move(item));
  analyzer.finish();
  const Analysis a = analyzer.snapshot();
  EXPECT_EQ(a.calls, 2u); // the two calls of 3
  EXPECT_EQ(a.diagnostics.count(Stat::unmatched_exits), 0u);
}

} // namespace
} // namespace shapetrace::analyzer
