// Run-level facts gathered from the stream items.
#include "extensions/run_info.h"

#include <type_traits>

namespace shapetrace::analyzer {

void RunInfo::noteTime(uint64_t ns) {
  if (ns == 0) return;
  if (ns < first_ns_) first_ns_ = ns;
  if (ns > last_ns_) last_ns_ = ns;
}

void RunInfo::observe(const wire::StreamItem& item) {
  Process& process = processes_[item.process];
  process.id = item.process;
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, wire::ProcessStart>) {
          process.pid = body.pid;
          process.executable = body.executable;
          process.arguments = body.arguments;
          process.hostname = body.hostname;
        } else if constexpr (std::is_same_v<T, wire::EventBatch>) {
          if (!body.events.empty()) {
            noteTime(body.events.front().timestamp);
            noteTime(body.events.back().timestamp);
          }
        } else if constexpr (std::is_same_v<T, wire::Gap>) {
          dropped_events_ += body.dropped;
        } else if constexpr (std::is_same_v<T, wire::ProcessEnd>) {
          process.ended = true;
          process.exit_status = body.exit_status;
        }
      },
      item.body);
}

nlohmann::ordered_json RunInfo::toJson() const {
  nlohmann::ordered_json processes = nlohmann::ordered_json::array();
  for (const auto& [id, p] : processes_)
    processes.push_back({{"process", id},
                         {"pid", p.pid},
                         {"executable", p.executable},
                         {"arguments", p.arguments},
                         {"hostname", p.hostname},
                         {"ended", p.ended},
                         {"exit_status", p.exit_status}});
  return {{"processes", std::move(processes)},
          {"dropped_events", dropped_events_},
          {"first_ns", first_ns_ == UINT64_MAX ? 0 : first_ns_},
          {"last_ns", last_ns_}};
}

} // namespace shapetrace::analyzer
