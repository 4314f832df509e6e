// Host summaries to and from Cap'n Proto (stream/schema/summary.capnp).
#include "fleet/summary.h"

#include "call_stack.h"

#include "schema/summary.capnp.h"
#include "wire/format_error.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <cstring>
#include <set>
#include <unordered_map>
#include <zstd.h>

namespace shapetrace::fleet {

namespace s = wire::summary_schema;
using analyzer::Diagnostics;
using analyzer::DurationStats;
using analyzer::ShapeId;
using analyzer::ThreadResult;
using wire::FormatError;
using wire::FormatErrorReason;

namespace {

kj::StringPtr text(const std::string& value) {
  return {value.c_str(), value.size()};
}

// Non-zero counters by name, so that readers with other statistics still read the ones they know.
template <typename Init> void writeCounters(const Diagnostics& diagnostics, Init init) {
  size_t used = 0;
  for (size_t i = 0; i < analyzer::kStatCount; ++i)
    used += diagnostics.count(static_cast<analyzer::Stat>(i)) != 0;
  auto list = init(static_cast<unsigned>(used));
  unsigned at = 0;
  for (size_t i = 0; i < analyzer::kStatCount; ++i) {
    const auto stat = static_cast<analyzer::Stat>(i);
    if (diagnostics.count(stat) == 0)
      continue;
    const std::string name(analyzer::statName(stat));
    list[at].setName(text(name));
    list[at].setCount(diagnostics.count(stat));
    ++at;
  }
}

void writeStats(s::Stats::Builder out, const DurationStats& stats, uint64_t calls,
                uint64_t outliers) {
  auto m = out.initMoments();
  m.setCount(stats.moments.count());
  m.setMean(stats.moments.mean());
  m.setM2(stats.moments.m2());
  m.setMin(stats.moments.min());
  m.setMax(stats.moments.max());
  m.setSumLow(static_cast<uint64_t>(stats.moments.sum()));
  m.setSumHigh(static_cast<uint64_t>(stats.moments.sum() >> 64));
  const auto buckets = stats.histogram.buckets();
  auto list = out.initHistogram(static_cast<unsigned>(buckets.size()));
  for (unsigned i = 0; i < buckets.size(); ++i) {
    list[i].setIndex(buckets[i].first);
    list[i].setCount(buckets[i].second);
  }
  out.setCalls(calls);
  out.setOutliers(outliers);
}

void writeThread(s::Thread::Builder out, const analyzer::ThreadInput& input) {
  const ThreadResult& result = *input.result;
  out.setProcess(input.key.process);
  out.setThread(input.key.thread);
  out.setName(text(input.name));
  out.setEnded(input.ended);
  out.setEvents(result.events);
  out.setCalls(result.calls);
  out.setOpenCalls(result.open_calls);
  out.setOutliersFound(result.outliers_found);
  const auto& timeline = result.timeline;
  out.setTimelineShift(static_cast<uint8_t>(timeline.shift()));
  out.setTimelineMaxBins(timeline.maxBins());
  out.setTimelineStarted(timeline.started());
  out.setTimelineFirstBin(timeline.firstBin());

  const size_t shape_count = result.shapes.size() - 1;
  auto shapes = out.initShapes(static_cast<unsigned>(shape_count));
  for (ShapeId id = 1; id <= shape_count; ++id) {
    auto shape = shapes[id - 1];
    shape.setFunction(result.shapes.function(id));
    const auto children = result.shapes.children(id);
    auto child_list = shape.initChildren(static_cast<unsigned>(children.size()));
    for (unsigned i = 0; i < children.size(); ++i)
      child_list.set(i, children[i]);
    const analyzer::ShapeState& state = result.shape_states[id];
    writeStats(shape.initStats(), state.stats, state.calls, state.outliers);
    const auto& cells = timeline.cells(id);
    auto cell_list = shape.initTimeline(static_cast<unsigned>(cells.size()));
    for (unsigned i = 0; i < cells.size(); ++i) {
      cell_list[i].setBin(cells[i].bin);
      cell_list[i].setCount(cells[i].count);
      cell_list[i].setBusyNs(cells[i].busy_ns);
    }
  }

  size_t used = 0;
  for (const auto& [id, f] : result.functions)
    used += f.calls != 0;
  auto functions = out.initFunctions(static_cast<unsigned>(used));
  unsigned at = 0;
  for (const auto& [id, f] : result.functions) {
    if (f.calls == 0)
      continue;
    functions[at].setId(id);
    functions[at].setInclusiveNs(f.inclusive_ns);
    functions[at].setBusiestThreadNs(f.busiest_thread_ns);
    functions[at].setThreads(f.threads);
    writeStats(functions[at].initStats(), f.stats, f.calls, f.outliers);
    ++at;
  }

  auto outliers = out.initOutliers(static_cast<unsigned>(result.outliers.size()));
  for (unsigned i = 0; i < result.outliers.size(); ++i) {
    const analyzer::Outlier& o = result.outliers[i];
    auto w = outliers[i];
    w.setStartNs(o.start_ns);
    w.setDurationNs(o.duration_ns);
    w.setFunction(o.function);
    w.setShape(o.shape);
    w.setFunctionOutlier(o.function_outlier);
    w.setShapeOutlier(o.shape_outlier);
    w.setFunctionMean(o.function_mean);
    w.setFunctionSd(o.function_sd);
    w.setFunctionCount(o.function_count);
    w.setShapeMean(o.shape_mean);
    w.setShapeSd(o.shape_sd);
    w.setShapeCount(o.shape_count);
    w.setScore(o.score);
    w.setAtExit(o.at_exit);
  }
  writeCounters(result.diagnostics, [&](unsigned n) { return out.initDiagnostics(n); });
}

[[noreturn]] void bad(const std::string& what) {
  throw FormatError(FormatErrorReason::BadValue, "summary: " + what);
}

// Counters by name; a name this reader does not know (a newer analyzer's) is kept out, counted as
// what it is not would be wrong.
Diagnostics readCounters(capnp::List<s::Counter>::Reader list) {
  static const auto by_name = [] {
    std::unordered_map<std::string, analyzer::Stat> names;
    for (size_t i = 0; i < analyzer::kStatCount; ++i)
      names.emplace(analyzer::statName(static_cast<analyzer::Stat>(i)),
                    static_cast<analyzer::Stat>(i));
    return names;
  }();
  Diagnostics diagnostics;
  for (auto counter : list) {
    auto it = by_name.find(counter.getName().cStr());
    if (it != by_name.end())
      diagnostics.add(it->second, counter.getCount());
  }
  return diagnostics;
}

DurationStats readStats(s::Stats::Reader in) {
  DurationStats stats;
  auto m = in.getMoments();
  const unsigned __int128 sum =
      static_cast<unsigned __int128>(m.getSumHigh()) << 64 | m.getSumLow();
  stats.moments = analyzer::Moments::fromParts(m.getCount(), m.getMean(), m.getM2(), m.getMin(),
                                               m.getMax(), sum);
  uint64_t total = 0;
  uint32_t previous = 0;
  bool first = true;
  for (auto bucket : in.getHistogram()) {
    // Ascending, as buckets() writes them; a bucket far past any duration would make the
    // histogram allocate gigabytes.
    if ((!first && bucket.getIndex() <= previous) ||
        bucket.getIndex() > analyzer::LogHistogram::bucketOf(UINT64_MAX))
      bad("histogram bucket " + std::to_string(bucket.getIndex()) + " out of order or range");
    stats.histogram.addToBucket(bucket.getIndex(), bucket.getCount());
    total += bucket.getCount();
    previous = bucket.getIndex();
    first = false;
  }
  if (total != m.getCount())
    bad("histogram total differs from the moments' count");
  return stats;
}

HostThread readThread(s::Thread::Reader in) {
  HostThread thread;
  thread.key = {in.getProcess(), in.getThread()};
  thread.name = in.getName().cStr();
  thread.ended = in.getEnded();
  ThreadResult& result = thread.result;
  result.events = in.getEvents();
  result.calls = in.getCalls();
  result.open_calls = in.getOpenCalls();
  result.outliers_found = in.getOutliersFound();
  if (in.getTimelineShift() >= 64)
    bad("timeline shift " + std::to_string(in.getTimelineShift()));

  auto shapes = in.getShapes();
  result.shape_states.resize(shapes.size() + 1);
  std::vector<std::vector<analyzer::TimelineCell>> cells(shapes.size() + 1);
  std::vector<ShapeId> children;
  for (unsigned i = 0; i < shapes.size(); ++i) {
    const ShapeId id = i + 1;
    auto shape = shapes[i];
    children.clear();
    for (ShapeId child : shape.getChildren()) {
      if (child == analyzer::kNullShape || child >= id)
        bad("shape child out of order");
      children.push_back(child);
    }
    const size_t size = analyzer::canonicalizeChildSet(children);
    if (size != children.size())
      bad("shape children not a sorted set");
    if (result.shapes.intern(shape.getFunction(), std::span(children).first(size)) != id)
      bad("shape " + std::to_string(id) + " repeats an earlier one");
    auto stats = shape.getStats();
    result.shape_states[id] = {readStats(stats), stats.getOutliers(), stats.getCalls()};
    uint64_t previous_bin = 0;
    for (auto cell : shape.getTimeline()) {
      if (!cells[id].empty() && cell.getBin() <= previous_bin)
        bad("timeline cells out of order");
      cells[id].push_back({cell.getBin(), cell.getCount(), cell.getBusyNs()});
      previous_bin = cell.getBin();
    }
  }
  result.timeline = analyzer::OccurrenceTimeline::restored(
      in.getTimelineMaxBins(), in.getTimelineShift(), in.getTimelineStarted(),
      in.getTimelineFirstBin(), std::move(cells));

  // Function ids are the process's own, below the analyzer's limit; kept sparse (a summary naming
  // function 2^24-1 costs one entry).
  for (auto function : in.getFunctions()) {
    const uint32_t id = function.getId();
    if (id >= analyzer::kMaxFunctionId)
      bad("function id " + std::to_string(id));
    auto stats = function.getStats();
    const DurationStats durations = readStats(stats);
    // Outermost calls are some of its calls: their time is within the calls' summed time.
    if (function.getInclusiveNs() > durations.moments.sum())
      bad("function " + std::to_string(id) + "'s inclusive time exceeds its calls' summed time");
    // A thread's busiest time is within its inclusive time, and a thread is at least one.
    const uint64_t threads = std::max<uint64_t>(function.getThreads(), 1);
    const uint64_t busiest =
        function.getThreads() == 0 ? function.getInclusiveNs() : function.getBusiestThreadNs();
    if (busiest > function.getInclusiveNs())
      bad("function " + std::to_string(id) + "'s busiest thread exceeds its inclusive time");
    if (!result.functions
             .try_emplace(id, durations, stats.getOutliers(), stats.getCalls(),
                          function.getInclusiveNs(), busiest, threads)
             .second)
      bad("function " + std::to_string(id) + " listed twice");
  }
  for (auto o : in.getOutliers()) {
    if (o.getShape() >= result.shapes.size())
      bad("outlier of an unknown shape");
    result.outliers.push_back(analyzer::Outlier{
        o.getStartNs(), o.getDurationNs(), o.getFunction(), o.getShape(), o.getFunctionOutlier(),
        o.getShapeOutlier(), o.getFunctionMean(), o.getFunctionSd(), o.getFunctionCount(),
        o.getShapeMean(), o.getShapeSd(), o.getShapeCount(), o.getScore(), o.getAtExit(), 0, 0});
  }
  result.diagnostics = readCounters(in.getDiagnostics());
  return thread;
}

} // namespace

wire::Bytes encodeSummary(const SummaryHeader& header,
                          const analyzer::Analyzer::MergeInputs& inputs) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<s::HostSummary>();
  root.setVersion(s::SUMMARY_VERSION);
  root.setHost(text(header.host));
  root.setSequence(header.sequence);
  root.setWindowEndNs(header.window_end_ns);
  root.setRecording(text(header.recording));
  root.setRun(header.run);
  auto progress = root.initProgress();
  progress.setReceivedEvents(header.progress.received_events);
  progress.setAnalysedEvents(header.progress.analysed_events);
  progress.setWaitingEvents(header.progress.waiting_events);
  progress.setMissedItems(header.progress.missed_items);
  progress.setFinal(header.final);

