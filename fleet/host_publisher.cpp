// The host's outbox: the latest summary, published from a thread of its own until acknowledged.
#include "fleet/host_publisher.h"

#include "cli/write_file.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>

namespace shapetrace::fleet {

namespace {
constexpr auto kAckWait = std::chrono::milliseconds(2000);
constexpr auto kRetryEvery = std::chrono::milliseconds(500);

int64_t realtimeNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
} // namespace

HostPublisher::HostPublisher(const NatsSettings& settings, std::string stream, std::string host,
                             std::string recording, std::string state_file)
    : publisher_(settings, std::move(stream), host), host_(std::move(host)),
      recording_(std::move(recording)), state_file_(std::move(state_file)),
      run_(std::random_device{}() | uint64_t{1} << 40) {
  if (std::ifstream in{state_file_}; !state_file_.empty() && in) {
    const auto state = nlohmann::json::parse(in, nullptr, false);
    if (state.is_discarded() || !state.is_object() || state.value("host", "") != host_ ||
        !state.contains("run") || !state.contains("sequence") ||
        !state["run"].is_number_unsigned() || !state["sequence"].is_number_unsigned())
      throw std::runtime_error(state_file_ + " is not the fleet state of host " + host_ +
                               " (remove it to start a new run)");
    run_ = state["run"].get<uint64_t>();
    sequence_ = state["sequence"].get<uint64_t>();
    resumed_ = true;
  }
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void HostPublisher::saveState() {
  if (state_file_.empty()) return;
  const nlohmann::json state = {{"host", host_}, {"run", run_}, {"sequence", sequence_}};
  try {
    cli::writeFileAtomically(state_file_, state.dump() + "\n");
  } catch (const std::exception& e) {
    std::lock_guard lock(mutex_);
    status_.state_error = e.what();
  }
}

HostPublisher::~HostPublisher() {
  waitDelivered(std::chrono::seconds(3));
  thread_.request_stop();
  changed_.notify_all();
}

void HostPublisher::takeSummary(analyzer::Analyzer& analyzer,
                                const analyzer::LiveProgress& progress, bool final) {
  Pending pending;
  pending.sequence = ++sequence_;
  // Before it can be published: a restarted host never reuses a sequence of its run.
  saveState();
  pending.bytes = encodeSummary(
      {host_, pending.sequence, realtimeNs(), recording_, run_, progress, final},
      analyzer.mergeInputs());
  std::lock_guard lock(mutex_);
  ++status_.encoded;
  status_.last_bytes = pending.bytes.size();
  if (outbox_)
    ++status_.superseded;
  outbox_ = std::move(pending);
  changed_.notify_all();
}

PublisherStatus HostPublisher::status() const {
  std::lock_guard lock(mutex_);
  PublisherStatus status = status_;
  status.connected = publisher_.connected();
  return status;
}

bool HostPublisher::waitDelivered(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [this] { return !outbox_; });
}

void HostPublisher::run(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    if (!changed_.wait(lock, stop, [this] { return outbox_.has_value(); }))
      return;
    Pending pending = *outbox_;
    lock.unlock();
    const std::string error = publisher_.publish(pending.bytes, run_, pending.sequence, kAckWait);
    lock.lock();
    if (error.empty()) {
      ++status_.published;
      status_.last_error.clear();
      if (outbox_ && outbox_->sequence == pending.sequence)
        outbox_.reset();
      changed_.notify_all();
    } else {
      ++status_.failures;
      status_.last_error = error;
      changed_.wait_for(lock, stop, kRetryEvery, [] { return false; });
    }
  }
}

} // namespace shapetrace::fleet
