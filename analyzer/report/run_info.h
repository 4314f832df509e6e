// What the report's header says about the run besides the analysis: the processes (executable,
// pid, host), the module tables (to map event function ids back for the instance view), and the
// events the runtime says it dropped. Fed the same StreamItems as the Analyzer, in the same order.
#pragma once

#include "wire/items.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shapetrace::analyzer::report {

class RunInfo {
public:
  void observe(const wire::StreamItem& item);

  using FunctionMap = std::map<std::pair<uint64_t, uint32_t>, wire::FunctionInfo>;
  const FunctionMap& functions() const { return functions_; }
  uint64_t droppedEvents() const { return dropped_events_; }
  uint64_t firstNs() const { return first_ns_; }
  uint64_t lastNs() const { return last_ns_; }

  // {"processes": [...], "dropped_events", "first_ns", "last_ns"}.
  nlohmann::ordered_json toJson() const;

private:
  struct Process {
    uint64_t id = 0;
    uint32_t pid = 0;
    std::string executable;
    std::vector<std::string> arguments;
    std::string hostname;
    bool ended = false;
    int32_t exit_status = 0;
  };
  void noteTime(uint64_t ns);

  std::map<uint64_t, Process> processes_;
  FunctionMap functions_;
  uint64_t dropped_events_ = 0;
  uint64_t first_ns_ = UINT64_MAX;
  uint64_t last_ns_ = 0;
};

} // namespace shapetrace::analyzer::report
