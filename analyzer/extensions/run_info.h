// The extension "run_info": what the report's header says about the run besides the analysis: the
// processes (executable, pid, host, how they ended), the events the runtime says it dropped, and
// the time the events span. It observes the stream items; it has no per-thread consumer.
#pragma once

#include "extension.h"
#include "wire/items.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace shapetrace::analyzer {

class RunInfo {
public:
  void observe(const wire::StreamItem& item);

  uint64_t droppedEvents() const { return dropped_events_; }
  // Processes seen whose ProcessEnd never came (so far).
  uint64_t processesWithoutEnd() const;
  uint64_t firstNs() const { return first_ns_; }
  uint64_t lastNs() const { return last_ns_; }
  // Every process's pid by its key, folded ones' included.
  std::map<uint64_t, uint32_t> pids() const;

  // An ended process the Analyzer folded (Analyzer::foldProcess) is counted in the folded
  // processes and its entry freed: its pid is all that is kept of it (exports name pids). A
  // process without its end is never folded, so processesWithoutEnd() stays exact.
  void foldProcess(uint64_t process);

  // {"processes": [...], "dropped_events", "processes_without_end", "first_ns", "last_ns"}, and
  // "folded_processes" once a process was folded: {"count", "exited", "exited_nonzero",
  // "signalled", "exec", "events_dropped"}.
  nlohmann::ordered_json toJson() const;

private:
  struct Process {
    uint64_t id = 0;
    uint32_t pid = 0;
    std::string executable;
    std::vector<std::string> arguments;
    std::string hostname;
    wire::ProcessOrigin origin = wire::ProcessOrigin::Started;
    uint64_t parent_process = 0, previous_image = 0;
    std::optional<wire::ProcessEnd> end;
    std::string failed_exec; // origin execFailed: the program its exec could not run
    std::optional<wire::ExitStatus> reaped; // how `shapetrace record` saw it end
  };
  // What the report's header says of the processes folded away.
  struct FoldedProcesses {
    uint64_t count = 0, exited = 0, exited_nonzero = 0, signalled = 0, exec = 0;
    uint64_t events_dropped = 0;
  };
  void noteTime(uint64_t ns);

  std::map<uint64_t, Process> processes_;
  FoldedProcesses folded_;
  std::unordered_map<uint64_t, uint32_t> folded_pids_; // a folded process's pid by its key
  uint64_t dropped_events_ = 0;
  uint64_t first_ns_ = UINT64_MAX;
  uint64_t last_ns_ = 0;
};

class RunInfoExtension final : public Extension {
public:
  static constexpr std::string_view kName = "run_info";
  void observe(const wire::StreamItem& item) override { run_.observe(item); }
  nlohmann::ordered_json result(const Analysis&, FunctionIndex&) const override {
    return run_.toJson();
  }
  // It keeps nothing per thread; a folded process's entry is freed.
  bool foldsProcesses() const override { return true; }
  void foldProcess(uint64_t process, const std::function<uint32_t(uint32_t)>&) override {
    run_.foldProcess(process);
  }
  const RunInfo& run() const { return run_; }

private:
  RunInfo run_;
};

} // namespace shapetrace::analyzer
