// Unit tests of the per-thread event ring: wrap-around, full, pairs, and a concurrent producer and
// consumer (the 'sanitize' label reruns this under ThreadSanitizer).
#include "ring.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace shapetrace::rt {
namespace {

Event event(uint64_t i) { return Event{i, uint32_t(i * 7), EventKind(i % 3)}; }

struct RingFixture : ::testing::Test {
  std::vector<Event> slots = std::vector<Event>(8);
  EventRing ring{slots.data(), 8};

  std::vector<Event> takeAll() {
    std::vector<Event> out;
    const uint64_t head = ring.readable();
    for (uint64_t i = ring.released(); i < head; ++i)
      out.push_back(ring.at(i));
    ring.release(head);
    return out;
  }
};

TEST_F(RingFixture, FillsToCapacityThenRefuses) {
  for (uint64_t i = 0; i < 8; ++i)
    EXPECT_TRUE(ring.tryPush(event(i)));
  EXPECT_FALSE(ring.tryPush(event(8)));
  EXPECT_FALSE(ring.tryPushPair(event(8), event(9)));
  const auto taken = takeAll();
  ASSERT_EQ(taken.size(), 8u);
  for (uint64_t i = 0; i < 8; ++i)
    EXPECT_EQ(taken[i], event(i));
}

TEST_F(RingFixture, WrapsAroundKeepingOrder) {
  uint64_t next = 0, expected = 0;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 5; ++i)
      ASSERT_TRUE(ring.tryPush(event(next++)));
    for (const Event& taken : takeAll())
      ASSERT_EQ(taken, event(expected++));
  }
  EXPECT_EQ(expected, 250u);
  EXPECT_EQ(ring.readable(), 250u); // indices run freely, slots wrap
}

TEST_F(RingFixture, PartialReleaseFreesExactlyThatManySlots) {
  for (uint64_t i = 0; i < 8; ++i)
    ASSERT_TRUE(ring.tryPush(event(i)));
  ring.release(ring.released() + 3);
  EXPECT_EQ(ring.freeSlots(), 3u);
  EXPECT_TRUE(ring.tryPushPair(event(8), event(9)));
  EXPECT_TRUE(ring.tryPush(event(10)));
  EXPECT_FALSE(ring.tryPush(event(11)));
  const auto taken = takeAll();
  ASSERT_EQ(taken.size(), 8u);
  EXPECT_EQ(taken.front(), event(3));
  EXPECT_EQ(taken.back(), event(10));
}

TEST_F(RingFixture, PairNeedsTwoFreeSlots) {
  for (uint64_t i = 0; i < 7; ++i)
    ASSERT_TRUE(ring.tryPush(event(i)));
  EXPECT_FALSE(ring.tryPushPair(event(7), event(8)));
  EXPECT_EQ(ring.readable(), 7u); // nothing half-written
  EXPECT_TRUE(ring.tryPush(event(7)));
}

TEST(EventRingConcurrent, ConsumerSeesEveryPushedEventInOrder) {
  constexpr uint64_t kEvents = 2000000;
  std::vector<Event> slots(64);
  EventRing ring(slots.data(), slots.size());
  uint64_t pushed = 0, refused = 0;
  std::thread producer([&] {
    for (uint64_t i = 0; i < kEvents; ++i) {
      while (!ring.tryPush(event(i)))
        ++refused;
      ++pushed;
    }
  });
  uint64_t expected = 0;
  while (expected < kEvents) {
    const uint64_t head = ring.readable();
    for (uint64_t i = ring.released(); i < head; ++i)
      ASSERT_EQ(ring.at(i), event(expected++));
    ring.release(head);
  }
  producer.join();
  EXPECT_EQ(pushed, kEvents);
  EXPECT_EQ(expected, kEvents);
}

} // namespace
} // namespace shapetrace::rt
