// The fleet's exact merge: hosts' summaries, encoded and decoded, merge to the model one analyzer
// computes over the union of the hosts' items; re-sent and out-of-order summaries are counted and
// dropped; bytes that are not a summary are refused with a FormatError, never a crash.
#include "fleet/merge.h"
#include "fleet/summary.h"
#include "hosts.h"
#include "support/memory.h"
#include "model_json.h"
#include "schema/summary.capnp.h"
#include "wire/format_error.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <gtest/gtest.h>
#include <random>

namespace shapetrace::fleet {
namespace {

using analyzer::AnalysisSettings;
using analyzer::Analyzer;

// A host: its own analyzer over its own items, and the summary it would publish.
wire::Bytes hostSummary(unsigned host, uint64_t sequence,
                        const std::vector<wire::StreamItem>& items) {
  Analyzer analyzer(AnalysisSettings{}, 1);
  for (const auto& item : items)
    analyzer.consume(item);
  return encodeSummary({"host-" + std::to_string(host), sequence, 0, "/rec"},
                       analyzer.mergeInputs());
}

// The model as JSON, without the DAG's size (the DAG is not carried, summary.capnp).
nlohmann::ordered_json modelOf(const analyzer::Analysis& analysis) {
  auto model = analyzer::toJson(analysis);
  model["summary"].erase("dag_nodes");
  return model;
}

TEST(FleetMerge, ThreeHostsMergeToTheSingleAnalyzerModelOfTheirUnion) {
  Analyzer single(AnalysisSettings{}, 1);
  FleetModel fleet;
  for (unsigned host = 0; host < 3; ++host) {
    const auto items = testing::hostItems(host);
    for (const auto& item : items)
      single.consume(item);
    ASSERT_EQ(fleet.offer(decodeSummary(hostSummary(host, 1, items))),
              FleetModel::Offer::kAccepted);
  }
  const auto expected = modelOf(single.snapshot());
  const auto merged = modelOf(fleet.merge(AnalysisSettings{}));
  // Not a trivial model: shapes shared across hosts, outliers, a gap, ended and open threads.
  ASSERT_EQ(expected["summary"]["threads"], 12);
  ASSERT_GT(expected["summary"]["shapes"], 5);
  ASSERT_GT(expected["outliers"].size(), 0u);
  EXPECT_EQ(merged.dump(1), expected.dump(1));
  EXPECT_EQ(fleet.counters().accepted, 3u);
}

TEST(FleetMerge, ASummaryDecodesToWhatWasEncoded) {
  const auto items = testing::hostItems(1);
  const wire::Bytes bytes = hostSummary(1, 7, items);
  HostSummary summary = decodeSummary(bytes);
  EXPECT_EQ(summary.header.host, "host-1");
  EXPECT_EQ(summary.header.sequence, 7u);
  EXPECT_EQ(summary.header.recording, "/rec");
  ASSERT_EQ(summary.threads.size(), 4u);
  EXPECT_EQ(summary.functions.size(), 12u); // 6 functions named by each of 2 processes
  // Encoding the decoded results again gives the same bytes.
  Analyzer::MergeInputs inputs;
  for (const HostThread& thread : summary.threads)
    inputs.threads.push_back({thread.key, thread.name, thread.ended, &thread.result});
  inputs.functions = &summary.functions;
  inputs.input_diagnostics = summary.diagnostics;
  EXPECT_EQ(encodeSummary(summary.header, inputs), bytes);
}

TEST(FleetMerge, ALaterSummarySupersedesAndResentOnesAreCountedDuplicates) {
  const auto items = testing::hostItems(0, 1, 1, 3);
  const std::vector<wire::StreamItem> first_part(items.begin(), items.begin() + 4);
  FleetModel fleet;
  EXPECT_EQ(fleet.offer(decodeSummary(hostSummary(0, 1, first_part))),
            FleetModel::Offer::kAccepted);
  EXPECT_EQ(fleet.offer(decodeSummary(hostSummary(0, 1, first_part))),
            FleetModel::Offer::kDuplicate);
  // Summary 2 never arrives; 3 holds everything.
  EXPECT_EQ(fleet.offer(decodeSummary(hostSummary(0, 3, items))), FleetModel::Offer::kAccepted);
  EXPECT_EQ(fleet.offer(decodeSummary(hostSummary(0, 2, first_part))),
            FleetModel::Offer::kDuplicate);
  EXPECT_EQ(fleet.counters().accepted, 2u);
  EXPECT_EQ(fleet.counters().duplicates, 2u);
  EXPECT_EQ(fleet.counters().skipped, 1u);

  Analyzer single(AnalysisSettings{}, 1);
  for (const auto& item : items)
    single.consume(item);
  EXPECT_EQ(modelOf(fleet.merge(AnalysisSettings{})).dump(), modelOf(single.snapshot()).dump());
}

wire::Bytes bytesOf(std::string_view text) {
  wire::Bytes bytes(text.size());
  std::memcpy(bytes.data(), text.data(), text.size());
  return bytes;
}

TEST(FleetMerge, BytesThatAreNotASummaryAreRefusedWithAFormatError) {
  EXPECT_THROW(decodeSummary({}), wire::FormatError);
  EXPECT_THROW(decodeSummary(bytesOf("{\"json\": 1}")), wire::FormatError); // not 8-byte words
  EXPECT_THROW(decodeSummary(bytesOf("0123456789abcdef")), wire::FormatError);
  // A valid zstd frame of bytes that are not a Cap'n Proto summary.
  EXPECT_THROW(decodeSummary(compressSummary(bytesOf("0123456789abcdef"))), wire::FormatError);
  EXPECT_THROW(decodeSummary(compressSummary(bytesOf("0123456"))), wire::FormatError);
  const wire::Bytes good = hostSummary(2, 1, testing::hostItems(2, 1, 1, 1));
  // Every truncation and every single-byte corruption either decodes or throws FormatError.
  for (size_t size = 1; size < good.size(); ++size)
    EXPECT_THROW(decodeSummary(std::span(good).first(size)), wire::FormatError) << size;
  std::mt19937_64 random(5);
  for (int i = 0; i < 300; ++i) {
    wire::Bytes bad = good;
    bad[random() % bad.size()] = static_cast<std::byte>(random());
    try {
      decodeSummary(bad);
    } catch (const wire::FormatError&) {
    }
  }
}

// The forged summary of the attack in docs/security.md: 8 threads naming function 2^24-1. It took
// 4 GB and ended the fleet view with bad_alloc; now it costs what its bytes do.
TEST(FleetMerge, ASummaryNamingTheLargestFunctionIdCostsWhatItsBytesDo) {
  const int64_t before = shapetrace::testing::peakRssMib();
  const wire::Bytes forged = hostSummary(9, 1, testing::largestFunctionIdItems(8));
  EXPECT_LT(forged.size(), 1024u);
  FleetModel fleet;
  ASSERT_EQ(fleet.offer(decodeSummary(forged)), FleetModel::Offer::kAccepted);
  ASSERT_EQ(fleet.offer(decodeSummary(hostSummary(0, 1, testing::hostItems(0)))),
            FleetModel::Offer::kAccepted);
  const analyzer::Analysis merged = fleet.merge(AnalysisSettings{});
  EXPECT_EQ(merged.threads.size(), 8u + 4u);
  if (shapetrace::testing::kPeakRssMeasuresTheCode) {
    EXPECT_LT(shapetrace::testing::peakRssMib() - before, 200);
  }
}

// A function's time with recursion counted once is part of its calls' summed time: a summary
// claiming more is refused, so that a forged figure cannot swell the fleet's.
TEST(FleetMerge, AnInclusiveTimeAboveTheCallsSumIsRefused) {
  HostSummary summary = decodeSummary(hostSummary(1, 1, testing::hostItems(1)));
  Analyzer::MergeInputs inputs;
  for (HostThread& thread : summary.threads) {
    for (auto& [id, f] : thread.result.functions)
      f.inclusive_ns = static_cast<uint64_t>(f.stats.moments.sum()) + 1;
    inputs.threads.push_back({thread.key, thread.name, thread.ended, &thread.result});
  }
  inputs.functions = &summary.functions;
  try {
    decodeSummary(encodeSummary(summary.header, inputs));
    FAIL() << "decoded";
  } catch (const wire::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("inclusive time exceeds its calls' summed time"),
              std::string::npos) << e.what();
  }
}

TEST(FleetMerge, ASummaryOfAnotherVersionIsRefused) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::summary_schema::HostSummary>();
  root.setVersion(wire::summary_schema::SUMMARY_VERSION + 1);
  root.setHost("host-0");
  root.setSequence(1);
  const auto words = capnp::messageToFlatArray(message);
  const auto bytes = words.asBytes();
  try {
    decodeSummary(compressSummary(std::as_bytes(std::span(bytes.begin(), bytes.size()))));
    FAIL() << "decoded";
  } catch (const wire::FormatError& e) {
    EXPECT_EQ(e.reason(), wire::FormatErrorReason::UnsupportedVersion) << e.what();
  }
}

} // namespace
} // namespace shapetrace::fleet
