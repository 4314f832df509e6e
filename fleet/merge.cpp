// The fleet's exact merge: every host's latest per-thread results through analyze().
#include "fleet/merge.h"

namespace shapetrace::fleet {

FleetModel::Offer FleetModel::offer(HostSummary summary) {
  const HostRun host{summary.header.host, summary.header.run};
  auto it = hosts_.find(host);
  const uint64_t latest = it == hosts_.end() ? 0 : it->second.header.sequence;
  if (summary.header.sequence <= latest) {
    ++counters_.duplicates;
    return Offer::kDuplicate;
  }
  counters_.skipped += summary.header.sequence - latest - 1;
  ++counters_.accepted;
  hosts_.insert_or_assign(host, std::move(summary));
  return Offer::kAccepted;
}

std::map<analyzer::ThreadKey, std::string> FleetModel::threadHosts() const {
  std::map<analyzer::ThreadKey, std::string> hosts;
  for (const auto& [host, summary] : hosts_)
    for (const HostThread& thread : summary.threads)
      hosts[thread.key] = host.first;
  return hosts;
}

analyzer::LiveProgress FleetModel::progress() const {
  analyzer::LiveProgress total;
  for (const auto& [host, summary] : hosts_) total += summary.header.progress;
  return total;
}

std::vector<std::string> FleetModel::hostsWithoutFinalSummary() const {
  std::vector<std::string> hosts;
  for (const auto& [host, summary] : hosts_)
    if (!summary.header.final) hosts.push_back(host.first);
  return hosts;
}

analyzer::Analysis FleetModel::merge(const analyzer::AnalysisSettings& settings,
                                     const std::string& only_host) const {
  std::vector<analyzer::ThreadInput> threads;
  analyzer::FunctionTables functions;
  analyzer::Diagnostics input_diagnostics;
  for (const auto& [host, summary] : hosts_) {
    if (!only_host.empty() && host.first != only_host)
      continue;
    for (const HostThread& thread : summary.threads)
      threads.push_back({thread.key, thread.name, thread.ended, &thread.result});
    functions.insert(summary.functions.begin(), summary.functions.end());
    input_diagnostics.merge(summary.diagnostics);
  }
  auto resolve = [&functions](uint64_t process, uint32_t id) -> const wire::FunctionInfo* {
    auto it = functions.find({process, id});
    return it == functions.end() ? nullptr : &it->second;
  };
  analyzer::Analysis analysis = analyzer::analyze(std::move(threads), resolve, settings);
  analysis.diagnostics.merge(input_diagnostics);
  return analysis;
}

} // namespace shapetrace::fleet
