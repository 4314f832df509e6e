// The live analysis thread: receive, analyse, publish a snapshot every interval.
#include "report/live_session.h"

#include "analyzer.h"
#include "fanout.h"
#include "report/page.h"
#include "report/report_data.h"
#include "wire/codec.h"
#include "wire/format_error.h"

#include <zmq.hpp>

#include <cstdlib>

namespace shapetrace::analyzer::report {

// The collector's subscriber: it consumes heartbeats and the end marker and counts what was missed.
struct LiveSocket {
  explicit LiveSocket(const std::string& endpoint)
      : subscriber(context, endpoint, curveServerKey()) {}
  static std::string curveServerKey() {
    const char* key = std::getenv("SHAPETRACE_CURVE_SERVER_KEY");
    return key ? key : "";
  }
  zmq::context_t context;
  collector::Subscriber subscriber;
};

LiveSession::LiveSession(std::string endpoint, AnalysisSettings settings, unsigned jobs,
                         std::chrono::milliseconds interval)
    : endpoint_(std::move(endpoint)), settings_(settings), jobs_(jobs), interval_(interval) {}

LiveSession::~LiveSession() { stop(); }

void LiveSession::start() {
  socket_ = std::make_unique<LiveSocket>(endpoint_);
  {
    // A first, empty snapshot so that readers never see nothing.
    Analyzer empty(settings_, 1);
    publish(empty, RunInfo{}, 0, 0);
  }
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void LiveSession::stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
  socket_.reset();
}

std::shared_ptr<const LiveSnapshot> LiveSession::latest() const {
  std::lock_guard lock(mutex_);
  return latest_;
}

void LiveSession::run(std::stop_token stop) {
  Analyzer analyzer(settings_, jobs_);
  RunInfo run;
  uint64_t items = 0, undecodable = 0;
  auto next_publish = std::chrono::steady_clock::now() + interval_;
  collector::Subscriber& subscriber = socket_->subscriber;
  uint64_t missed = 0, malformed = 0;
  // The subscriber's loss counters, reported as the analyzer's own diagnostics.
  auto countLoss = [&] {
    analyzer.count(Stat::live_items_missed, subscriber.missed() - missed);
    analyzer.count(Stat::undecodable_messages, subscriber.malformed() - malformed);
    undecodable += subscriber.malformed() - malformed;
    missed = subscriber.missed();
    malformed = subscriber.malformed();
  };
  while (!stop.stop_requested()) {
    if (std::chrono::steady_clock::now() >= next_publish) {
      countLoss();
      publish(analyzer, run, items, undecodable);
      next_publish += interval_;
    }
    // A timeout (or the collector's end marker) comes back empty: check the clock and the stop flag.
    auto received = subscriber.receive(std::chrono::milliseconds(100));
    if (!received)
      continue;
    const zmq::message_t& message = received->message;
    try {
      wire::StreamItem item = wire::decodeItem(
          std::span(static_cast<const std::byte*>(message.data()), message.size()));
      run.observe(item);
      analyzer.consume(std::move(item));
      ++items;
    } catch (const wire::FormatError&) {
      ++undecodable;
      analyzer.count(Stat::undecodable_messages);
    }
  }
  countLoss();
  publish(analyzer, run, items, undecodable);
}

void LiveSession::publish(Analyzer& analyzer, const RunInfo& run, uint64_t items,
                          uint64_t undecodable) {
  auto snapshot = std::make_shared<LiveSnapshot>();
  snapshot->analysis = std::make_shared<const Analysis>(analyzer.snapshot());
  snapshot->run = run;
  snapshot->items = items;
  snapshot->undecodable = undecodable;
  snapshot->waiting = items == 0 && undecodable == 0;
  snapshot->elapsed = std::chrono::steady_clock::now() - started_;
  DetailLimits none{0, 0, 0, 1};
  nlohmann::ordered_json data = reportData(*snapshot->analysis, run,
                                           {"live", endpoint_, utcNow()}, {}, none, {});
  data["live_state"] = {{"endpoint", endpoint_},
                        {"waiting", snapshot->waiting},
                        {"items", items},
                        {"undecodable", undecodable}};
  snapshot->data_json = dataText(data);
  std::lock_guard lock(mutex_);
  latest_ = std::move(snapshot);
}

} // namespace shapetrace::analyzer::report
