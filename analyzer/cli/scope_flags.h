// The options that name a scope (scope.h), declared once for every command that takes one
// (summarize, export; compare takes the same names in its positional arguments), so that they
// read and check alike.
#pragma once

#include "scope.h"

#include <CLI/CLI.hpp>

namespace shapetrace::analyzer {

inline void addScopeFlags(CLI::App& command, ScopeRequest& r) {
  command.add_option("--thread", r.thread,
                     "Only this thread: its id, PROCESS:ID, or its name (every thread of that "
                     "name)");
  command.add_option("--function", r.function,
                     "The calls of this function (its name, with or without parameters, or its "
                     "mangled name), each with everything under it");
  command.add_option("--shape", r.shape, "The calls of this shape (its id in the analysis)");
  command.add_option("--cluster", r.cluster, "The calls of this cluster's shapes (its id)");
  command.add_option("--instance", r.instance,
                     "One call and everything under it: THREAD@TIME (the outermost call starting "
                     "at TIME on THREAD) or outlier:N (the analysis' N-th outlier, 0 the most "
                     "extreme)");
  command.add_option("--from", r.from,
                     "Window start: nanoseconds as the JSON model has them, or from the run's "
                     "start with a unit (1.5s, 200ms, 30us, 100ns)")
      ->check(checkTime);
  command.add_option("--to", r.to, "Window end, as --from")->check(checkTime);
  command.add_option("--depth", r.depth,
                     "Levels of calls kept below each root (a thread's outermost calls, or each "
                     "call of the function, shape, cluster or instance); 0: the roots alone");
}

} // namespace shapetrace::analyzer
