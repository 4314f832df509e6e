// `shapetrace filter` on recordings of known costs (written by the collector's RecordingWriter):
// the exact rule file and summary it writes for a budget, what it never leaves out, and every
// error a user can meet. tests/pass/e2e/filter.test applies a written file through the wrappers.
#include "recording/recording.h"
#include "support/command.h"
#include "trace_builder.h"
#include "wire/codec.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace shapetrace::analyzer {
namespace {

namespace fs = std::filesystem;
using testing::batchItem;
using testing::call;
using testing::eventsOf;
using Result = shapetrace::testing::CommandResult;
using shapetrace::testing::slurp;

class FilterCommandTest : public shapetrace::testing::CommandTest {
protected:
  FilterCommandTest() : CommandTest("shapetrace-filter-") {}

  Result shapetrace(const std::string& args) {
    return runCommand(std::string(SHAPETRACE_BINARY) + " " + args);
  }

  // main (self 10 us) calls work 100 times (500 ns self each); each work calls hash 4 times (50 ns)
  // and cmp 4 times (60 ns), and one work in ten calls log (1 us): 911 calls (main 1, work 100,
  // hash 400, cmp 400, log 10) in 114 us of self time. At --call-cost 40 the hooks took
  // 36.44 us of it: the program alone P = 77.56 us, recording everything 1.47x.
  fs::path knownCosts() {
    wire::ModuleTable table{"m", 0, {}};
    table.functions.push_back({1, "_Z4mainv", "main()", "main.cpp", 1});
    table.functions.push_back({2, "_Z4worki", "work(int)", "main.cpp", 2});
    table.functions.push_back({3, "_Z4hashi", "hash(int)", "main.cpp", 3});
    table.functions.push_back({4, "_Z3cmpii", "cmp(int, int)", "main.cpp", 4});
    table.functions.push_back({5, "_Z3logPKc", "log(char const*)", "main.cpp", 5});
    std::vector<testing::Call> works;
    for (int i = 0; i < 100; ++i) {
      std::vector<testing::Call> children;
      for (int j = 0; j < 4; ++j) {
        children.push_back(call(3, {}, 50));
        children.push_back(call(4, {}, 60));
      }
      if (i % 10 == 0) children.push_back(call(5, {}, 1000));
      works.push_back(call(2, std::move(children), 500));
    }
    return record({{1, table}, batchItem(1, 11, 0, eventsOf({call(1, works, 10'000)}))});
  }

  fs::path record(const std::vector<wire::StreamItem>& items) {
    const fs::path rec = dir / "rec";
    recording::RecordingWriter writer(rec.string());
    for (const auto& item : items)
      EXPECT_TRUE(writer.append(wire::encodeItem(item)));
    EXPECT_TRUE(writer.close());
    return rec;
  }

  // The rule file's rules, without its comments.
  std::string rules(const fs::path& file) {
    std::string text = slurp(file), out;
    size_t start = 0;
    while (start < text.size()) {
      const size_t end = text.find('\n', start);
      const std::string line = text.substr(start, end - start);
      if (!line.starts_with("#")) out += line + "\n";
      start = end == std::string::npos ? text.size() : end + 1;
    }
    return out;
  }
};

// 1.2x needs 524 calls out (911 - 15.512 us / 40 ns): hash and cmp, the leaves of most calls, hash
// first (shorter); log, a leaf of 10 calls, is not needed.
TEST_F(FilterCommandTest, LeavesOutTheLeavesOfMostCallsShortestFirst) {
  const fs::path rec = knownCosts();
  const Result r = shapetrace("filter " + rec.string() + " --budget 1.2x --call-cost 40 -o " +
                              (dir / "rules").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(dir / "rules"),
            "# shapetrace filter " + rec.string() +
                " --budget 1.2x: expected overhead 1.06x (budget 1.20x)\n"
                "# Use with SHAPETRACE_PASS_FILTER=<this file> (docs/pass.md, \"Filters\").\n"
                "# hash(int): 400 calls, 50 ns self per call\n"
                "exclude _Z4hashi\n"
                "# cmp(int, int): 400 calls, 60 ns self per call\n"
                "exclude _Z3cmpii\n");
  EXPECT_EQ(r.out, rec.string() +
                       ": 911 calls of 5 functions in 114.0 us; the hooks at 40 ns a call\n"
                       "estimated overhead recording every function: 1.47x\n"
                       "left out: 2 functions, 800 calls (87.8% of the calls), 38.6% of the recorded "
                       "self time\n"
                       "expected overhead with " + (dir / "rules").string() +
                       ": 1.06x (budget 1.20x)\n"
                       "           400 calls      50 ns self/call  hash\n"
                       "           400 calls      60 ns self/call  cmp\n");
  EXPECT_EQ(r.err, "");
}

// 1.05x needs 815 calls out: hash, cmp and log (810), then work, a leaf once its callees are all
// out (910); log is taken back, the budget holding without it (900).
TEST_F(FilterCommandTest, ACallerWhoseCalleesAreOutIsALeafAndUnneededChoicesAreTakenBack) {
  const fs::path rec = knownCosts();
  const Result r = shapetrace("filter " + rec.string() + " --budget 1.05 --call-cost 40 -o " +
                              (dir / "rules").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(rules(dir / "rules"), "exclude _Z4hashi\nexclude _Z3cmpii\nexclude _Z4worki\n");
  EXPECT_NE(r.out.find("left out: 3 functions, 900 calls (98.8% of the calls), 82.5% of the recorded self time"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(": 1.01x (budget 1.05x)"), std::string::npos) << r.out;
}

// --keep hash: cmp (400) and log (10) are the only leaves; work is not one while hash stays, and
// is taken next (510 of the 427 needed); log is then taken back.
TEST_F(FilterCommandTest, KeptFunctionsStayAndKeepTheirCallersNonLeaves) {
  const fs::path rec = knownCosts();
  const Result r = shapetrace("filter " + rec.string() + " --budget 1.25x --call-cost 40 --keep "
                              "'hash(*' -o " + (dir / "rules").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(rules(dir / "rules"), "exclude _Z3cmpii\nexclude _Z4worki\n");
}

// Within the budget already: a rule file without rules (every function instrumented).
TEST_F(FilterCommandTest, WithinTheBudgetAlreadyWritesNoRule) {
  const fs::path rec = knownCosts();
  const Result r = shapetrace("filter " + rec.string() + " --budget 1.5x --call-cost 40 -o " +
                              (dir / "rules").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(rules(dir / "rules"), "");
  EXPECT_NE(r.out.find("left out: 0 functions, 0 calls (0.0% of the calls), 0.0% of the recorded self time"),
            std::string::npos)
      << r.out;
}

// --cpu-time replaces the recording's time: 200 us, of which 36.44 us hooks, recording everything
// costs 1.22x; 1.2x needs only hash out.
TEST_F(FilterCommandTest, CpuTimeReplacesTheRecordingsTime) {
  const fs::path rec = knownCosts();
  const Result r = shapetrace("filter " + rec.string() + " --budget 1.2x --call-cost 40 "
                              "--cpu-time 0.0002 -o " + (dir / "rules").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(rules(dir / "rules"), "exclude _Z4hashi\n");
  EXPECT_NE(r.out.find("911 calls of 5 functions in 200.0 us"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("recording every function: 1.22x"), std::string::npos) << r.out;
}

TEST_F(FilterCommandTest, ABudgetTheKeptFunctionsExceedIsAnError) {
  const fs::path rec = knownCosts();
  // With cmp kept, everything else out (hash, log, work: 510 calls) leaves 401 calls: 1.21x.
  const Result r = shapetrace("filter " + rec.string() + " --budget 1.03x --call-cost 40 --keep "
                              "_Z3cmpii -o " + (dir / "rules").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "shapetrace filter: error: no filter reaches 1.03x: with every function that "
                   "may be left out left out, recording costs 1.21x (the functions kept: called "
                   "at a thread's root, named by --keep, or unnamed)\n");
  EXPECT_FALSE(fs::exists(dir / "rules"));
}

TEST_F(FilterCommandTest, BadInputIsRefusedWithTheReason) {
  const fs::path rec = knownCosts();
  const std::string out = " -o " + (dir / "rules").string();
  struct Case {
    std::string args;
    int exit_code;
    std::string error;
  };
  const std::vector<Case> cases{
      {rec.string() + " --budget abc" + out, 2,
       "shapetrace filter: error: --budget: 'abc' is not a ratio (e.g. 1.2x)\n"},
      {rec.string() + " --budget 1.2y" + out, 2,
       "shapetrace filter: error: --budget: '1.2y' is not a ratio (e.g. 1.2x)\n"},
      {rec.string() + " --budget x" + out, 2,
       "shapetrace filter: error: --budget: 'x' is not a ratio (e.g. 1.2x)\n"},
      {rec.string() + " --budget nan" + out, 2,
       "shapetrace filter: error: --budget: 'nan' is not a ratio (e.g. 1.2x)\n"},
      {rec.string() + " --budget 1x" + out, 2,
       "shapetrace filter: error: --budget: 1x leaves nothing for the hooks: give a ratio above "
       "1 (1.2x: the program's time plus 20%)\n"},
      {rec.string() + " --budget 0.5" + out, 2,
       "shapetrace filter: error: --budget: 0.5 leaves nothing for the hooks: give a ratio above "
       "1 (1.2x: the program's time plus 20%)\n"},
      {(dir / "missing").string() + " --budget 1.2x" + out, 1,
       "shapetrace filter: error: " + (dir / "missing").string() +
           " is not a recording directory\n"},
      {rec.string() + " --budget 1.2x --keep 'nothing*'" + out, 1,
       "shapetrace filter: error: --keep nothing*: no function of the recording matches\n"},
      {rec.string() + " --budget 1.2x --call-cost 200" + out, 1,
       "shapetrace filter: error: the hooks' cost of 911 calls at 200 ns each exceeds the run's "
       "114.0 us (the self time of its timed calls): give a lower --call-cost, or --cpu-time\n"},
  };
  for (const Case& c : cases) {
    const Result r = shapetrace("filter " + c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.args;
    EXPECT_EQ(r.err, c.error) << c.args;
    EXPECT_FALSE(fs::exists(dir / "rules")) << c.args;
  }
  // CLI11's own checks: a required option missing, a cost that is not positive.
  for (const std::string& args : {rec.string() + " --budget 1.2x", rec.string() + out,
                                 rec.string() + " --budget 1.2x --call-cost 0" + out,
                                 rec.string() + " --budget 1.2x --cpu-time -1" + out}) {
    const Result r = shapetrace("filter " + args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.err, "") << args;
  }
}

TEST_F(FilterCommandTest, ARecordingWithoutCallsIsAnError) {
  wire::ModuleTable table{"m", 0, {}};
  table.functions.push_back({1, "_Z4mainv", "main()", "main.cpp", 1});
  const fs::path rec = record({{1, table}});
  const Result r = shapetrace("filter " + rec.string() + " --budget 1.2x -o " +
                              (dir / "rules").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "shapetrace filter: error: " + rec.string() + " holds no calls\n");
}

} // namespace
} // namespace shapetrace::analyzer
