// `shapetrace export` end to end on recordings written by the collector's RecordingWriter: folded
// stacks; pprof read back with profile.proto and by `go tool pprof -top` (totals equal ours);
// Perfetto read back with its schema, every call one slice; speedscope checked against the
// required structure of its published schema; and every bad input.
#include "perfetto_trace.pb.h"
#include "profile.pb.h"
#include "recording/recording.h"
#include "support/command.h"
#include "trace_builder.h"
#include "wire/codec.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <filesystem>
#include <map>
#include <sys/wait.h>

namespace shapetrace::analyzer {
namespace {

namespace fs = std::filesystem;
using shapetrace::testing::slurp;
using testing::batchItem;
using testing::call;
using testing::eventsOf;

using Result = shapetrace::testing::CommandResult;

class ExportCommandTest : public shapetrace::testing::CommandTest {
protected:
  ExportCommandTest() : CommandTest("shapetrace-export-") {}

  Result run(const std::string& command_line) { return runCommand(command_line); }
  Result shapetrace(const std::string& args) {
    return run(std::string(SHAPETRACE_BINARY) + " " + args);
  }

  // main { work, work { work } } and a lone work on two threads; main()'s self is 10 ns, each
  // work's 10 ns (trace_builder's default): per thread 5 calls, 50 ns.
  fs::path record(bool with_calls = true) {
    wire::ModuleTable table{"m", 0, {}};
    table.functions.push_back({1, "_Z4mainv", "main()", "main.cpp", 3});
    table.functions.push_back({2, "_Z4workv", "work()", "main.cpp", 9});
    std::vector<wire::StreamItem> items{{1, table}, {1, wire::ThreadStart{11, 0, "worker"}}};
    if (with_calls)
      for (uint32_t thread : {11u, 12u})
        items.push_back(batchItem(1, thread, 0,
                                  eventsOf({call(1, {call(2), call(2, {call(2)})}), call(2)})));
    const fs::path rec = dir / "rec";
    recording::RecordingWriter writer(rec.string());
    for (const auto& item : items)
      EXPECT_TRUE(writer.append(wire::encodeItem(item)));
    EXPECT_TRUE(writer.close());
    return rec;
  }
};

std::string gunzip(const std::string& bytes) {
  z_stream zs{};
  EXPECT_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char buffer[65536];
  int status = Z_OK;
  while (status == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buffer);
    zs.avail_out = sizeof buffer;
    status = inflate(&zs, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - zs.avail_out);
  }
  inflateEnd(&zs);
  EXPECT_EQ(status, Z_STREAM_END);
  return out;
}

TEST_F(ExportCommandTest, FoldedStacksOfTheRunAndOfOneThread) {
  const fs::path rec = record();
  Result r = shapetrace("export " + rec.string() + " --format folded");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "main() 20\nmain();work() 40\nmain();work();work() 20\nwork() 20\n");
  r = shapetrace("export " + rec.string() + " --format folded --thread worker -o " +
                 (dir / "w.folded").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(dir / "w.folded"), "main() 10\nmain();work() 20\nmain();work();work() 10\nwork() 10\n");
  r = shapetrace("export " + rec.string() + " --format folded --thread 12 --fold direct");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "main() 10\nmain();work() 30\nwork() 10\n");
}

TEST_F(ExportCommandTest, ScopesNamedAsSummarizeNamesThem) {
  const fs::path rec = record();
  // Every outermost call of work, as the roots of the stacks (scope.h, read back from the
  // recording): per thread the first work, work { work } and the lone work.
  Result r = shapetrace("export " + rec.string() + " --format folded --function work");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "work() 60\nwork();work() 20\n");
  // The roots alone: the nested work is their own time.
  r = shapetrace("export " + rec.string() + " --format folded --function work --depth 0");
  EXPECT_EQ(r.out, "work() 80\n");
  // A window of one thread: the calls that start in [1015, 1040) ns.
  r = shapetrace("export " + rec.string() + " --format folded --thread worker --from 1015 --to 1040");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "work() 10\nwork();work() 10\n");
  // One call, as a Perfetto trace: its two slices.
  const fs::path out = dir / "call.pftrace";
  r = shapetrace("export " + rec.string() + " --format perfetto --instance worker@1015 -o " +
                 out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  perfetto::protos::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(slurp(out)));
  int begins = 0;
  for (const auto& packet : trace.packet())
    begins += packet.has_track_event() &&
              packet.track_event().type() == perfetto::protos::TrackEvent::TYPE_SLICE_BEGIN;
  EXPECT_EQ(begins, 2);
  r = shapetrace("export " + rec.string() + " --format folded --function work --from 10s");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("has no calls to export"), std::string::npos) << r.err;
  r = shapetrace("export " + rec.string() + " --format folded --function nosuch");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no function 'nosuch' in the recording"), std::string::npos) << r.err;
  r = shapetrace("export " + rec.string() + " --format folded --from soon");
  EXPECT_EQ(r.exit_code, 2);
}

