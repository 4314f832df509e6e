// The analysis behind `shapetrace live`: a ZeroMQ SUB socket on the collector's publish endpoint
// feeds an Analyzer on a thread of its own, which publishes a snapshot (the page's data plus the
// merged Analysis) every interval. Readers (the HTTP server, the terminal summary) take the latest
// snapshot without ever waiting for the analysis.
//
// The socket only connects: whether a collector is there is known once an item arrives, so until
// then the snapshot says "waiting" (ZeroMQ keeps retrying the connection in the background).
#pragma once

#include "analysis.h"
#include "extensions/run_info.h"
#include "input.h"
#include "report/metrics.h"
#include "report/recent.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace shapetrace::analyzer {
class Analyzer;
class LiveInput;
} // namespace shapetrace::analyzer

namespace shapetrace::analyzer::report {

struct LiveSnapshot {
  std::shared_ptr<const Analysis> analysis;
  RunInfo run;
  std::string data_json; // the page's data (page.h dataText), with live_state
  std::string metrics;   // the same moment as Prometheus metrics (metrics.h)
  uint64_t items = 0;
  uint64_t undecodable = 0;
  LiveProgress progress; // analysed X of Y events received: lag and loss in the headline
  bool waiting = true;   // nothing received yet
  std::chrono::steady_clock::duration elapsed{};
};

class LiveSession {
public:
  // `extensions`: a selection for selectExtensions(); run_info always runs (the page's header).
  // Throws std::invalid_argument for an unknown extension.
  LiveSession(std::string endpoint, AnalysisSettings settings, unsigned jobs,
              std::string extensions, std::chrono::milliseconds interval,
              MetricsSettings metrics = {});
  ~LiveSession();
  LiveSession(const LiveSession&) = delete;
  LiveSession& operator=(const LiveSession&) = delete;

  // Before start(): `hook` runs on the analysis thread every `window`, and once more (`final`)
  // when the session stops, with the analyzer and how far it is (what `live --nats` publishes a
  // summary of, fleet/).
  using WindowHook = std::function<void(Analyzer&, const LiveProgress&, bool final)>;
  void onWindow(std::chrono::milliseconds window, WindowHook hook);
  // Before start(): the analysis begins with everything recorded in `recording` (the collector's
  // --out) and goes on live from there, nothing twice (LiveInput::resumeFrom): a restarted host.
  void resumeFrom(std::string recording) { resume_from_ = std::move(recording); }
  // Connects and starts the analysis thread. Throws zmq::error_t for an endpoint ZeroMQ rejects.
  void start();
  // Stops receiving and analyses what was received but not analysed yet (reporting its progress
  // on stderr every second), until `abandon` returns true (a second Ctrl-C): the last snapshot
  // then says how much was left.
  void finish(std::function<bool()> abandon);
  // Stops at once: what waits in the queue stays unanalysed (the last snapshot counts it).
  void stop();
  // The latest snapshot (never null after start()).
  std::shared_ptr<const LiveSnapshot> latest() const;
  const std::string& endpoint() const { return endpoint_; }

private:
  void run(std::stop_token stop);
  void publish(Analyzer& analyzer);

  const std::string endpoint_;
  const AnalysisSettings settings_;
  const unsigned jobs_;
  const std::vector<const ExtensionSpec*> extensions_;
  const std::chrono::milliseconds interval_;
  const MetricsSettings metrics_;
  std::chrono::milliseconds window_{0};
  WindowHook window_hook_;
  std::string resume_from_;
  RecentWindows recent_; // touched by publish() only, on one thread at a time
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  mutable std::mutex mutex_;
  std::shared_ptr<const LiveSnapshot> latest_;
  std::unique_ptr<LiveInput> input_;
  std::atomic<bool> catch_up_{false};
  std::function<bool()> abandon_; // set before catch_up_
  std::jthread thread_;
};

} // namespace shapetrace::analyzer::report
