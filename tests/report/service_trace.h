// A recording of a small key-value service, written with the collector's RecordingWriter: the
// fixture of the report's tests and browser tests until they run on a recording of the
// instrumented example (examples/kvstore).
//
// Three workers serve gets and puts (same shapes on every worker; a put sometimes splits a page,
// and a few gets are slow with the same shape), an evictor pops LRU entries and now and then
// flushes pages to disk, and the main thread starts and joins them. Deterministic: the same
// options give the same bytes.
#pragma once

#include "recording/recording.h"
#include "wire/codec.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace shapetrace::report_testing {

enum Fn : uint32_t {
  kMain = 1,
  kWorkerLoop,
  kHandle,
  kParse,
  kFind,
  kNodeSearch,
  kInsert,
  kSplit,
  kRespond,
  kEvictorLoop,
  kEvictBatch,
  kLruPop,
  kFlush,
  kWritePage,
  kDestroyNode, // only with ServiceTraceOptions::recursion
  kFunctionCount
};

inline std::vector<wire::FunctionInfo> serviceFunctions() {
  return {{kMain, "main", "main", "kvstore/main.cpp", 12},
          {kWorkerLoop, "_ZN2kv6Worker3runEv", "kv::Worker::run()", "kvstore/worker.cpp", 20},
          {kHandle, "_ZN2kv6Server6handleERKNS_7RequestE", "kv::Server::handle(kv::Request const&)",
           "kvstore/server.cpp", 41},
          {kParse, "_ZN2kv5parseESt17basic_string_viewIcE", "kv::parse(std::string_view)",
           "kvstore/protocol.cpp", 8},
          {kFind, "_ZN2kv5BTree4findEm", "kv::BTree::find(unsigned long)", "kvstore/btree.cpp", 77},
          {kNodeSearch, "_ZN2kv4Node6searchEm", "kv::Node::search(unsigned long)",
           "kvstore/btree.cpp", 30},
          {kInsert, "_ZN2kv5BTree6insertEmSt6vectorIcE", "kv::BTree::insert(unsigned long, std::vector<char>)",
           "kvstore/btree.cpp", 102},
          {kSplit, "_ZN2kv5BTree9splitPageEPNS_4NodeE", "kv::BTree::splitPage(kv::Node*)",
           "kvstore/btree.cpp", 150},
          {kRespond, "_ZN2kv6Server7respondEi", "kv::Server::respond(int)", "kvstore/server.cpp", 88},
          {kEvictorLoop, "_ZN2kv7Evictor3runEv", "kv::Evictor::run()", "kvstore/evictor.cpp", 15},
          {kEvictBatch, "_ZN2kv7Evictor10evictBatchEv", "kv::Evictor::evictBatch()",
           "kvstore/evictor.cpp", 40},
          {kLruPop, "_ZN2kv3Lru3popEv", "kv::Lru::pop()", "kvstore/lru.cpp", 19},
          {kFlush, "_ZN2kv5Store5flushEv", "kv::Store::flush()", "kvstore/store.cpp", 60},
          {kWritePage, "_ZN2kv5Store9writePageEj", "kv::Store::writePage(unsigned int)",
           "kvstore/store.cpp", 71}};
}

struct ServiceTraceOptions {
  uint32_t workers = 3;
  uint32_t requests_per_worker = 400;
  uint32_t evictions = 120;
  uint64_t start_ns = 1'000'000'000;
  uint32_t seed = 7;
  uint64_t process = 42; // the process key (another for each host of a fleet test)
  size_t events_per_batch = 256;
  bool gap_on_last_worker = false; // the runtime dropped events of one worker once
  double split_share = 0.08;        // puts that split a page (0: none, a run to compare with)
  bool killed = false; // SIGKILL'd: no ThreadEnd, no ProcessEnd; `record` saw the signal
  // Every request annotates its size ("size", 1 to 200) as it starts, and its time grows with it:
  // 100 ns per unit, 1500 more when a put splits a page (two lines for `explain`).
  bool request_sizes = false;
  // Every flush frees a tree of pages with a recursive kv::Node::destroy, 4 levels deep (each
  // node has two children): a recursion for the page to fold.
  bool recursion = false;
  // Calls record their values as a build with SHAPETRACE_PASS_ARGS would: find, insert and
  // Node::search their key (arg2, `this` being arg1), find its result (a pointer, null for a
  // miss), respond its status (arg2).
  bool call_values = false;
};

