// The fleet's figures (docs/BENCHMARKS.md, "Fleet"): a recording replayed as one host's live
// analysis, cut into windows of its own event time; per window the raw bytes of the stream items
// that arrived in it against the bytes of the summary taken at its end, the time to decode and
// merge that summary as the fleet does, and (with a NATS URL) the delay from taking the summary to
// the fleet having merged it through JetStream.
//
//   fleet_bench RECORDING [WINDOW_SECONDS=10] [NATS_URL]
//
// Prints one line per window and a last line of medians. Figures need a quiet machine.
#include "analyzer.h"
#include "fleet/merge.h"
#include "fleet/nats.h"
#include "fleet/summary.h"
#include "recording/recording.h"
#include "wire/codec.h"
#include "wire/format_error.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace shapetrace;
using Clock = std::chrono::steady_clock;

namespace {

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

uint64_t itemTime(const wire::StreamItem& item) {
  if (const auto* batch = std::get_if<wire::EventBatch>(&item.body))
    return batch->events.empty() ? 0 : batch->events.back().timestamp;
  return 0;
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fleet_bench RECORDING [WINDOW_SECONDS=10] [NATS_URL]\n");
    return 2;
  }
  const uint64_t window_ns = static_cast<uint64_t>((argc > 2 ? std::stod(argv[2]) : 10.0) * 1e9);
  std::unique_ptr<fleet::SummaryPublisher> publisher;
  std::unique_ptr<fleet::SummarySubscriber> subscriber;
  if (argc > 3) {
    fleet::NatsSettings nats;
    nats.url = argv[3];
    publisher = std::make_unique<fleet::SummaryPublisher>(nats, "fleetbench", "bench");
    subscriber = std::make_unique<fleet::SummarySubscriber>(nats, "fleetbench", "bench");
    subscriber->latestPerHost(); // the stream's earlier runs are not this run's
    while (!subscriber->fetch(256, std::chrono::milliseconds(200)).empty()) {
    }
  }

  recording::RecordingReader reader(argv[1]);
  analyzer::Analyzer analyzer(analyzer::AnalysisSettings{}, 1);
  fleet::FleetModel fleet;
  const uint64_t run = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  uint64_t sequence = 0, window_end = 0, raw_bytes = 0;
  std::vector<double> ratios, merge_ms, delay_ms;
  std::printf("window raw_bytes summary_bytes ratio encode_ms decode_merge_ms nats_delay_ms\n");
  auto takeWindow = [&] {
    const auto encode_start = Clock::now();
    const wire::Bytes summary =
        fleet::encodeSummary({"bench", ++sequence, 0, argv[1], run}, analyzer.mergeInputs());
    const double encode = msSince(encode_start);
    double delay = -1;
    if (publisher) {
      const auto sent = Clock::now();
      const std::string error =
          publisher->publish(summary, run, sequence, std::chrono::milliseconds(5000));
      if (!error.empty())
        std::fprintf(stderr, "fleet_bench: publish: %s\n", error.c_str());
      for (bool got = false; !got;)
        for (auto& message : subscriber->fetch(1, std::chrono::milliseconds(5000))) {
          fleet.offer(fleet::decodeSummary(message.bytes));
          fleet.merge(analyzer::AnalysisSettings{});
          if (message.ack)
            message.ack();
          got = true;
        }
      delay = msSince(sent);
      delay_ms.push_back(delay);
    }
    const auto merge_start = Clock::now();
    fleet::FleetModel alone;
    alone.offer(fleet::decodeSummary(summary));
    alone.merge(analyzer::AnalysisSettings{});
    const double merge = msSince(merge_start);
    const double ratio = static_cast<double>(summary.size()) / static_cast<double>(raw_bytes);
    std::printf("%llu %llu %zu %.5f %.2f %.2f %.2f\n", static_cast<unsigned long long>(sequence),
                static_cast<unsigned long long>(raw_bytes), summary.size(), ratio, encode, merge,
                delay);
    ratios.push_back(ratio);
    merge_ms.push_back(merge);
    raw_bytes = 0;
  };
  while (std::optional<recording::Frame> frame = reader.next()) {
    wire::StreamItem item;
    try {
      item = wire::decodeItem(frame->message);
    } catch (const wire::FormatError&) {
      continue;
    }
    const uint64_t time = itemTime(item);
    if (time != 0) {
      if (window_end == 0)
        window_end = time + window_ns;
      while (time >= window_end) {
        if (raw_bytes > 0)
          takeWindow();
        window_end += window_ns;
      }
    }
    raw_bytes += frame->message.size();
    analyzer.consume(std::move(item));
  }
  if (raw_bytes > 0)
    takeWindow();
  std::printf("median: ratio %.5f, decode+merge %.2f ms, NATS publish to merged %.2f ms\n",
              median(ratios), median(merge_ms), median(delay_ms));
  return 0;
}
