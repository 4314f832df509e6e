// Round trips of every stream item, and rejection of every kind of bad message with FormatError.
#include "schema/stream.capnp.h"
#include "wire/codec.h"
#include "wire/format_error.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <cmath>
#include <cstring>
#include <functional>
#include <gtest/gtest.h>
#include <limits>
#include <random>

namespace shapetrace::wire {
namespace {

std::vector<StreamItem> everyItem() {
  ProcessStart start;
  start.pid = 4242;
  start.parent_pid = 1;
  start.parent_process = 0x1122334455667788;
  start.executable = "/usr/bin/kvstore";
  start.arguments = {"kvstore", "--threads", "4", ""};
  start.hostname = "host-a";
  start.start_ns = 123456789;
  start.start_realtime_ns = -5;
  start.clock = {ClockSource::Tsc, 2.1, 999, 123456000};
  start.config = {{"SHAPETRACE_RING", "16777216"}, {"SHAPETRACE_ENDPOINT", "ipc:///tmp/x"}};

  ModuleTable table;
  table.module_id = "kv.cpp";
  table.base_id = 17;
  table.functions = {{17, "_Z3getv", "get()", "kv.cpp", 12},
                     {18, "main", "main", "", 0},
                     {19, "_Z4hashv", "hash()", "kv.cpp", 20, Exclusion::kByRule},
                     {20, "_Z4tinyv", "tiny()", "kv.cpp", 30, Exclusion::kBySize}};

  EventBatch batch;
  batch.thread = 77;
  batch.sequence = 9;
  batch.events = {{1000, 17, EventKind::Enter},
                  {1010, 18, EventKind::Enter},
                  {1005, 18, EventKind::UnwindExit}, // a clock that stepped back still round-trips
                  {1006, 17, EventKind::AbandonedExit},
                  {UINT64_MAX, UINT32_MAX, EventKind::Exit}};
  // Marks at the start, between events and after the last one.
  batch.annotations = {{77, 999, "request_bytes", 512, 0}, {77, 1011, "phase", -1, 2},
                       {77, 1011, "phase", -2, 2}, {77, UINT64_MAX, "last", 0, 5}};
  batch.tracer_waits = {{1, 1001, 7}, {5, UINT64_MAX - 9, 9}};
  batch.throttles = {{2, 1010, 18, 100000}, {5, UINT64_MAX, UINT32_MAX, UINT64_MAX}};
  ProcessEnd throttled_end{8500, 10, 0, 0, EndReason::Exit, ""};
  throttled_end.throttled_calls = {{18, 900}, {17, UINT64_MAX}};
  ProcessStart exec_start = start;
  exec_start.origin = ProcessOrigin::Exec;
  exec_start.previous_image = 0x99aabbccddeeff00;
  ProcessEnd exec_end{8100, 10, 0, 0, EndReason::Exec, "/bin/true"};

  return {
      {1, start},
      {2, table},
      {3, ThreadStart{77, 5000, "worker-0"}},
      {4, ThreadName{77, 6000, "renamed"}},
      {5, ThreadEnd{77, 7000, 100, 3, 9}},
      {6, batch},
      {7, EventBatch{78, 0, {}, {}, {}, {}}},
      {8, Gap{77, 250, 8, 2000, 3000}},
      {9, Gap{77, 1, kNoSequence, 10, 10}},
      {10, Annotation{77, 1500, "request_bytes", -42}},
      {11, ProcessEnd{8000, 1000, 3, 2, EndReason::Exit, ""}},
      {12, exec_start},
      {13, exec_end},
      {14, ProcessEnd{8200, 5, 0, 7, EndReason::ExitImmediately, ""}},
      {15, ExecFailed{8300, "/no/such/program", 2}},
      {16, ExitStatus{4242, 9000, -1, 9, true}},
      {0, ExitStatus{4243, 9100, 3, 0, false}},
      {17, ProcessEnd{8400, 9, 0, 15, EndReason::Signal, ""}},
      {18, throttled_end},
  };
}

TEST(Codec, EveryItemRoundTrips) {
  for (const StreamItem& item : everyItem()) {
    SCOPED_TRACE(itemKindName(item.kind()));
    Bytes message = encodeItem(item);
    EXPECT_EQ(message.size() % 8, 0u);
    EXPECT_EQ(decodeItem(message), item);
  }
}

TEST(Codec, PeekGivesHeaderWithoutEvents) {
  auto items = everyItem();
  ItemHeader batch = peekItem(encodeItem(items[5]));
  EXPECT_EQ(batch.process, 6u);
  EXPECT_EQ(batch.kind, ItemKind::EventBatch);
  EXPECT_EQ(batch.thread, 77u);
  EXPECT_EQ(batch.sequence, 9u);
  EXPECT_EQ(batch.event_count, 5u);
  EXPECT_EQ(batch.first_ns, 1000u);

  ItemHeader gap = peekItem(encodeItem(items[7]));
  EXPECT_EQ(gap.kind, ItemKind::Gap);
  EXPECT_EQ(gap.thread, 77u);
  EXPECT_EQ(gap.first_ns, 2000u);

  ItemHeader failed = peekItem(encodeItem(items[14]));
  EXPECT_EQ(failed.kind, ItemKind::ExecFailed);
  EXPECT_EQ(failed.first_ns, 8300u);
  ItemHeader status = peekItem(encodeItem(items[15]));
  EXPECT_EQ(status.kind, ItemKind::ExitStatus);
  EXPECT_EQ(status.process, 16u);
  EXPECT_EQ(status.thread, 0u);
  EXPECT_EQ(status.first_ns, 9000u);
}

TEST(Codec, EncodeEventBatchEqualsEncodeItem) {
  std::vector<Event> events = {{10, 1, EventKind::Enter}, {20, 1, EventKind::Exit}};
  Bytes direct = encodeEventBatch(5, 6, 7, events);
  EXPECT_EQ(decodeItem(direct), (StreamItem{5, EventBatch{6, 7, events, {}, {}, {}}}));
}

// A batch written by hand with one call value that `fill` sets: values a writer of ours never makes.
Bytes withOneValue(const std::function<void(schema::CallValue::Builder)>& fill) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<schema::StreamItem>();
  root.setVersion(kFormatVersion);
  auto batch = root.initEventBatch();
  batch.setCount(0);
  batch.setEncoding(schema::EventEncoding::DELTA_VARINT);
  fill(batch.initCallValues(1)[0].initValues(1)[0]);
  const auto words = capnp::messageToFlatArray(message);
  const auto bytes = std::as_bytes(std::span(words.begin(), words.size()));
  return Bytes(bytes.begin(), bytes.end());
}

FormatErrorReason reasonOf(std::span<const std::byte> message) {
  try {
    decodeItem(message);
  } catch (const FormatError& e) {
    return e.reason();
  }
  ADD_FAILURE() << "message was accepted";
  return FormatErrorReason::Malformed;
}

// The runtime's path: an encoder's events with the batch's marks.
TEST(Codec, EncodeEventBatchCarriesItsMarks) {
  EventEncoder encoder;
  encoder.start(4);
  encoder.append(10, 1, EventKind::Enter);
  encoder.append(20, 1, EventKind::Exit);
  const std::vector<Annotation> notes{{6, 15, "size", 4096, 1}};
  const std::vector<TracerWait> waits{{1, 12, 3}};
  const Bytes message = encodeEventBatch(5, 6, 7, encoder, {notes, waits, {}});
  const std::vector<Event> events{{10, 1, EventKind::Enter}, {20, 1, EventKind::Exit}};
  EXPECT_EQ(decodeItem(message), (StreamItem{5, EventBatch{6, 7, events, notes, waits, {}}}));
}

// A mark placed after the batch's end or before the previous mark's place is refused, as is
// anything else a writer never produces: a reader could not place it.
TEST(Codec, MisplacedBatchMarksAreRejected) {
  const std::vector<Event> events{{10, 1, EventKind::Enter}, {20, 1, EventKind::Exit}};
  const auto encoded = [&](std::vector<Annotation> notes, std::vector<TracerWait> waits) {
    return encodeItem(StreamItem{5, EventBatch{6, 7, events, std::move(notes), std::move(waits), {}}});
  };
  EXPECT_EQ(reasonOf(encoded({{6, 15, "size", 1, 3}}, {})), FormatErrorReason::BadValue);
  EXPECT_EQ(reasonOf(encoded({}, {{3, 15, 1}})), FormatErrorReason::BadValue);
  EXPECT_EQ(reasonOf(encoded({{6, 15, "a", 1, 2}, {6, 12, "b", 1, 1}}, {})),
            FormatErrorReason::BadValue);
  EXPECT_EQ(reasonOf(encoded({}, {{2, 15, 1}, {0, 9, 1}})), FormatErrorReason::BadValue);
}

// Arguments and return values: every type, positions 0 (the return value) to 255, 64-bit values
// kept exactly, the runtime's path and the item's; misplaced ones refused like other marks; a type
// a newer writer added read as unsigned.
TEST(Codec, CallValuesRoundTrip) {
  const std::vector<Event> events{{10, 1, EventKind::Enter}, {20, 1, EventKind::Exit}};
  const std::vector<CallValues> values{
      {1, 1, {{1, ValueType::Signed, uint64_t(-3)}, {2, ValueType::Unsigned, UINT64_MAX},
              {3, ValueType::Pointer, 0x7ffd1234abcdULL}, {255, ValueType::Float,
                                                           0x400c000000000000ULL}}},
      {1, 1, {{0, ValueType::Signed, 42}}}};
  const StreamItem item{5, EventBatch{6, 7, events, {}, {}, {}, values}};
  EXPECT_EQ(decodeItem(encodeItem(item)), item);
  EventEncoder encoder;
  encoder.start(2);
  encoder.append(10, 1, EventKind::Enter);
  encoder.append(20, 1, EventKind::Exit);
  EXPECT_EQ(decodeItem(encodeEventBatch(5, 6, 7, encoder, {{}, {}, {}, values})), item);
  EXPECT_TRUE(values[1].returned());
  EXPECT_FALSE(values[0].returned());
  EXPECT_EQ(describeCallValues(values[0]), "arg1=-3 arg2=18446744073709551615 arg3=0x7ffd1234abcd arg255=3.5");
  EXPECT_EQ(describeCallValues(values[1]), "= 42");
  EXPECT_EQ(valueAsDouble(values[0].values[0]), -3.0);
  EXPECT_EQ(valueAsDouble(values[0].values[3]), 3.5);

  const auto placed = [&](uint32_t first, uint32_t second) {
    return encodeItem(StreamItem{
        5, EventBatch{6, 7, events, {}, {}, {}, {{first, 1, {{1, ValueType::Signed, 1}}},
                                            {second, 1, {{0, ValueType::Signed, 2}}}}}});
  };
  EXPECT_EQ(reasonOf(placed(1, 3)), FormatErrorReason::BadValue);
  EXPECT_EQ(reasonOf(placed(2, 1)), FormatErrorReason::BadValue);
  EXPECT_NO_THROW(decodeItem(placed(0, 2)));

  const Bytes unknown_type = withOneValue([](schema::CallValue::Builder value) {
    value.setType(static_cast<schema::ValueType>(9));
    value.setBits(77);
  });
  const auto decoded = std::get<EventBatch>(decodeItem(unknown_type).body);
  ASSERT_EQ(decoded.call_values.size(), 1u);
  EXPECT_EQ(decoded.call_values[0].values[0], (CallValue{0, ValueType::Unsigned, 77}));
}

// String values (FUNCTION@argN/s): the text and its state round-trip, are shown as uftrace's replay
// shows them (quoted, cut ones marked, bytes that are not UTF-8 escaped), and a text over
// kMaxValueText is refused however the message carried it; a state a newer writer added reads as
// truncated (not known to be whole).
TEST(Codec, StringValuesRoundTripAndAreBounded) {
  const std::vector<Event> events{{10, 1, EventKind::Enter}};
  auto text = [](std::string bytes, TextState state, uint64_t address = 0x1000) {
    CallValue value{1, ValueType::String, address};
    value.text = std::move(bytes);
    value.text_state = state;
    return value;
  };
  const std::vector<CallValues> values{
      {1, 1,
       {text("/etc/passwd", TextState::Complete), text("", TextState::Complete, 0),
        text("abc", TextState::Truncated), text("", TextState::Unreadable, 0xdead),
        text("ta", TextState::Unreadable, 0xbeef), text("", TextState::Redacted),
        text("say \"caf\xc3\xa9\"\n\t\\ \xff\x01", TextState::Complete)}}};
  const StreamItem item{5, EventBatch{6, 7, events, {}, {}, {}, values}};
  EXPECT_EQ(decodeItem(encodeItem(item)), item);
  EXPECT_EQ(describeCallValues(values[0]),
            "arg1=\"/etc/passwd\" arg1=null arg1=\"abc\"... arg1=<unreadable 0xdead> "
            "arg1=\"ta\"...<unreadable 0xbeef> arg1=<redacted> "
            "arg1=\"say \\\"caf\xc3\xa9\\\"\\n\\t\\\\ \\xff\\x01\"");
  EXPECT_STREQ(valueTypeName(ValueType::String), "string");
  // What a terminal would act on is escaped: a C1 CSI (U+009B), a right-to-left override
  // (U+202E) and isolate (U+2067); other characters, é and U+00A0 included, stay as they are.
  EXPECT_EQ(quoteText("a\xc2\x9b" "31mb \xe2\x80\xae" "cba \xe2\x81\xa7x \xc3\xa9\xc2\xa0"),
            "\"a\\u009b31mb \\u202ecba \\u2067x \xc3\xa9\xc2\xa0\"");

  // Written by hand: a text of kMaxValueText + 1 bytes, and an unknown state.
  const auto withText = [](size_t bytes, uint16_t state) {
    return withOneValue([&](schema::CallValue::Builder value) {
      value.setType(schema::ValueType::STRING);
      value.setBits(1);
      value.initText(unsigned(bytes));
      value.setTextState(static_cast<schema::TextState>(state));
    });
  };
  EXPECT_EQ(reasonOf(withText(kMaxValueText + 1, 0)), FormatErrorReason::Oversized);
  const auto decoded = std::get<EventBatch>(decodeItem(withText(kMaxValueText, 7)).body);
  ASSERT_EQ(decoded.call_values.size(), 1u);
  EXPECT_EQ(decoded.call_values[0].values[0].text.size(), kMaxValueText);
  EXPECT_EQ(decoded.call_values[0].values[0].text_state, TextState::Truncated);
  // Every cut of a message carrying a text is refused, never read past its end.
  const Bytes message = encodeItem(item);
  for (size_t length = 0; length < message.size(); ++length) {
    const FormatErrorReason reason = reasonOf(std::span(message).first(length));
    EXPECT_TRUE(reason == FormatErrorReason::Truncated || reason == FormatErrorReason::Malformed)
        << length << ": " << formatErrorReasonName(reason);
  }
}

TEST(Codec, EveryTruncationIsRejected) {
  Bytes message = encodeItem(everyItem()[0]);
  for (size_t length = 0; length < message.size(); ++length) {
    SCOPED_TRACE(length);
    FormatErrorReason reason = reasonOf(std::span(message).first(length));
    EXPECT_TRUE(reason == FormatErrorReason::Truncated || reason == FormatErrorReason::Malformed)
        << formatErrorReasonName(reason);
  }
}

TEST(Codec, TrailingBytesAreRejected) {
  Bytes message = encodeItem(everyItem()[2]);
  message.resize(message.size() + 8);
  EXPECT_EQ(reasonOf(message), FormatErrorReason::Malformed);
}

TEST(Codec, OversizedMessageIsRejectedBeforeParsing) {
  Bytes message(kMaxMessageBytes + 8);
  EXPECT_EQ(reasonOf(message), FormatErrorReason::Oversized);
}

// A message declaring a huge first segment (the segment table says so) is refused by the reader,
// not trusted for an allocation.
TEST(Codec, LyingSegmentTableIsRejected) {
  Bytes message = encodeItem(everyItem()[2]);
  uint32_t huge = 0x0fffffff;
  std::memcpy(message.data() + 4, &huge, sizeof(huge));
  EXPECT_EQ(reasonOf(message), FormatErrorReason::Truncated);
}

TEST(Codec, OtherFormatVersionIsRejected) {
  capnp::MallocMessageBuilder builder;
  auto root = builder.initRoot<schema::StreamItem>();
  root.setVersion(kFormatVersion + 1);
  root.initThreadStart().setThread(1);
  auto words = capnp::messageToFlatArray(builder);
  auto bytes = std::as_bytes(std::span(words.begin(), words.size()));
  EXPECT_EQ(reasonOf(bytes), FormatErrorReason::UnsupportedVersion);
}

TEST(Codec, UnknownItemKindIsRejected) {
  Bytes message = encodeItem(everyItem()[2]);
  // Layout (capnp compile -ocapnp): the union discriminant is the second 16-bit field of the root's
  // data section, which starts after the segment table (8 bytes) and the root pointer (8 bytes).
  uint16_t future = 200;
  std::memcpy(message.data() + 16 + 2, &future, sizeof(future));
  EXPECT_EQ(reasonOf(message), FormatErrorReason::UnknownItem);
}

// Every clock source round-trips; a source this reader does not know (a newer writer's enum value)
// reads as monotonic, as this reader's predecessors read genericTimer.
TEST(Codec, ClockSourcesRoundTripAndUnknownOnesReadAsMonotonic) {
  for (ClockSource source : {ClockSource::Tsc, ClockSource::Monotonic, ClockSource::GenericTimer}) {
    StreamItem item = everyItem()[0];
    std::get<ProcessStart>(item.body).clock.source = source;
    EXPECT_EQ(decodeItem(encodeItem(item)), item) << int(source);
  }
  capnp::MallocMessageBuilder builder;
  auto root = builder.initRoot<schema::StreamItem>();
  root.setVersion(kFormatVersion);
  auto start = root.initProcessStart();
  start.initClock().setSource(static_cast<schema::ClockSource>(7));
  start.getClock().setTicksPerNs(1.0);
  auto words = capnp::messageToFlatArray(builder);
  auto bytes = std::as_bytes(std::span(words.begin(), words.size()));
  const StreamItem item = decodeItem(bytes);
  EXPECT_EQ(std::get<ProcessStart>(item.body).clock.source, ClockSource::Monotonic);
}

// Found by the decoder fuzzer: a NaN clock rate decoded, and the item then differed from its own
// re-encoding (NaN != NaN). No writer produces a rate that is not a positive number.
TEST(Codec, ClockRateThatConvertsNothingIsRejected) {
  for (double rate : {std::nan(""), 0.0, -2.0, std::numeric_limits<double>::infinity()}) {
    StreamItem item = everyItem()[0];
    std::get<ProcessStart>(item.body).clock.ticks_per_ns = rate;
    EXPECT_EQ(reasonOf(encodeItem(item)), FormatErrorReason::BadValue) << rate;
  }
}

TEST(Codec, BatchWhoseCountDisagreesWithItsBytesIsRejected) {
  Bytes good = encodeEventBatch(1, 2, 3, std::vector<Event>(3, Event{5, 1, EventKind::Enter}));
  for (uint32_t count : {0u, 2u, 4u, 1000u, kMaxBatchEvents + 1}) {
    SCOPED_TRACE(count);
    capnp::MallocMessageBuilder builder;
    auto original = decodeItem(good);
    auto root = builder.initRoot<schema::StreamItem>();
    root.setVersion(kFormatVersion);
    auto batch = root.initEventBatch();
    // Copy the real event bytes, then lie about their number.
    std::vector<uint8_t> bytes;
    {
      capnp::FlatArrayMessageReader reader(kj::arrayPtr(
          reinterpret_cast<const capnp::word*>(good.data()), good.size() / 8));
      auto data = reader.getRoot<schema::StreamItem>().getEventBatch().getEvents();
      bytes.assign(data.begin(), data.end());
    }
    batch.setEvents(kj::arrayPtr(bytes.data(), bytes.size()));
    batch.setCount(count);
    auto words = capnp::messageToFlatArray(builder);
    auto message = std::as_bytes(std::span(words.begin(), words.size()));
    FormatErrorReason reason = reasonOf(message);
    EXPECT_TRUE(reason == FormatErrorReason::BadEvents || reason == FormatErrorReason::Oversized)
        << formatErrorReasonName(reason);
    // peekItem checks the byte count against the declared count, not each event: a count of 2
    // for three events' bytes passes it, and only decoding finds the leftover bytes.
    if (count != 2)
      EXPECT_THROW(peekItem(message), FormatError);
  }
}

TEST(Codec, UnalignedInputIsCopiedNotMisread) {
  Bytes message = encodeItem(everyItem()[5]);
  std::vector<std::byte> shifted(message.size() + 1);
  std::memcpy(shifted.data() + 1, message.data(), message.size());
  EXPECT_EQ(decodeItem(std::span(shifted).subspan(1)), everyItem()[5]);
}

// Random damage never crashes the decoder: it either decodes or throws FormatError. Run under
// ASan/UBSan by scripts/test; the libFuzzer target goes further.
TEST(Codec, RandomDamageIsRejectedOrDecodedNeverCrashes) {
  std::mt19937_64 random(20261121);
  auto items = everyItem();
  int rejected = 0;
  for (int round = 0; round < 4000; ++round) {
    Bytes message = encodeItem(items[round % items.size()]);
    int flips = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < flips; ++i)
      message[random() % message.size()] ^= static_cast<std::byte>(1u << (random() % 8));
    try {
      decodeItem(message);
      peekItem(message);
    } catch (const FormatError&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
}

} // namespace
} // namespace shapetrace::wire
