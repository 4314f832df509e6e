// The live analysis thread: receive, analyse, publish a snapshot every interval.
#include "report/live_session.h"

#include "analyzer.h"
#include "report/page.h"
#include "report/report_data.h"
#include "wire/codec.h"
#include "wire/format_error.h"

#include <zmq.hpp>

#include <cstring>

namespace shapetrace::analyzer::report {

struct LiveSocket {
  zmq::context_t context;
  zmq::socket_t socket{context, zmq::socket_type::sub};
};

LiveSession::LiveSession(std::string endpoint, AnalysisSettings settings, unsigned jobs,
                         std::chrono::milliseconds interval)
    : endpoint_(std::move(endpoint)), settings_(settings), jobs_(jobs), interval_(interval) {}

LiveSession::~LiveSession() { stop(); }

void LiveSession::start() {
  socket_ = std::make_unique<LiveSocket>();
  socket_->socket.set(zmq::sockopt::subscribe, "");
  socket_->socket.set(zmq::sockopt::rcvtimeo, 100);
  socket_->socket.set(zmq::sockopt::linger, 0);
  socket_->socket.connect(endpoint_);
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
  std::vector<std::byte> aligned;
  while (!stop.stop_requested()) {
    if (std::chrono::steady_clock::now() >= next_publish) {
      publish(analyzer, run, items, undecodable);
      next_publish += interval_;
    }
    zmq::message_t message;
    if (!socket_->socket.recv(message)) continue; // timeout: check the clock and the stop flag
    while (message.more() && socket_->socket.recv(message)) {
      // The item is the last frame of a multipart message.
    }
    // Cap'n Proto reads words: copy into 8-byte aligned storage.
    aligned.resize((message.size() + 7) / 8 * 8);
    std::memcpy(aligned.data(), message.data(), message.size());
    try {
      wire::StreamItem item = wire::decodeItem(std::span(aligned).first(message.size()));
      run.observe(item);
      analyzer.consume(std::move(item));
      ++items;
    } catch (const wire::FormatError&) {
      ++undecodable;
      analyzer.count(Stat::undecodable_messages);
    }
  }
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