TEST_F(ExportCommandTest, PprofHasCallsTotalAndSelfPerStackAndGoToolPprofAgrees) {
  const fs::path rec = record();
  const fs::path out = dir / "run.pb.gz";
  const Result r = shapetrace("export " + rec.string() + " --format pprof -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  perftools::profiles::Profile profile;
  ASSERT_TRUE(profile.ParseFromString(gunzip(slurp(out))));
  ASSERT_EQ(profile.sample_type_size(), 3);
  auto string = [&](int64_t index) { return profile.string_table(static_cast<int>(index)); };
  EXPECT_EQ(string(profile.sample_type(0).type()), "calls");
  EXPECT_EQ(string(profile.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(string(profile.default_sample_type()), "self");
  std::map<std::string, std::vector<int64_t>> by_stack;
  std::map<uint64_t, std::string> names;
  for (const auto& f : profile.function())
    names[f.id()] = string(f.name());
  int64_t calls = 0, self = 0;
  for (const auto& s : profile.sample()) {
    std::string stack;
    for (int i = s.location_id_size(); i-- > 0;) // the leaf is first
      stack += (stack.empty() ? "" : ";") + names[s.location_id(i)];
    by_stack[stack] = {s.value(0), s.value(1), s.value(2)};
    calls += s.value(0);
    self += s.value(2);
  }
  EXPECT_EQ(calls, 10);
  EXPECT_EQ(self, 100);
  EXPECT_EQ(by_stack["main()"], (std::vector<int64_t>{2, 80, 20}));
  EXPECT_EQ(by_stack["main();work()"], (std::vector<int64_t>{4, 60, 40}));
  // Its duration is the recording's wall time as `info` prints it: the two threads ran over the
  // same 50 ns, which is not the 100 ns of their times added up.
  const Result info = shapetrace("info " + rec.string() + " --json");
  ASSERT_EQ(info.exit_code, 0) << info.err;
  uint64_t first = UINT64_MAX, last = 0;
  const nlohmann::json recording_info = nlohmann::json::parse(info.out);
  for (const auto& process : recording_info["processes"])
    for (const auto& thread : process["threads"])
      if (thread["events"].get<uint64_t>() > 0) {
        first = std::min(first, thread["first_ns"].get<uint64_t>());
        last = std::max(last, thread["last_ns"].get<uint64_t>());
      }
  ASSERT_EQ(last - first, 50u);
  EXPECT_EQ(profile.duration_nanos(), 50);

  // `go tool pprof` (Debian's golang-go) reads it and finds the same total and duration.
  if (run("command -v go").exit_code != 0) GTEST_SKIP() << "go is not installed";
  const Result top = run("HOME=" + dir.string() + " GOCACHE=" + (dir / "gocache").string() +
                         " go tool pprof -top -unit=ns " + out.string());
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_NE(top.out.find("100ns total"), std::string::npos) << top.out;
  const Result raw = run("HOME=" + dir.string() + " GOCACHE=" + (dir / "gocache").string() +
                         " go tool pprof -raw " + out.string());
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  EXPECT_NE(raw.out.find("\nDuration: 50ns\n"), std::string::npos) << raw.out;
  const Result top_calls = run("HOME=" + dir.string() + " GOCACHE=" + (dir / "gocache").string() +
                               " go tool pprof -top -sample_index=calls " + out.string());
  ASSERT_EQ(top_calls.exit_code, 0) << top_calls.err;
  EXPECT_NE(top_calls.out.find("of 10 total"), std::string::npos) << top_calls.out;
  // -diff_base: the profile against itself leaves nothing.
  const Result diff = run("HOME=" + dir.string() + " GOCACHE=" + (dir / "gocache").string() +
                          " go tool pprof -top -unit=ns -diff_base=" + out.string() + " " +
                          out.string());
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  EXPECT_NE(diff.out.find("Showing nodes accounting for 0, 0% of 100ns total"), std::string::npos)
      << diff.out;
}

TEST_F(ExportCommandTest, PerfettoHasEveryCallAsOneSliceWithInternedNames) {
  const fs::path rec = record();
  const fs::path out = dir / "run.perfetto-trace";
  const Result r = shapetrace("export " + rec.string() + " --format perfetto -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  perfetto::protos::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(slurp(out)));
  std::map<uint32_t, std::map<uint64_t, std::string>> interned; // per sequence
  std::map<uint32_t, std::vector<std::string>> open;            // per sequence
  std::map<std::string, int> slices;
  std::map<uint64_t, std::string> thread_tracks;
  for (const auto& packet : trace.packet()) {
    const uint32_t seq = packet.trusted_packet_sequence_id();
    ASSERT_NE(seq, 0u);
    if (packet.has_track_descriptor() && packet.track_descriptor().has_thread()) {
      EXPECT_EQ(packet.sequence_flags() &
                    perfetto::protos::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED,
                1u);
      thread_tracks[packet.track_descriptor().uuid()] =
          std::to_string(packet.track_descriptor().thread().tid());
    }
    for (const auto& name : packet.interned_data().event_names())
      interned[seq][name.iid()] = name.name();
    if (!packet.has_track_event()) continue;
    const auto& event = packet.track_event();
    EXPECT_EQ(thread_tracks.count(event.track_uuid()), 1u);
    if (event.type() == perfetto::protos::TrackEvent::TYPE_SLICE_BEGIN) {
      ASSERT_EQ(interned[seq].count(event.name_iid()), 1u) << "interned before use";
      open[seq].push_back(interned[seq][event.name_iid()]);
    } else {
      ASSERT_EQ(event.type(), perfetto::protos::TrackEvent::TYPE_SLICE_END);
      ASSERT_FALSE(open[seq].empty());
      ++slices[open[seq].back()];
      open[seq].pop_back();
    }
  }
  EXPECT_EQ(thread_tracks.size(), 2u);
  for (const auto& [seq, stack] : open)
    EXPECT_TRUE(stack.empty());
  EXPECT_EQ(slices, (std::map<std::string, int>{{"main()", 2}, {"work()", 8}}));
}

TEST_F(ExportCommandTest, SpeedscopeHasTheRequiredStructureOfItsSchema) {
  const fs::path rec = record();
  const Result r = shapetrace("export " + rec.string() + " --format speedscope");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // https://www.speedscope.app/file-format-schema.json: SpeedscopeFile requires $schema (that
  // constant), shared.frames (Frame: name required; file string; line number), profiles;
  // EventedProfile requires type "evented", name, unit (one of the ValueUnits), startValue,
  // endValue, events; an event requires type "O" or "C", at, frame (an index into frames).
  EXPECT_EQ(j["$schema"], "https://www.speedscope.app/file-format-schema.json");
  ASSERT_TRUE(j["shared"]["frames"].is_array());
  for (const auto& frame : j["shared"]["frames"]) {
    EXPECT_TRUE(frame["name"].is_string());
    if (frame.contains("line")) EXPECT_TRUE(frame["line"].is_number());
  }
  const size_t frames = j["shared"]["frames"].size();
  ASSERT_EQ(j["profiles"].size(), 2u);
  int calls = 0;
  for (const auto& p : j["profiles"]) {
    EXPECT_EQ(p["type"], "evented");
    EXPECT_TRUE(p["name"].is_string());
    EXPECT_EQ(p["unit"], "nanoseconds");
    ASSERT_TRUE(p["startValue"].is_number() && p["endValue"].is_number());
    std::vector<int> stack;
    double at = p["startValue"];
    for (const auto& e : p["events"]) {
      ASSERT_TRUE(e["frame"].is_number_unsigned());
      ASSERT_LT(e["frame"].get<size_t>(), frames);
      ASSERT_GE(e["at"].get<double>(), at) << "events in time order";
      at = e["at"];
      if (e["type"] == "O") {
        stack.push_back(e["frame"]);
        ++calls;
      } else {
        ASSERT_EQ(e["type"], "C");
        ASSERT_FALSE(stack.empty());
        EXPECT_EQ(stack.back(), e["frame"].get<int>()) << "closes the innermost open frame";
        stack.pop_back();
      }
    }
    EXPECT_TRUE(stack.empty());
    EXPECT_LE(at, p["endValue"].get<double>());
  }
  EXPECT_EQ(calls, 10);
}

TEST_F(ExportCommandTest, BadInputGivesClearErrors) {
  const fs::path rec = record();
  Result r = shapetrace("export " + rec.string() + " --format svg");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("svg"), std::string::npos) << r.err;
  r = shapetrace("export " + rec.string());
  EXPECT_EQ(r.exit_code, 2) << "--format is required";
  r = shapetrace("export " + rec.string() + " --format folded -o /nonexistent-dir/x.folded");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("shapetrace export: error:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/nonexistent-dir/x.folded"), std::string::npos) << r.err;
  r = shapetrace("export " + rec.string() + " --format folded --thread nosuch");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no thread 'nosuch' in the recording (threads: 11 (worker), 12)"),
            std::string::npos)
      << r.err;
  r = shapetrace("export " + (dir / "missing").string() + " --format folded");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  fs::remove_all(rec);
  const fs::path empty = record(false);
  for (const char* format : {"folded", "pprof", "speedscope", "perfetto"}) {
    r = shapetrace("export " + empty.string() + " --format " + format + " -o " +
                   (dir / "x").string());
    EXPECT_EQ(r.exit_code, 1) << format;
    EXPECT_NE(r.err.find("the recording has no"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "x"));
  }
}

} // namespace
} // namespace shapetrace::analyzer
