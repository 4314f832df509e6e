// The report generator: exact instances read back through the recording's index, the bounds on
// embedded detail, the page's data, a self-contained HTML file, and `shapetrace report` end to end
// with its errors.
#include "analyzer.h"
#include "extensions/run_info.h"
#include "report/instance_reader.h"
#include "report/page.h"
#include "report/report_data.h"
#include "report/terminal_summary.h"
#include "summaries/sequences.h"
#include "service_trace.h"
#include "support/files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

namespace shapetrace::analyzer::report {
namespace {

namespace fs = std::filesystem;
using report_testing::ServiceTrace;
using report_testing::ServiceTraceOptions;
using Json = nlohmann::json;

using shapetrace::testing::slurp;

// The calls of one thread rebuilt from its events by plain recursion: the ground truth an
// instance read from the recording must equal.
struct TruthCall {
  uint32_t function;
  uint32_t depth;
  uint64_t start, end;
};

class ReportTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("shapetrace-report-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  // Records `items`, analyses them as `shapetrace report` does, and keeps the pieces.
  void load(const std::vector<wire::StreamItem>& recorded) {
    items = recorded;
    {
      recording::RecordingWriter writer((dir / "rec").string());
      for (const auto& item : items)
        ASSERT_TRUE(writer.append(wire::encodeItem(item)));
      ASSERT_TRUE(writer.close());
    }
    Analyzer analyzer({}, 1, makeExtensions(selectExtensions("run_info"), {}));
    for (const auto& item : items) {
      if (const auto* table = std::get_if<wire::ModuleTable>(&item.body))
        for (const wire::FunctionInfo& f : table->functions)
          functions[{item.process, f.id}] = f;
      analyzer.consume(item);
    }
    analyzer.finish();
    analysis = analyzer.snapshot();
    run = static_cast<const RunInfoExtension*>(analyzer.extension("run_info"))->run();
    reader = std::make_unique<recording::RecordingReader>((dir / "rec").string());
    instances = std::make_unique<InstanceReader>(*reader, analysis);
  }

  // Every event of (process, thread) in the recorded items, in order.
  std::vector<Event> threadEvents(uint64_t process, uint32_t thread) const {
    std::vector<Event> out;
    for (const auto& item : items)
      if (const auto* batch = std::get_if<wire::EventBatch>(&item.body);
          batch && item.process == process && batch->thread == thread)
        out.insert(out.end(), batch->events.begin(), batch->events.end());
    return out;
  }

  // The subtree of the call of `function` entered at `start` (analysis function ids).
  std::vector<InstanceCall> truth(uint64_t process, uint32_t thread, uint64_t start,
                                  uint32_t function) const {
    const auto events = threadEvents(process, thread);
    std::vector<InstanceCall> calls;
    std::vector<size_t> open;
    bool inside = false;
    for (const Event& e : events) {
      const uint32_t f = analysisFunction(e.function_id);
      if (!inside) {
        if (e.kind == EventKind::Enter && e.timestamp == start && f == function) inside = true;
        else continue;
      }
      if (e.kind == EventKind::Enter) {
        open.push_back(calls.size());
        calls.push_back({f, static_cast<uint32_t>(open.size() - 1), e.timestamp - start, 0});
      } else {
        calls[open.back()].end_ns = e.timestamp - start;
        open.pop_back();
        if (open.empty()) break;
      }
    }
    return calls;
  }

  uint32_t analysisFunction(uint32_t id) const {
    const auto& info = functions.at({42, id});
    for (uint32_t i = 0; i < analysis.functions.size(); ++i)
      if (analysis.functions[i].mangled == info.mangled_name) return i;
    return UINT32_MAX;
  }

  fs::path dir;
  std::vector<wire::StreamItem> items;
  std::map<std::pair<uint64_t, uint32_t>, wire::FunctionInfo> functions; // the module tables
  RunInfo run;
  Analysis analysis;
  std::unique_ptr<recording::RecordingReader> reader;
  std::unique_ptr<InstanceReader> instances;
};

TEST_F(ReportTest, ExemplarsAreTheExactCallsOfTheirCluster) {
  load(ServiceTrace().items());
  DetailSummary summary;
  const auto embedded = collectInstances(*instances, analysis, DetailLimits{}, summary);
  ASSERT_FALSE(analysis.clustering.clusters.empty());
  size_t exemplars = 0;
  for (const ReportInstance& r : embedded) {
    if (r.reason == InstanceReason::kOutlier) continue;
    ++exemplars;
    const Instance& in = r.instance;
    ASSERT_NE(in.shape, kNullShape);
    EXPECT_EQ(analysis.clustering.cluster_of_shape[in.shape], r.cluster);
    EXPECT_EQ(in.calls, truth(in.process, in.thread, in.start_ns, in.function));
    EXPECT_EQ(in.calls.front().end_ns, in.duration_ns);
    EXPECT_EQ(in.omitted_calls, 0u);
  }
  // Every cluster occurred, so every cluster has its first occurrence embedded.
  EXPECT_EQ(summary.clusters_with_instances, analysis.clustering.clusters.size());
  EXPECT_EQ(exemplars, summary.exemplar_instances);
  EXPECT_GE(exemplars, analysis.clustering.clusters.size());
  EXPECT_EQ(summary.not_found, 0u);
  EXPECT_FALSE(summary.capped);
}

TEST_F(ReportTest, OutlierInstancesAreTheCallsTheAnalyzerJudged) {
  load(ServiceTrace().items());
  ASSERT_FALSE(analysis.outliers.empty());
  DetailSummary summary;
  const auto embedded = collectInstances(*instances, analysis, DetailLimits{}, summary);
  size_t outliers = 0;
  for (const ReportInstance& r : embedded) {
    if (r.reason != InstanceReason::kOutlier) continue;
    const Outlier& o = analysis.outliers[outliers++];
    EXPECT_EQ(r.instance.thread, o.thread);
    EXPECT_EQ(r.instance.start_ns, o.start_ns);
    EXPECT_EQ(r.instance.duration_ns, o.duration_ns);
    EXPECT_EQ(r.instance.function, o.function);
    EXPECT_EQ(r.instance.shape, o.shape);
    EXPECT_EQ(r.instance.calls, truth(o.process, o.thread, o.start_ns, o.function));
  }
  EXPECT_EQ(outliers, analysis.outliers.size());
}

TEST_F(ReportTest, OutliersAreComparedWithATypicalCallOfTheirFunction) {
  load(ServiceTrace().items());
  DetailSummary summary;
  auto embedded = collectInstances(*instances, analysis, DetailLimits{}, summary);
  const size_t before = embedded.size();
  const auto comparisons = collectComparisons(*instances, *reader, analysis, embedded, DetailLimits{});
  ASSERT_FALSE(comparisons.empty());
  EXPECT_LE(comparisons.size(), DetailLimits{}.comparisons);
  // The calls of a call, in entry order: the alignment's input.
  auto functionsOf = [](const Instance& in) {
    std::vector<uint32_t> out;
    for (const InstanceCall& c : in.calls)
      out.push_back(c.function);
    return out;
  };
  auto needlemanWunsch = [](const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
    std::vector<std::vector<int64_t>> t(a.size() + 1, std::vector<int64_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) t[i][0] = -static_cast<int64_t>(i);
    for (size_t j = 0; j <= b.size(); ++j) t[0][j] = -static_cast<int64_t>(j);
    for (size_t i = 1; i <= a.size(); ++i)
      for (size_t j = 1; j <= b.size(); ++j)
        t[i][j] = std::max({t[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 1 : -1), t[i - 1][j] - 1,
                            t[i][j - 1] - 1});
    return t[a.size()][b.size()];
  };
  for (const ReportComparison& c : comparisons) {
    ASSERT_LT(c.outlier, before);
    ASSERT_GE(c.typical, before);
    const Instance& o = embedded[c.outlier].instance;
    const Instance& t = embedded[c.typical].instance;
    EXPECT_EQ(embedded[c.outlier].reason, InstanceReason::kOutlier);
    EXPECT_EQ(embedded[c.typical].reason, InstanceReason::kTypical);
    // A call of the same function with the shape chosen for it, exactly as recorded, and why.
    EXPECT_EQ(t.function, o.function);
    const summaries::TypicalShape choice = summaries::typicalShapeFor(analysis, o.function, o.shape, embedded[c.outlier].same_work_slower);
    EXPECT_EQ(t.shape, choice.shape);
    EXPECT_EQ(c.alignment["typical_reason"], choice.reason);
    EXPECT_EQ(t.calls, truth(t.process, t.thread, t.start_ns, t.function));
    EXPECT_EQ(c.alignment["score"], needlemanWunsch(functionsOf(o), functionsOf(t)));
    EXPECT_EQ(c.alignment["a"]["calls"], o.calls.size());
    EXPECT_EQ(c.alignment["b"]["calls"], t.calls.size());
  }
  // Outliers compared with one shape on one thread share their typical call.
  std::set<size_t> typical;
  for (const ReportComparison& c : comparisons)
    typical.insert(c.typical);
  EXPECT_EQ(typical.size(), embedded.size() - before);
}

TEST_F(ReportTest, EveryEmbeddedCallHasItsPhases) {
  load(ServiceTrace().items());
  DetailSummary summary;
  const auto embedded = collectInstances(*instances, analysis, DetailLimits{}, summary);
  size_t summarised = 0;
  for (const ReportInstance& r : embedded) {
    const Json s = instanceSummary(r.instance, 1000);
    if (r.instance.calls.size() < 2) {
      EXPECT_TRUE(s.is_null());
      continue;
    }
    ++summarised;
    // Every call's entry and exit is in some phase, once.
    uint64_t events = 0;
    for (const Json& phase : s["phases"])
      events += phase["events"].get<uint64_t>();
    EXPECT_EQ(events, 2 * r.instance.calls.size());
    EXPECT_EQ(s["events"], 2 * r.instance.calls.size());
    // The first phase starts with the call's entry.
    EXPECT_EQ(s["phases"][0]["label"][0], r.instance.function);
  }
  EXPECT_GT(summarised, 0u);
}

TEST_F(ReportTest, TheIndexKeepsInstanceLookUpsShort) {
  ServiceTraceOptions options;
  options.requests_per_worker = 3000;
  load(ServiceTrace(options).items());
  const Outlier& o = analysis.outliers.back();
  ASSERT_TRUE(instances->find(o.process, o.thread, o.start_ns, o.start_ns + 1,
                              [&](const CallCandidate& c) { return c.function == o.function; },
                              100));
  // A scan would read every frame up to the outlier; the seek starts at its batch.
  size_t frames = 0;
  for (const auto& item : items) frames += item.kind() == wire::ItemKind::EventBatch;
  EXPECT_LT(instances->framesRead(), frames / 10);
}

TEST_F(ReportTest, DetailIsBoundedAndSaysSo) {
  load(ServiceTrace().items());
  DetailLimits limits;
  limits.max_instances = 5;
  limits.max_instance_calls = 3;
  DetailSummary summary;
  const auto embedded = collectInstances(*instances, analysis, limits, summary);
  ASSERT_EQ(embedded.size(), 5u);
  EXPECT_TRUE(summary.capped);
  for (const ReportInstance& r : embedded) {
    const auto all = truth(r.instance.process, r.instance.thread, r.instance.start_ns,
                           r.instance.function);
    ASSERT_LE(r.instance.calls.size(), 3u);
    EXPECT_EQ(r.instance.calls.size() + r.instance.omitted_calls, all.size());
    EXPECT_TRUE(std::equal(r.instance.calls.begin(), r.instance.calls.end(), all.begin()));
  }
  const Json data = Json::parse(dataText(reportData(analysis, {"recording", "rec", "t"},
                                                    embedded, limits, summary)));
  EXPECT_TRUE(data["detail"]["capped"].get<bool>());
  EXPECT_EQ(data["instances"].size(), 5u);
}

TEST_F(ReportTest, InstancesAfterAGapAreStillExact) {
  ServiceTraceOptions options;
  options.gap_on_last_worker = true;
  load(ServiceTrace(options).items());
  EXPECT_GT(run.droppedEvents(), 0u);
  DetailSummary summary;
  const auto embedded = collectInstances(*instances, analysis, DetailLimits{}, summary);
  EXPECT_EQ(summary.not_found, 0u);
  for (const ReportInstance& r : embedded)
    EXPECT_EQ(r.instance.calls, truth(r.instance.process, r.instance.thread, r.instance.start_ns,
                                      r.instance.function));
}

// The tracer made the thread of each outlier wait right after the outlier's call began (lossless
// recording): the analysis moves the call's start later by the wait, and the instance is still
// found, exactly, by the start the analysis gives.
TEST_F(ReportTest, OutliersOpenAcrossATracerWaitAreFound) {
  std::vector<wire::StreamItem> traced = ServiceTrace().items();
  load(traced);
  ASSERT_FALSE(analysis.outliers.empty());
  constexpr uint64_t kWaitNs = 5000;
  std::set<std::tuple<uint64_t, uint32_t, uint64_t>> outlier_starts;
  for (const Outlier& o : analysis.outliers)
    outlier_starts.insert({o.process, o.thread, o.start_ns});
  // Each thread's events in order: a wait after each outlier's enter, every later event delayed by
  // the waits before it, as the runtime's waits delay them.
  // Alongside, each call's start as the analysis gives it (later by every wait while it was open)
  // and its enter in the events.
  struct OpenCall {
    uint64_t enter, start;
    uint32_t function;
  };
  std::map<std::pair<uint64_t, uint32_t>, uint64_t> delay; // per thread, so far
  std::map<std::pair<uint64_t, uint32_t>, std::vector<OpenCall>> open;
  // (thread, analysis start, analysis function) -> enter
  std::map<std::tuple<uint32_t, uint64_t, uint32_t>, uint64_t> raw_start;
  for (auto& item : traced) {
    auto* batch = std::get_if<wire::EventBatch>(&item.body);
    if (!batch) continue;
    uint64_t& shift = delay[{item.process, batch->thread}];
    std::vector<OpenCall>& stack = open[{item.process, batch->thread}];
    for (uint32_t i = 0; i < batch->events.size(); ++i) {
      Event& e = batch->events[i];
      const uint64_t original = e.timestamp;
      e.timestamp += shift;
      if (e.kind != EventKind::Enter) {
        raw_start[{batch->thread, stack.back().start, stack.back().function}] = stack.back().enter;
        stack.pop_back();
        continue;
      }
      stack.push_back({e.timestamp, e.timestamp, analysisFunction(e.function_id)});
      if (outlier_starts.count({item.process, batch->thread, original})) {
        batch->tracer_waits.push_back({i + 1, e.timestamp, kWaitNs});
        for (OpenCall& call : stack)
          call.start += kWaitNs;
        shift += kWaitNs;
      }
    }
  }
  instances.reset();
  reader.reset();
  fs::remove_all(dir / "rec");
  load(traced);
  DetailSummary summary;
  const auto embedded = collectInstances(*instances, analysis, DetailLimits{}, summary);
  EXPECT_EQ(summary.not_found, 0u);
  // The waits change which calls are judged outliers (times move); many still waited.
  size_t outliers = 0, waited = 0;
  for (const ReportInstance& r : embedded) {
    if (r.reason != InstanceReason::kOutlier) continue;
    const Outlier& o = analysis.outliers[outliers++];
    EXPECT_EQ(r.instance.start_ns, o.start_ns);
    EXPECT_EQ(r.instance.duration_ns, o.duration_ns);
    const uint64_t enter = raw_start.at({o.thread, o.start_ns, o.function});
    waited += enter != o.start_ns;
    EXPECT_EQ(r.instance.calls, truth(o.process, o.thread, enter, o.function));
  }
  EXPECT_EQ(outliers, analysis.outliers.size());
  EXPECT_GT(waited, outliers / 2);
}

TEST_F(ReportTest, PageDataCarriesTheModelWithoutTheDag) {
  load(ServiceTrace().items());
  DetailSummary summary;
  const auto embedded = collectInstances(*instances, analysis, DetailLimits{}, summary);
  const Json data = Json::parse(dataText(
      reportData(analysis, {"recording", "rec", "t"}, embedded, DetailLimits{}, summary)));
  EXPECT_EQ(data["format"], "shapetrace-report");
  EXPECT_EQ(data["model"]["clusters"].size(), analysis.clustering.clusters.size());
  EXPECT_EQ(data["model"]["shapes"].size(), analysis.shapes.size() - 1);
  EXPECT_EQ(data["model"]["threads"].size(), 5u);
  EXPECT_FALSE(data["model"].contains("dag"));
  EXPECT_EQ(data["run"]["processes"][0]["executable"], "/opt/kvstore/bin/kvstore-server");
  const Json& first = data["instances"][0];
  EXPECT_EQ(first["calls"].size(), embedded[0].instance.calls.size());
  EXPECT_EQ(first["calls"][0][0], embedded[0].instance.function);
}

// Process keys are random 64-bit numbers; a JavaScript number holds 53 bits, so the page read
// 7777474232612461727 as 7777474232612462000 and its thread keys could not be pasted into
// `export --thread`. The page's data carries them as strings; every other number stays a number,
// and a name that holds the key's text is left as it is.
TEST(PageData, ProcessKeysTravelAsStrings) {
  const Json data = {
      {"model", {{"threads", Json::array({{{"process", 7777474232612461727ull}, {"thread", 28301}}})},
                 {"functions", Json::array({{{"name", "f(\"process\":1)"}}})}}},
      {"run", {{"processes", Json::array({{{"process", 18446744073709551615ull},
                                           {"parent_process", 7777474232612461727ull},
                                           {"pid", 42}}})},
               {"processes_without_end", 0}}}};
  const Json page = Json::parse(dataText(data));
  EXPECT_EQ(page["model"]["threads"][0]["process"], "7777474232612461727");
  EXPECT_EQ(page["model"]["threads"][0]["thread"], 28301);
  EXPECT_EQ(page["model"]["functions"][0]["name"], "f(\"process\":1)");
  EXPECT_EQ(page["run"]["processes"][0]["process"], "18446744073709551615");
  EXPECT_EQ(page["run"]["processes"][0]["parent_process"], "7777474232612461727");
  EXPECT_EQ(page["run"]["processes"][0]["pid"], 42);
  EXPECT_EQ(page["run"]["processes_without_end"], 0);
}

TEST_F(ReportTest, PageIsSelfContainedAndNamesCannotBreakOutOfTheData) {
  auto recorded = ServiceTrace().items();
  // A hostile function name: it must stay data.
  auto& table = std::get<wire::ModuleTable>(recorded[1].body);
  table.functions[2].demangled_name = "evil</script><script>alert(1)</script>";
  table.functions[2].mangled_name = "";
  load(recorded);
  DetailSummary summary;
  const auto embedded = collectInstances(*instances, analysis, DetailLimits{}, summary);
  const std::string page = renderPage(
      reportData(analysis, {"recording", "rec", "t"}, embedded, DetailLimits{}, summary));
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("@import"), std::string::npos);
  EXPECT_EQ(page.find("evil</script>"), std::string::npos);
  EXPECT_THAT(page, ::testing::HasSubstr("evil\\u003c/script>"));
  // The data element parses back to the model.
  const std::string open = "<script type=\"application/json\" id=\"shapetrace-data\">";
  const size_t begin = page.find(open) + open.size();
  const size_t end = page.find("</script>", begin);
  const Json data = Json::parse(page.substr(begin, end - begin));
  EXPECT_EQ(data["model"]["summary"]["clusters"], analysis.clustering.clusters.size());
  EXPECT_EQ(data["model"]["functions"][2]["name"], "evil</script><script>alert(1)</script>");
  // Styles and every script are inline.
  EXPECT_THAT(page, ::testing::HasSubstr("ST.Timeline = class"));
  EXPECT_THAT(page, ::testing::HasSubstr("--outlier:"));
}

struct Result {
  int exit_code = -1;
  std::string out, err;
};

class ReportCommandTest : public ReportTest {
protected:
  Result shapetrace(const std::string& args) {
    const std::string command = std::string(SHAPETRACE_BINARY) + " " + args + " >" +
                                (dir / "stdout").string() + " 2>" + (dir / "stderr").string();
    const int status = std::system(command.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "stdout"),
            slurp(dir / "stderr")};
  }
};

