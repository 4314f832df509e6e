// The live analysis thread: receive, analyse, publish a snapshot every interval.
#include "report/live_session.h"

#include "analyzer.h"
#include "input.h"
#include "report/page.h"
#include "report/report_data.h"

#include <cstdio>

namespace shapetrace::analyzer::report {

LiveSession::LiveSession(std::string endpoint, AnalysisSettings settings, unsigned jobs,
                         std::string extensions, std::chrono::milliseconds interval,
                         MetricsSettings metrics)
    : endpoint_(std::move(endpoint)), settings_(settings), jobs_(jobs),
      extensions_(selectExtensions(extensions + ",run_info")), interval_(interval),
      metrics_(std::move(metrics)) {}

LiveSession::~LiveSession() { stop(); }

void LiveSession::onWindow(std::chrono::milliseconds window, WindowHook hook) {
  window_ = window;
  window_hook_ = std::move(hook);
}

void LiveSession::start() {
  input_ = std::make_unique<LiveInput>(endpoint_);
  {
    // A first, empty snapshot so that readers never see nothing.
    Analyzer empty(settings_, 1, makeExtensions(extensions_, settings_));
    publish(empty);
  }
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void LiveSession::finish(std::function<bool()> abandon) {
  abandon_ = std::move(abandon);
  catch_up_.store(true);
  stop();
}

void LiveSession::stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
  input_.reset();
}

std::shared_ptr<const LiveSnapshot> LiveSession::latest() const {
  std::lock_guard lock(mutex_);
  return latest_;
}

void LiveSession::run(std::stop_token stop) {
  Analyzer analyzer(settings_, jobs_, makeExtensions(extensions_, settings_));
  if (!resume_from_.empty()) {
    try {
      input_->resumeFrom(resume_from_, analyzer);
    } catch (const std::exception& e) { // the recording cannot be read: go on live only
      std::fprintf(stderr, "shapetrace live: warning: cannot resume from the recording %s: %s\n",
                   resume_from_.c_str(), e.what());
    }
  }
  auto next_publish = std::chrono::steady_clock::now() + interval_;
  auto next_window = std::chrono::steady_clock::now() + window_;
  while (!stop.stop_requested()) {
    if (window_hook_ && std::chrono::steady_clock::now() >= next_window) {
      input_->countLoss(analyzer);
      window_hook_(analyzer, input_->progress(), false);
      next_window += window_;
    }
    if (std::chrono::steady_clock::now() >= next_publish) {
      input_->countLoss(analyzer);
      publish(analyzer);
      next_publish += interval_;
    }
    // A timeout (or the collector's end marker) comes back empty: check the clock and the stop flag.
    input_->feed(analyzer, std::chrono::milliseconds(100));
  }
  if (catch_up_.load()) input_->catchUp(analyzer, abandon_, "live");
  input_->countLoss(analyzer);
  if (window_hook_) window_hook_(analyzer, input_->progress(), true);
  publish(analyzer);
}

void LiveSession::publish(Analyzer& analyzer) {
  const uint64_t items = input_ ? input_->items() : 0;
  const uint64_t undecodable = input_ ? input_->undecodable() : 0;
  auto snapshot = std::make_shared<LiveSnapshot>();
  if (input_) snapshot->progress = input_->progress();
  snapshot->analysis = std::make_shared<const Analysis>(analyzer.snapshot());
  snapshot->run =
      static_cast<const RunInfoExtension*>(analyzer.extension(RunInfoExtension::kName))->run();
  snapshot->items = items;
  snapshot->undecodable = undecodable;
  snapshot->waiting = items == 0 && undecodable == 0;
  snapshot->elapsed = std::chrono::steady_clock::now() - started_;
  DetailLimits none{0, 0, 0, 1};
  nlohmann::ordered_json data =
      reportData(*snapshot->analysis, {"live", endpoint_, utcNow()}, {}, none, {});
  const double now_s = std::chrono::duration<double>(snapshot->elapsed).count();
  recent_.observe(*snapshot->analysis, now_s);
  data["recent"] = recent_.json(*snapshot->analysis, now_s);
  data["live_state"] = {{"endpoint", endpoint_},
                        {"waiting", snapshot->waiting},
                        {"items", items},
                        {"undecodable", undecodable},
                        {"progress", progressJson(snapshot->progress)}};
  snapshot->data_json = dataText(data);
  snapshot->metrics =
      metricsText(*snapshot->analysis, snapshot->run, {items, undecodable, snapshot->progress}, metrics_);
  std::lock_guard lock(mutex_);
  latest_ = std::move(snapshot);
}

} // namespace shapetrace::analyzer::report
