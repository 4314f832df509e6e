// "Why was this call slow" compares a call with a typical one: of its own shape when it did the same
// work slower, else of the nearest common shape of its function by the Shape metric (a put that
// waited for a flush is compared with a put, not with the more frequent get).
#include "analyzer.h"
#include "summaries/sequences.h"
#include "trace_builder.h"

#include <gtest/gtest.h>

namespace shapetrace::analyzer {
namespace {

using testing::call;
using testing::Call;
using testing::eventsOf;

constexpr uint32_t kServe = 1, kGet = 2, kFind = 3, kPut = 4, kInsert = 5, kWaitForFlush = 6;

// 60 gets, 30 puts and 3 puts that waited for a flush, as calls of serve on one thread.
Analysis requests() {
  std::vector<Call> calls;
  for (int i = 0; i < 60; ++i) calls.push_back(call(kServe, {call(kGet, {call(kFind)})}));
  for (int i = 0; i < 30; ++i) calls.push_back(call(kServe, {call(kPut, {call(kInsert)})}));
  for (int i = 0; i < 3; ++i)
    calls.push_back(call(kServe, {call(kPut, {call(kInsert), call(kWaitForFlush, {}, 5000)})}));
  Analyzer analyzer(AnalysisSettings{}, 1);
  analyzer.consume(testing::batchItem(7, 1, 0, eventsOf(calls)));
  analyzer.finish();
  return analyzer.snapshot();
}

// The shape of serve's calls whose child is `child` with the given grandchildren.
ShapeId serveShape(const Analysis& a, uint32_t child, std::vector<uint32_t> grandchildren) {
  for (ShapeId s = 1; s < a.shapes.size(); ++s) {
    if (a.functions[a.shapes.function(s)].name != "fn#1") continue;
    const auto children = a.shapes.children(s);
    if (children.size() != 1 || a.functions[a.shapes.function(children[0])].name !=
                                    "fn#" + std::to_string(child))
      continue;
    std::vector<uint32_t> below;
    for (ShapeId g : a.shapes.children(children[0]))
      below.push_back(static_cast<uint32_t>(std::stoul(a.functions[a.shapes.function(g)].name.substr(3))));
    std::sort(below.begin(), below.end());
    if (below == grandchildren) return s;
  }
  return kNullShape;
}

uint32_t functionIndex(const Analysis& a, uint32_t id) {
  for (uint32_t i = 0; i < a.functions.size(); ++i)
    if (a.functions[i].name == "fn#" + std::to_string(id)) return i;
  return UINT32_MAX;
}

TEST(TypicalCall, OtherWorkIsComparedWithTheNearestCommonShapeNotTheMostFrequent) {
  const Analysis a = requests();
  const ShapeId get = serveShape(a, kGet, {kFind}), put = serveShape(a, kPut, {kInsert}),
                flush = serveShape(a, kPut, {kInsert, kWaitForFlush});
  ASSERT_NE(get, kNullShape);
  ASSERT_NE(put, kNullShape);
  ASSERT_NE(flush, kNullShape);
  ASSERT_EQ(summaries::typicalShape(a, functionIndex(a, kServe)), get); // the most frequent
  const summaries::TypicalShape choice =
      summaries::typicalShapeFor(a, functionIndex(a, kServe), flush, false);
  EXPECT_EQ(choice.shape, put);
  EXPECT_EQ(choice.reason, "it did other work than its function's usual calls (shape #" +
                               std::to_string(flush) + ", 3 calls); shape #" +
                               std::to_string(put) +
                               " is the common shape of the function nearest to it (Shape "
                               "metric 0.5, 30 calls)");
  // A common shape whose calls are the function's slow path is compared the same way.
  EXPECT_EQ(summaries::typicalShapeFor(a, functionIndex(a, kServe), put, false).shape, get);
}

TEST(TypicalCall, TheSameWorkSlowerIsComparedWithItsOwnShape) {
  const Analysis a = requests();
  const ShapeId put = serveShape(a, kPut, {kInsert});
  const summaries::TypicalShape choice =
      summaries::typicalShapeFor(a, functionIndex(a, kServe), put, true);
  EXPECT_EQ(choice.shape, put);
  EXPECT_EQ(choice.reason, "its own shape (30 calls): it did the same work as they do, slower");
}

TEST(TypicalCall, AnUnknownShapeFallsBackToTheMostCommonAndAFunctionCalledOnceHasNone) {
  const Analysis a = requests();
  const summaries::TypicalShape unknown =
      summaries::typicalShapeFor(a, functionIndex(a, kServe), kNullShape, true);
  const ShapeId get = serveShape(a, kGet, {kFind});
  EXPECT_EQ(unknown.shape, get);
  EXPECT_EQ(unknown.reason, "its own shape is not known: the function's most common shape (60 "
                            "calls)");

  Analyzer once(AnalysisSettings{}, 1);
  once.consume(testing::batchItem(7, 1, 0, eventsOf({call(kServe)})));
  once.finish();
  const Analysis b = once.snapshot();
  EXPECT_EQ(summaries::typicalShapeFor(b, 0, 1, false).shape, kNullShape);
  EXPECT_EQ(summaries::typicalShapeFor(b, 0, 1, true).shape, kNullShape);
}

} // namespace
} // namespace shapetrace::analyzer
