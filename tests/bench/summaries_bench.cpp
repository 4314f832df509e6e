// The structure summaries' cost per event against the shape builder's, in one run
// (tests/bench/summaries_bench.sh; docs/BENCHMARKS.md "Structure summaries").
//
//   summaries_bench RECORDING [--thread T] [--repeats N]
//
// One thread of the recording (the one with the most events by default) is read into memory once
// (16 bytes an event), then replayed from memory, `repeats` times each, the fastest kept, through:
// the shape builder (ThreadAnalyzer: shapes, DAG, statistics, outliers, as `analyze` runs it), the
// call stream alone (call_stack.h with a sink that does nothing), and the call stream into each
// encoding of `shapetrace summarize` (summaries/encoders.h). Prints nanoseconds per event and the
// ratio to the shape builder.
#include "call_stack.h"
#include "replay.h"
#include "scope.h"
#include "summaries/encoders.h"
#include "thread_analyzer.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace shapetrace;
using namespace shapetrace::analyzer;

namespace {

struct Batch {
  uint64_t sequence;
  std::vector<Event> events;
};

// A call-stack sink that hands the calls to a SequenceSink, as the replay of a thread scope does.
class ToSequence {
public:
  explicit ToSequence(summaries::SequenceSink& sink) : sink_(sink) {}
  void onEnter(uint32_t function, uint32_t depth, uint64_t time_ns) {
    sink_.enter(function, depth, time_ns);
  }
  void onCall(const FinishedCall& c) {
    sink_.exit(c.function, c.depth, c.enter_ns, c.exit_ns, c.measured);
  }
  void onReset() { sink_.gap(0); }

private:
  summaries::SequenceSink& sink_;
};

struct NoSink {
  void onEnter(uint32_t, uint32_t, uint64_t) {}
  void onCall(const FinishedCall&) {}
  void onReset() {}
};

double seconds(const std::function<void()>& run, int repeats) {
  double best = 1e300;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: summaries_bench RECORDING [--thread T] [--repeats N]\n");
    return 2;
  }
  std::string thread_name;
  int repeats = 3;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--thread") == 0) thread_name = argv[i + 1];
    else if (std::strcmp(argv[i], "--repeats") == 0) repeats = std::max(1, std::atoi(argv[i + 1]));
  }
  recording::RecordingReader reader(argv[1]);
  const RecordingNames names = namesOf(reader, AnalysisSettings{});
  const Analysis& analysis = names.analysis;

  // The thread: named, or the one whose batches hold the most events.
  ThreadKey thread;
  if (!thread_name.empty()) {
    thread = selectThreads(analysis, thread_name).front();
  } else {
    std::map<ThreadKey, uint64_t> events;
    reader.rewind();
    while (auto frame = reader.next()) {
      const auto header = wire::peekItem(frame->message);
      if (header.kind == wire::ItemKind::EventBatch) events[{header.process, header.thread}] += header.event_count;
    }
    uint64_t most = 0;
    for (const auto& [key, n] : events)
      if (n > most) most = n, thread = key;
  }
  std::vector<Batch> batches;
  uint64_t total = 0;
  ThreadEvents reading(reader, analysis);
  if (!reading.start(thread, 0)) {
    std::fprintf(stderr, "summaries_bench: no events of that thread\n");
    return 1;
  }
  for (auto kind = reading.next(); kind != ThreadEvents::Kind::kEnd; kind = reading.next())
    if (kind == ThreadEvents::Kind::kBatch) {
      total += reading.events().size();
      batches.push_back({reading.sequence(), reading.events()});
    }
  std::printf("thread %s: %llu events in %zu batches (%.0f MB in memory), best of %d runs\n",
              threadLabel(analysis, thread).c_str(), static_cast<unsigned long long>(total),
              batches.size(), static_cast<double>(total * sizeof(Event)) / 1e6, repeats);

  auto report = [&](const char* name, double s, double base) {
    std::printf("  %-34s %8.1f ns/event %9.1f M events/s", name, s * 1e9 / static_cast<double>(total),
                static_cast<double>(total) / s / 1e6);
    if (base > 0) std::printf("  %5.2fx the shape builder", s / base);
    std::printf("\n");
  };
  const double shapes = seconds([&] {
    ThreadAnalyzer a;
    for (const Batch& b : batches)
      a.onBatch(b.sequence, b.events);
    a.onEnd();
  }, repeats);
  report("shape builder (ThreadAnalyzer)", shapes, 0);
  report("call stream alone", seconds([&] {
    NoSink sink;
    CallStack<NoSink> stack(sink);
    for (const Batch& b : batches)
      stack.onBatch(b.sequence, b.events);
    stack.onEnd();
  }, repeats), shapes);

  using summaries::Encoding;
  struct Case {
    const char* name;
    Encoding encoding;
    summaries::SymbolForm form;
  };
  const Case cases[] = {
      {"rle (string form)", Encoding::kRle, summaries::SymbolForm::kString},
      {"sequitur (string form)", Encoding::kSequitur, summaries::SymbolForm::kString},
      {"summary (enter-exit form)", Encoding::kSummary, summaries::SymbolForm::kEnterExit},
      {"fsa k=3 (calls form)", Encoding::kFsa, summaries::SymbolForm::kCalls},
      {"nlevel N=3", Encoding::kNLevel, summaries::SymbolForm::kString},
      {"intervals n=32", Encoding::kIntervals, summaries::SymbolForm::kString},
  };
  for (const Case& c : cases) {
    summaries::EncoderOptions options;
    options.form = c.form;
    size_t grammar = 0;
    const double s = seconds([&] {
      summaries::Encoder encoder(c.encoding, options);
      ToSequence sink(encoder.sink());
      CallStack<ToSequence> stack(sink);
      encoder.sink().begin({thread, 0, UINT32_MAX});
      for (const Batch& b : batches)
        stack.onBatch(b.sequence, b.events);
      stack.onEnd();
      encoder.sink().end(0);
      if (const auto* g = dynamic_cast<const summaries::GrammarSink*>(&encoder.sink()))
        grammar = g->table().rules().size();
    }, repeats);
    report(c.name, s, shapes);
    if (grammar != 0) std::printf("  %-34s %zu rules in the table\n", "", grammar);
  }
  return 0;
}
