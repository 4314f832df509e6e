// The delta+varint event encoding: exact bytes, round trips and rejection of bad input.
#include "wire/event_codec.h"
#include "wire/format_error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <random>

namespace shapetrace::wire {
namespace {

using ::testing::ElementsAre;

TEST(EventCodec, ExactBytesOfASmallBatch) {
  std::vector<Event> events = {{100, 5, EventKind::Enter},
                               {164, 300, EventKind::Exit},
                               {163, 5, EventKind::UnwindExit},
                               {165, 7, EventKind::AbandonedExit}};
  std::vector<uint8_t> out;
  EXPECT_EQ(encodeEvents(events, 100, out), 10u);
  // delta 0 -> zigzag 0 -> head 0|0; id 5.
  // delta 64 -> zigzag 128 -> head 512|1 = 513 = varint 0x81 0x04; id 300 = 0xac 0x02.
  // delta -1 -> zigzag 1 -> head 4|2 = 6; id 5.
  // delta 2 -> zigzag 4 -> head 16|3 = 19; id 7.
  EXPECT_THAT(out, ElementsAre(0x00, 0x05, 0x81, 0x04, 0xac, 0x02, 0x06, 0x05, 0x13, 0x07));
  std::vector<Event> decoded;
  decodeEvents(out, 4, 100, decoded);
  EXPECT_EQ(decoded, events);
}

TEST(EventCodec, RandomBatchesRoundTrip) {
  std::mt19937_64 random(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<Event> events(random() % 5000);
    uint64_t t = random();
    for (Event& e : events) {
      t += random() % (round % 2 ? 1000 : (uint64_t{1} << 40)) - 10;
      e = {t, static_cast<uint32_t>(random()), static_cast<EventKind>(random() % kEventKindCount)};
    }
    uint64_t base = events.empty() ? 0 : events[0].timestamp - 3;
    std::vector<uint8_t> out;
    encodeEvents(events, base, out);
    std::vector<Event> decoded;
    decodeEvents(out, static_cast<uint32_t>(events.size()), base, decoded);
    ASSERT_EQ(decoded, events);
  }
}

TEST(EventCodec, AppendsAfterExistingContent) {
  std::vector<uint8_t> out = {0xff};
  encodeEvents(std::vector<Event>{{1, 1, EventKind::Enter}}, 1, out);
  EXPECT_THAT(out, ElementsAre(0xff, 0x00, 0x01));
  std::vector<Event> decoded = {{9, 9, EventKind::Exit}};
  decodeEvents(std::span(out).subspan(1), 1, 1, decoded);
  EXPECT_EQ(decoded.size(), 2u);
}

TEST(EventCodec, EncoderBuildsTheSameBytesOneEventAtATime) {
  std::vector<Event> events = {{100, 5, EventKind::Enter},
                               {164, 300, EventKind::Exit},
                               {163, 5, EventKind::UnwindExit}};
  EventEncoder encoder;
  encoder.start(3);
  EXPECT_EQ(encoder.base(), 0u);
  for (const Event& e : events) {
    EXPECT_FALSE(encoder.full());
    encoder.append(e.timestamp, e.function_id, e.kind);
  }
  EXPECT_TRUE(encoder.full());
  EXPECT_EQ(encoder.count(), 3u);
  // The first event is the base: the bytes of ExactBytesOfASmallBatch.
  EXPECT_EQ(encoder.base(), 100u);
  EXPECT_THAT(encoder.bytes(), ElementsAre(0x00, 0x05, 0x81, 0x04, 0xac, 0x02, 0x06, 0x05));

  // clear() begins a new batch with a new base, reusing the buffer.
  encoder.clear();
  EXPECT_EQ(encoder.count(), 0u);
  encoder.append(7, 1, EventKind::Exit);
  EXPECT_FALSE(encoder.full());
  EXPECT_EQ(encoder.base(), 7u);
  EXPECT_THAT(encoder.bytes(), ElementsAre(0x01, 0x01));
}

void expectBadEvents(std::vector<uint8_t> bytes, uint32_t count) {
  std::vector<Event> decoded = {{9, 9, EventKind::Exit}};
  try {
    decodeEvents(bytes, count, 0, decoded);
    ADD_FAILURE() << "accepted";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.reason(), FormatErrorReason::BadEvents);
  }
  EXPECT_EQ(decoded.size(), 1u) << "a failed decode leaves the output as it was";
}

TEST(EventCodec, RejectsCutShortTrailingAndWideIds) {
  expectBadEvents({0x00, 0x05, 0x81}, 2);             // second event cut short
  expectBadEvents({0x00, 0x05, 0x00}, 1);             // a byte after the last event
  expectBadEvents({0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 1); // id beyond 32 bits
  expectBadEvents(std::vector<uint8_t>(11, 0x80), 1); // a varint longer than 64 bits
  expectBadEvents({0x00, 0x01}, 1000000);             // more events than bytes can hold
}

// The same checks where the decoder reads without bounds checks (20 bytes or more remain).
TEST(EventCodec, RejectsBadEventsWhereManyBytesRemain) {
  std::vector<uint8_t> padding(40, 0x00); // 20 more events of head 0, id 0
  auto with = [&](std::vector<uint8_t> bad) {
    bad.insert(bad.end(), padding.begin(), padding.end());
    return bad;
  };
  expectBadEvents(with({0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}), 21);       // id beyond 32 bits
  expectBadEvents(std::vector<uint8_t>(40, 0x80), 1); // a varint longer than 64 bits
  std::vector<uint8_t> head_too_long(10, 0xff);       // ten bytes, all continued
  head_too_long.push_back(0x01);
  expectBadEvents(with(head_too_long), 21);
}

} // namespace
} // namespace shapetrace::wire