TEST_F(ReportCommandTest, WritesTheReport) {
  ServiceTrace().write((dir / "rec").string());
  const Result r = shapetrace("report " + (dir / "rec").string() + " -o " + (dir / "r.html").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("5 threads"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("embedded"));
  const std::string page = slurp(dir / "r.html");
  EXPECT_THAT(page, ::testing::StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(page, ::testing::HasSubstr("kv::BTree::splitPage(kv::Node*)"));
  EXPECT_FALSE(fs::exists(dir / "r.html.partial"));
}

TEST_F(ReportCommandTest, SameRecordingSameDataExceptTheDate) {
  ServiceTrace().write((dir / "rec").string());
  ASSERT_EQ(shapetrace("report " + (dir / "rec").string() + " -j 1 -o " + (dir / "a.html").string()).exit_code, 0);
  ASSERT_EQ(shapetrace("report " + (dir / "rec").string() + " -j 2 -o " + (dir / "b.html").string()).exit_code, 0);
  auto strip = [](std::string page) {
    const size_t at = page.find("\"generated_at\":");
    return page.erase(at, page.find(',', at) - at);
  };
  EXPECT_EQ(strip(slurp(dir / "a.html")), strip(slurp(dir / "b.html")));
}

TEST_F(ReportCommandTest, ClearErrors) {
  Result r = shapetrace("report " + (dir / "missing").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, ::testing::HasSubstr("is not a recording directory"));

  fs::create_directories(dir / "empty");
  r = shapetrace("report " + (dir / "empty").string() + " -o " + (dir / "x.html").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, ::testing::HasSubstr("shapetrace report: error:"));

  ServiceTrace().write((dir / "rec").string());
  r = shapetrace("report " + (dir / "rec").string() + " -o " + (dir / "no/such/dir/x.html").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, ::testing::HasSubstr("cannot write"));

  r = shapetrace("report");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, ::testing::HasSubstr("dir is required"));

  r = shapetrace("report " + (dir / "rec").string() + " --exemplars 5");
  EXPECT_NE(r.exit_code, 0);
}

} // namespace
} // namespace shapetrace::analyzer::report

namespace shapetrace::analyzer::report {
namespace {

// The live and fleet headline names lag and loss; nothing reads "0 dropped" while events wait.
TEST(ProgressLine, NamesLagAndLossAndNothingElse) {
  EXPECT_EQ(progressLine({100, 100, 0, 0}, 0),
            "analysed 100 of 100 events received · 0 items missed · 0 events dropped by the "
            "traced processes");
  EXPECT_EQ(progressLine({7560000, 5512000, 2048000, 3}, 12),
            "analysed 5512000 of 7560000 events received (2048000 waiting: the analysis is "
            "behind) · 3 items missed (the analysis fell behind, its queue overflowed) · 12 "
            "events dropped by the traced processes");
}

} // namespace
} // namespace shapetrace::analyzer::report