  std::set<uint64_t> processes;
  for (const auto& thread : inputs.threads)
    processes.insert(thread.key.process);
  std::vector<std::pair<uint64_t, const wire::FunctionInfo*>> named;
  if (inputs.functions != nullptr)
    for (const auto& [key, info] : *inputs.functions)
      if (processes.contains(key.first))
        named.emplace_back(key.first, &info);
  auto functions = root.initFunctions(static_cast<unsigned>(named.size()));
  for (unsigned i = 0; i < named.size(); ++i) {
    const wire::FunctionInfo& info = *named[i].second;
    auto f = functions[i];
    f.setProcess(named[i].first);
    f.setId(info.id);
    f.setMangledName(text(info.mangled_name));
    f.setDemangledName(text(info.demangled_name));
    f.setSourceFile(text(info.source_file));
    f.setLine(info.line);
  }
  auto threads = root.initThreads(static_cast<unsigned>(inputs.threads.size()));
  for (unsigned i = 0; i < inputs.threads.size(); ++i)
    writeThread(threads[i], inputs.threads[i]);
  writeCounters(inputs.input_diagnostics, [&](unsigned n) { return root.initDiagnostics(n); });

  const auto flat = capnp::messageToFlatArray(message);
  const auto bytes = flat.asBytes();
  return compressSummary(std::as_bytes(std::span(bytes.begin(), bytes.size())));
}