// One thread's events under construction: enter/exit with an advancing clock.
class ThreadEvents {
public:
  explicit ThreadEvents(uint64_t start_ns) : now_(start_ns) {}
  void enter(uint32_t f) { events_.push_back(Event{now_, f, EventKind::Enter}); }
  void exit(uint32_t f) { events_.push_back(Event{now_, f, EventKind::Exit}); }
  void spend(uint64_t ns) { now_ += ns; }
  void annotate(int64_t value) { notes_.emplace_back(now_, value); }
  // A value of the innermost open call here: an argument right after its enter, the return value
  // (position 0) right before its exit; a call's arguments together, as the runtime groups them.
  void value(uint32_t f, uint8_t position, wire::ValueType type, uint64_t bits) {
    const auto at = static_cast<uint32_t>(events_.size());
    if (position != 0 && !values_.empty() && values_.back().before_event == at &&
        values_.back().function_id == f && !values_.back().returned()) {
      values_.back().values.push_back({position, type, bits});
      return;
    }
    values_.push_back({at, f, {{position, type, bits}}});
  }
  uint64_t now() const { return now_; }
  std::vector<Event>& events() { return events_; }
  const std::vector<std::pair<uint64_t, int64_t>>& notes() const { return notes_; }
  // Placed by their index among events(), in order.
  const std::vector<wire::CallValues>& values() const { return values_; }

private:
  uint64_t now_;
  std::vector<Event> events_;
  std::vector<std::pair<uint64_t, int64_t>> notes_; // (time, size)
  std::vector<wire::CallValues> values_;
};

class ServiceTrace {
public:
  explicit ServiceTrace(ServiceTraceOptions options = {}) : options_(options), rng_(options.seed) {}

  // Every item of the run, in the order a collector would record them.
  std::vector<wire::StreamItem> items() {
    std::vector<wire::StreamItem> out;
    const uint64_t process = options_.process;
    wire::ProcessStart start;
    start.pid = 4242;
    start.executable = "/opt/kvstore/bin/kvstore-server";
    start.arguments = {"kvstore-server", "--threads", "3"};
    start.hostname = "bench-1";
    start.start_ns = options_.start_ns;
    out.push_back({process, start});
    std::vector<wire::FunctionInfo> functions = serviceFunctions();
    if (options_.recursion)
      functions.push_back({kDestroyNode, "_ZN2kv4Node7destroyEv", "kv::Node::destroy()",
                           "kvstore/btree.cpp", 190});
    out.push_back({process, wire::ModuleTable{"kvstore-server", 0, std::move(functions)}});

    std::vector<std::pair<uint32_t, ThreadEvents>> threads;
    threads.emplace_back(1, mainThread());
    for (uint32_t w = 0; w < options_.workers; ++w)
      threads.emplace_back(10 + w, workerThread(w));
    threads.emplace_back(30, evictorThread());

    for (auto& [tid, events] : threads) {
      std::string name = tid == 1 ? "main" : tid == 30 ? "evictor" : "worker-" + std::to_string(tid - 10);
      out.push_back({process, wire::ThreadStart{tid, events.events().front().timestamp, name}});
    }
    // Interleave the threads' batches by time, as a live collector would receive them.
    std::vector<size_t> at(threads.size(), 0);
    std::vector<size_t> next_values(threads.size(), 0);
    std::vector<uint64_t> sequence(threads.size(), 0);
    for (;;) {
      size_t next = threads.size();
      for (size_t i = 0; i < threads.size(); ++i) {
        auto& ev = threads[i].second.events();
        if (at[i] >= ev.size()) continue;
        if (next == threads.size() ||
            ev[at[i]].timestamp < threads[next].second.events()[at[next]].timestamp)
          next = i;
      }
      if (next == threads.size()) break;
      auto& ev = threads[next].second.events();
      const size_t n = std::min(options_.events_per_batch, ev.size() - at[next]);
      std::vector<Event> batch(ev.begin() + static_cast<std::ptrdiff_t>(at[next]),
                               ev.begin() + static_cast<std::ptrdiff_t>(at[next] + n));
      // The values before this batch's events; those after its last event wait for the next
      // batch (at its start, as the runtime places them), unless no batch follows.
      std::vector<wire::CallValues> values;
      const auto& all_values = threads[next].second.values();
      const bool last = at[next] + n == ev.size();
      for (size_t& v = next_values[next];
           v < all_values.size() && (all_values[v].before_event < at[next] + n || last); ++v) {
        values.push_back(all_values[v]);
        values.back().before_event -= static_cast<uint32_t>(at[next]);
      }
      const uint32_t tid = threads[next].first;
      if (options_.gap_on_last_worker && tid == 10 + options_.workers - 1 && sequence[next] == 3) {
        // The runtime dropped this batch: a gap marker instead of the events.
        out.push_back({process, wire::Gap{tid, n, sequence[next] - 1, batch.front().timestamp,
                                          batch.back().timestamp}});
      } else {
        out.push_back({process, wire::EventBatch{tid, sequence[next], std::move(batch), {}, {}, {},
                                                 std::move(values)}});
      }
      ++sequence[next];
      at[next] += n;
    }
    for (auto& [tid, events] : threads)
      for (const auto& [time, size] : events.notes())
        out.push_back({process, wire::Annotation{tid, time, "size", size}});
    uint64_t end_ns = 0;
    for (auto& [tid, events] : threads) {
      end_ns = std::max(end_ns, events.now());
      if (!options_.killed)
        out.push_back({process, wire::ThreadEnd{tid, events.now(), events.events().size(), 0, 0}});
    }
    if (options_.killed)
      out.push_back({process, wire::ExitStatus{1, end_ns + 1000, -1, 9, false}});
    else
      out.push_back({process, wire::ProcessEnd{end_ns, 0, 0, 0, wire::EndReason::Exit, ""}});
    return out;
  }

