// Extensions of the model: an analysis beyond the shapes that runs in the same pass over the same
// input, for a recording and a live stream alike (docs/analyzer.md, "How to add an analysis").
//
// An extension may
// - give each thread of the input a consumer (thread_consumer.h), which runs on that thread's
//   worker beside its ThreadAnalyzer: events, gap markers and the thread's end, in order; a
//   consumer that wants calls wraps a call-stack Sink in a CallStreamConsumer;
// - observe every stream item, in arrival order, on the thread that feeds the Analyzer;
// - produce its part of the model after the merge, from its consumers and the merged Analysis;
//   `functions` maps a process's function id to the model's function index (adding the function
//   to the model when no finished call had named it yet).
// Its result is written in the JSON model under "extensions" -> its name, and the page shows it if a
// view for it is registered (analyzer/report/page/).
//
// The built-in extensions are listed once, in extensions/registry.cpp (the library
// shapetrace_extension_registry, which links them: the engine does not); `--extensions` selects
// which run.
#pragma once

#include "analysis.h"
#include "thread_consumer.h"
#include "wire/items.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace shapetrace::analyzer {

class Extension {
public:
  virtual ~Extension() = default;
  // The thread's consumer, or nullptr. Called once per thread when its first item arrives.
  virtual std::unique_ptr<ThreadConsumer> consumerFor(const ThreadKey& /*thread*/) {
    return nullptr;
  }
  // Whether the Analyzer may fold the threads it gave consumers once they end (thread_fold.h): an
  // extension that can keep what an ended thread's consumer holds in a per-process state, or
  // forget it and say so in its result. Threads followed by any extension that cannot are kept
  // whole to the end.
  virtual bool foldsThreads() const { return false; }
  // The ended thread is folded: its consumer's state goes into its process's folded state (or is
  // dropped and counted) and the extension forgets the consumer, which the Analyzer frees next.
  // Called with the consumers idle, for every extension, whether it gave the thread a consumer or
  // not; the thread's id may start a new thread (and a new consumer) later.
  virtual void foldThread(const ThreadKey& /*thread*/) {}
  // Whether the Analyzer may fold an ended process whose threads it gave consumers (thread_fold.h,
  // foldProcess): an extension that folds threads and can add a process's folded state into the
  // folded processes'. A process with a thread followed by any extension that cannot is kept
  // whole to the end.
  virtual bool foldsProcesses() const { return false; }
  // The ended process is folded: each of its threads was folded first (foldThread); its state goes
  // into the folded processes' (process kFoldedProcessesKey), its function ids mapped to theirs by
  // `function_of`. Called with the consumers idle, for every extension.
  virtual void foldProcess(uint64_t /*process*/,
                           const std::function<uint32_t(uint32_t)>& /*function_of*/) {}
  // Every item, before the threads' consumers see it.
  virtual void observe(const wire::StreamItem& /*item*/) {}
  // Its part of the model. The consumers are idle while this runs.
  virtual nlohmann::ordered_json result(const Analysis& analysis,
                                        FunctionIndex& functions) const = 0;
};

struct ExtensionSpec {
  std::string_view name; // its key in the model, and its name for --extensions
  std::string_view description;
  std::unique_ptr<Extension> (*make)(const AnalysisSettings& settings);
};

// Every built-in extension, in the order their results are written.
const std::vector<ExtensionSpec>& extensionSpecs();

// Names separated by commas, "all" standing for every one and "none" for none (any order; they run
// in extensionSpecs() order).
// Throws std::invalid_argument naming the unknown name and the known ones.
std::vector<const ExtensionSpec*> selectExtensions(std::string_view selection);

// One instance of each selected extension, with its name.
struct NamedExtension {
  std::string name;
  std::unique_ptr<Extension> extension;
};
std::vector<NamedExtension> makeExtensions(const std::vector<const ExtensionSpec*>& specs,
                                           const AnalysisSettings& settings);

} // namespace shapetrace::analyzer
