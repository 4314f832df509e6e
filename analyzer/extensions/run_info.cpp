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
  // An ExitStatus of a process that never connected (key 0) names no process of the stream.
  if (item.process == 0 && item.kind() == wire::ItemKind::ExitStatus) return;
  // `record` reaps orphans late: their ExitStatus may come after their fold, which kept the pid.
  if (item.kind() == wire::ItemKind::ExitStatus && folded_pids_.contains(item.process)) return;
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
          process.origin = body.origin;
          process.parent_process = body.parent_process;
          process.previous_image = body.previous_image;
        } else if constexpr (std::is_same_v<T, wire::EventBatch>) {
          if (!body.events.empty()) {
            noteTime(body.events.front().timestamp);
            noteTime(body.events.back().timestamp);
          }
        } else if constexpr (std::is_same_v<T, wire::Gap>) {
          dropped_events_ += body.dropped;
        } else if constexpr (std::is_same_v<T, wire::ProcessEnd>) {
          process.end = body;
        } else if constexpr (std::is_same_v<T, wire::ExecFailed>) {
          process.failed_exec = body.path;
        } else if constexpr (std::is_same_v<T, wire::ExitStatus>) {
          process.reaped = body;
          if (process.pid == 0) process.pid = body.pid;
        }
      },
      item.body);
}

uint64_t RunInfo::processesWithoutEnd() const {
  uint64_t count = 0;
  for (const auto& [id, p] : processes_) count += !p.end;
  return count;
}

std::map<uint64_t, uint32_t> RunInfo::pids() const {
  std::map<uint64_t, uint32_t> pids(folded_pids_.begin(), folded_pids_.end());
  // A key used again after its fold (a crafted stream) keeps the pid it had.
  for (const auto& [id, p] : processes_) pids.try_emplace(id, p.pid);
  return pids;
}

void RunInfo::foldProcess(uint64_t process) {
  const auto it = processes_.find(process);
  if (it == processes_.end() || !it->second.end) return;
  const wire::ProcessEnd& end = *it->second.end;
  ++folded_.count;
  folded_.exited += end.reason == wire::EndReason::Exit || end.reason == wire::EndReason::ExitImmediately;
  folded_.exited_nonzero += end.reason != wire::EndReason::Signal &&
                            end.reason != wire::EndReason::Exec && end.exit_status != 0;
  folded_.signalled += end.reason == wire::EndReason::Signal;
  folded_.exec += end.reason == wire::EndReason::Exec;
  folded_.events_dropped += end.events_dropped;
  folded_pids_.emplace(process, it->second.pid);
  processes_.erase(it);
}

nlohmann::ordered_json RunInfo::toJson() const {
  nlohmann::ordered_json processes = nlohmann::ordered_json::array();
  uint64_t without_end = 0;
  for (const auto& [id, p] : processes_) {
    nlohmann::ordered_json end = nullptr;
    if (p.end) {
      end = {{"reason", wire::endReasonName(p.end->reason)},
             {"exit_status", p.end->exit_status},
             {"events_dropped", p.end->events_dropped}};
      if (p.end->reason == wire::EndReason::Exec) end["exec_path"] = p.end->exec_path;
    }
    without_end += !p.end;
    processes.push_back({{"process", id},
                         {"pid", p.pid},
                         {"executable", p.executable},
                         {"arguments", p.arguments},
                         {"hostname", p.hostname},
                         {"origin", wire::processOriginName(p.origin)},
                         {"parent_process", p.parent_process},
                         {"previous_image", p.previous_image},
                         {"ended", p.end.has_value()},
                         {"exit_status", p.end ? p.end->exit_status : 0},
                         {"end", std::move(end)},
                         {"failed_exec", p.failed_exec},
                         {"reaped", p.reaped ? wire::describeExitStatus(*p.reaped) : ""}});
  }
  nlohmann::ordered_json json = {{"processes", std::move(processes)},
                                 {"dropped_events", dropped_events_},
                                 {"processes_without_end", without_end},
                                 {"first_ns", first_ns_ == UINT64_MAX ? 0 : first_ns_},
                                 {"last_ns", last_ns_}};
  if (folded_.count != 0)
    json["folded_processes"] = {{"count", folded_.count},
                                {"exited", folded_.exited},
                                {"exited_nonzero", folded_.exited_nonzero},
                                {"signalled", folded_.signalled},
                                {"exec", folded_.exec},
                                {"events_dropped", folded_.events_dropped}};
  return json;
}

} // namespace shapetrace::analyzer