  void write(const std::string& dir) {
    recording::RecordingWriter writer(dir);
    for (const auto& item : items())
      writer.append(wire::encodeItem(item));
    writer.close();
  }

private:
  uint64_t jitter(uint64_t base) {
    std::uniform_int_distribution<uint64_t> d(base * 8 / 10, base * 12 / 10);
    return d(rng_);
  }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  ThreadEvents mainThread() {
    ThreadEvents t(options_.start_ns);
    t.enter(kMain);
    t.spend(requestsSpan() + 50'000);
    t.exit(kMain);
    return t;
  }

  uint64_t requestsSpan() const { return uint64_t{options_.requests_per_worker} * 30'000; }

  // A call's key as its arg2 (`this` is arg1), when calls record their values.
  void key(ThreadEvents& t, uint32_t f, uint64_t key) {
    if (options_.call_values) t.value(f, 2, wire::ValueType::Unsigned, key);
  }

  void search(ThreadEvents& t, uint32_t levels, uint64_t cost, uint64_t k) {
    for (uint32_t i = 0; i < levels; ++i) {
      t.enter(kNodeSearch);
      key(t, kNodeSearch, k);
      t.spend(jitter(cost));
      t.exit(kNodeSearch);
    }
  }

  ThreadEvents workerThread(uint32_t w) {
    ThreadEvents t(options_.start_ns + 10'000 + w * 1'000);
    t.enter(kWorkerLoop);
    for (uint32_t r = 0; r < options_.requests_per_worker; ++r) {
      t.spend(jitter(4'000));
      t.enter(kHandle);
      const auto size = static_cast<uint64_t>(1 + (r * 37 + w * 11) % 200);
      if (options_.request_sizes) t.annotate(static_cast<int64_t>(size));
      t.enter(kParse);
      t.spend(jitter(1'500));
      t.exit(kParse);
      const uint64_t k = uint64_t{r} * 7919 + w; // the request's key
      if (chance(0.7)) { // get: same shape on every worker
        t.enter(kFind);
        key(t, kFind, k);
        // A few gets hit a cold page: same shape, much slower (shape outliers).
        search(t, 3, chance(0.01) ? 60'000 : 800, k);
        if (options_.request_sizes) t.spend(100 * size);
        // The entry found (a heap address), or null for one key in five.
        if (options_.call_values)
          t.value(kFind, 0, wire::ValueType::Pointer, k % 5 == 0 ? 0 : 0x7f3a00000000 + k * 64);
        t.exit(kFind);
      } else { // put; sometimes the page splits (another shape, slower)
        t.enter(kInsert);
        key(t, kInsert, k);
        search(t, 2, 900, k);
        if (options_.request_sizes) t.spend(100 * size);
        if (chance(options_.split_share)) {
          t.enter(kSplit);
          if (options_.request_sizes) t.spend(1500 * size);
          t.enter(kWritePage);
          t.spend(jitter(25'000));
          t.exit(kWritePage);
          t.exit(kSplit);
        }
        t.exit(kInsert);
      }
      t.enter(kRespond);
      if (options_.call_values) t.value(kRespond, 2, wire::ValueType::Signed, k % 5 == 0 ? -2 : 0);
      t.spend(jitter(2'000));
      t.exit(kRespond);
      t.exit(kHandle);
      t.spend(jitter(15'000));
    }
    t.exit(kWorkerLoop);
    return t;
  }

  void destroy(ThreadEvents& t, uint32_t levels) {
    t.enter(kDestroyNode);
    t.spend(jitter(300));
    if (levels > 1) {
      destroy(t, levels - 1);
      destroy(t, levels - 1);
    }
    t.exit(kDestroyNode);
  }

  ThreadEvents evictorThread() {
    ThreadEvents t(options_.start_ns + 5'000);
    t.enter(kEvictorLoop);
    const uint64_t period = requestsSpan() / (options_.evictions + 1);
    for (uint32_t e = 0; e < options_.evictions; ++e) {
      t.spend(period / 2);
      t.enter(kEvictBatch);
      const uint32_t pops = 2 + e % 4;
      for (uint32_t i = 0; i < pops; ++i) {
        t.enter(kLruPop);
        t.spend(jitter(1'200));
        t.exit(kLruPop);
      }
      t.exit(kEvictBatch);
      if (e % 10 == 9) {
        t.enter(kFlush);
        for (uint32_t i = 0; i < 4; ++i) {
          t.enter(kWritePage);
          t.spend(jitter(20'000));
          t.exit(kWritePage);
        }
        if (options_.recursion)
          destroy(t, 4);
        t.exit(kFlush);
      }
      t.spend(period / 3);
    }
    t.exit(kEvictorLoop);
    return t;
  }

  ServiceTraceOptions options_;
  std::mt19937 rng_;
};

} // namespace shapetrace::report_testing
