// Which encoding should an event batch use? Encodes and decodes a batch of 4096 events shaped like
// a real trace (nested calls, 20-200 ns apart, a few hundred functions) with each candidate and
// reports ns per event and bytes per event.
//
//   build/tests/bench/wire_encoding_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
//
// Candidates: the raw 16-byte records in a Data field; a Cap'n Proto List(struct); the same list
// with Cap'n Proto packing; the adopted delta+varint encoding (through the real codec, message
// framing included).
#include "encoding_bench.capnp.h"
#include "wire/codec.h"

#include <benchmark/benchmark.h>
#include <capnp/message.h>
#include <capnp/serialize-packed.h>
#include <capnp/serialize.h>
#include <cstring>
#include <kj/io.h>
#include <random>

namespace {
using shapetrace::Event;
using shapetrace::EventKind;

constexpr size_t kBatch = 4096;

// A call tree walked depth-first: enter/exit pairs, depth up to 12, ids from a pool of 300.
std::vector<Event> realisticBatch() {
  std::mt19937_64 random(42);
  std::vector<Event> events;
  std::vector<uint32_t> stack;
  uint64_t t = 1'700'000'000'000;
  while (events.size() < kBatch) {
    t += 20 + random() % 180;
    bool enter = stack.empty() || (stack.size() < 12 && random() % 2 == 0);
    if (enter) {
      uint32_t id = static_cast<uint32_t>(random() % 300);
      stack.push_back(id);
      events.push_back({t, id, EventKind::Enter});
    } else {
      events.push_back({t, stack.back(), EventKind::Exit});
      stack.pop_back();
    }
  }
  return events;
}

const std::vector<Event>& batch() {
  static const std::vector<Event> events = realisticBatch();
  return events;
}

void report(benchmark::State& state, size_t bytes) {
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kBatch),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["bytes_per_event"] = static_cast<double>(bytes) / kBatch;
}

kj::Array<capnp::word> encodeRaw() {
  capnp::MallocMessageBuilder message(kBatch * 2 + 16);
  auto root = message.initRoot<BenchBatch>();
  root.setRaw(kj::arrayPtr(reinterpret_cast<const kj::byte*>(batch().data()),
                           batch().size() * sizeof(Event)));
  return capnp::messageToFlatArray(message);
}

kj::Array<capnp::word> encodeList(bool packed, size_t* packedBytes = nullptr) {
  capnp::MallocMessageBuilder message(kBatch * 3 + 16);
  auto list = message.initRoot<BenchBatch>().initEvents(kBatch);
  for (size_t i = 0; i < kBatch; ++i) {
    list[i].setTimestamp(batch()[i].timestamp);
    list[i].setFunctionId(batch()[i].function_id);
    list[i].setKind(static_cast<uint32_t>(batch()[i].kind));
  }
  if (!packed)
    return capnp::messageToFlatArray(message);
  kj::VectorOutputStream out(kBatch * 16);
  capnp::writePackedMessage(out, message);
  if (packedBytes)
    *packedBytes = out.getArray().size();
  auto words = kj::heapArray<capnp::word>((out.getArray().size() + 7) / 8);
  std::memcpy(words.begin(), out.getArray().begin(), out.getArray().size());
  return words;
}

void BM_RawBlob_Encode(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    auto words = encodeRaw();
    bytes = words.asBytes().size();
    benchmark::DoNotOptimize(words.begin());
  }
  report(state, bytes);
}

void BM_RawBlob_Decode(benchmark::State& state) {
  auto words = encodeRaw();
  std::vector<Event> out(kBatch);
  for (auto _ : state) {
    capnp::FlatArrayMessageReader reader(words);
    auto raw = reader.getRoot<BenchBatch>().getRaw();
    std::memcpy(out.data(), raw.begin(), raw.size());
    benchmark::DoNotOptimize(out.data());
  }
  report(state, words.asBytes().size());
}

void BM_CapnpList_Encode(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    auto words = encodeList(false);
    bytes = words.asBytes().size();
    benchmark::DoNotOptimize(words.begin());
  }
  report(state, bytes);
}

void BM_CapnpList_Decode(benchmark::State& state) {
  auto words = encodeList(false);
  std::vector<Event> out(kBatch);
  for (auto _ : state) {
    capnp::FlatArrayMessageReader reader(words);
    auto list = reader.getRoot<BenchBatch>().getEvents();
    for (size_t i = 0; i < list.size(); ++i)
      out[i] = {list[i].getTimestamp(), list[i].getFunctionId(),
                static_cast<EventKind>(list[i].getKind())};
    benchmark::DoNotOptimize(out.data());
  }
  report(state, words.asBytes().size());
}

void BM_CapnpPackedList_Encode(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    auto words = encodeList(true, &bytes);
    benchmark::DoNotOptimize(words.begin());
  }
  report(state, bytes);
}

void BM_CapnpPackedList_Decode(benchmark::State& state) {
  size_t bytes = 0;
  auto words = encodeList(true, &bytes);
  std::vector<Event> out(kBatch);
  for (auto _ : state) {
    kj::ArrayInputStream in(words.asBytes().slice(0, bytes));
    capnp::PackedMessageReader reader(in);
    auto list = reader.getRoot<BenchBatch>().getEvents();
    for (size_t i = 0; i < list.size(); ++i)
      out[i] = {list[i].getTimestamp(), list[i].getFunctionId(),
                static_cast<EventKind>(list[i].getKind())};
    benchmark::DoNotOptimize(out.data());
  }
  report(state, bytes);
}

void BM_DeltaVarint_Encode(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    auto message = shapetrace::wire::encodeEventBatch(1, 2, 3, batch());
    bytes = message.size();
    benchmark::DoNotOptimize(message.data());
  }
  report(state, bytes);
}

void BM_DeltaVarint_Decode(benchmark::State& state) {
  auto message = shapetrace::wire::encodeEventBatch(1, 2, 3, batch());
  for (auto _ : state) {
    auto item = shapetrace::wire::decodeItem(message);
    benchmark::DoNotOptimize(&item);
  }
  report(state, message.size());
}

BENCHMARK(BM_RawBlob_Encode);
BENCHMARK(BM_RawBlob_Decode);
BENCHMARK(BM_CapnpList_Encode);
BENCHMARK(BM_CapnpList_Decode);
BENCHMARK(BM_CapnpPackedList_Encode);
BENCHMARK(BM_CapnpPackedList_Decode);
BENCHMARK(BM_DeltaVarint_Encode);
BENCHMARK(BM_DeltaVarint_Decode);

} // namespace

BENCHMARK_MAIN();