wire::Bytes compressSummary(std::span<const std::byte> message) {
  wire::Bytes out(ZSTD_compressBound(message.size()));
  const size_t size = ZSTD_compress(out.data(), out.size(), message.data(), message.size(), 3);
  if (ZSTD_isError(size))
    throw std::runtime_error(ZSTD_getErrorName(size));
  out.resize(size);
  return out;
}

HostSummary decodeSummary(std::span<const std::byte> compressed) {
  const unsigned long long size = ZSTD_getFrameContentSize(compressed.data(), compressed.size());
  if (size == ZSTD_CONTENTSIZE_ERROR)
    throw FormatError(FormatErrorReason::BadHeader, "not a summary (no zstd frame)");
  if (size == ZSTD_CONTENTSIZE_UNKNOWN || size > kMaxSummaryBytes)
    throw FormatError(FormatErrorReason::Oversized, "summary of " + std::to_string(size) +
                                                        " bytes (at most " +
                                                        std::to_string(kMaxSummaryBytes) + ")");
  if (size % sizeof(capnp::word) != 0 || size == 0)
    throw FormatError(FormatErrorReason::Truncated,
                      "summary of " + std::to_string(size) +
                          " bytes is not a whole number of 8-byte words");
  auto words = kj::heapArray<capnp::word>(size / sizeof(capnp::word));
  const size_t got = ZSTD_decompress(words.begin(), size, compressed.data(), compressed.size());
  if (ZSTD_isError(got))
    throw FormatError(FormatErrorReason::Malformed,
                      std::string("summary: ") + ZSTD_getErrorName(got));
  if (got != size)
    throw FormatError(FormatErrorReason::Truncated, "summary shorter than declared");
  capnp::ReaderOptions limits;
  // As decodeItem(): a traversal bounded by the size stops a small message declaring huge lists.
  limits.traversalLimitInWords = 4 * uint64_t{words.size()} + 64;
  limits.nestingLimit = 16;
  try {
    capnp::FlatArrayMessageReader reader(words, limits);
    if (reader.getEnd() != words.end())
      throw FormatError(FormatErrorReason::Malformed, "bytes follow the end of the summary");
    auto root = reader.getRoot<s::HostSummary>();
    if (root.getVersion() != s::SUMMARY_VERSION)
      throw FormatError(FormatErrorReason::UnsupportedVersion,
                        "summary version " + std::to_string(root.getVersion()) +
                            " (this reader understands " + std::to_string(s::SUMMARY_VERSION) +
                            ")");
    HostSummary summary;
    const auto progress = root.getProgress();
    summary.header = {root.getHost().cStr(),
                      root.getSequence(),
                      root.getWindowEndNs(),
                      root.getRecording().cStr(),
                      root.getRun(),
                      {progress.getReceivedEvents(), progress.getAnalysedEvents(),
                       progress.getWaitingEvents(), progress.getMissedItems()},
                      progress.getFinal()};
    if (summary.header.host.empty())
      bad("no host name");
    if (summary.header.sequence == 0)
      bad("sequence 0");
    for (auto f : root.getFunctions())
      summary.functions[{f.getProcess(), f.getId()}] =
          wire::FunctionInfo{f.getId(), f.getMangledName().cStr(), f.getDemangledName().cStr(),
                             f.getSourceFile().cStr(), f.getLine()};
    std::set<analyzer::ThreadKey> seen;
    for (auto thread : root.getThreads()) {
      summary.threads.push_back(readThread(thread));
      if (!seen.insert(summary.threads.back().key).second)
        bad("a thread listed twice");
    }
    summary.diagnostics = readCounters(root.getDiagnostics());
    return summary;
  } catch (const kj::Exception& e) {
    const bool truncated = std::strstr(e.getDescription().cStr(), "ends prematurely") != nullptr;
    throw FormatError(truncated ? FormatErrorReason::Truncated : FormatErrorReason::Malformed,
                      e.getDescription().cStr());
  }
}

} // namespace shapetrace::fleet
