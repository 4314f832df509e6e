// The built-in extensions, listed once, and the --extensions selection (declared in extension.h;
// this file is the registry library, above every extension it lists).
#include "extension.h"

#include "extensions/callers.h"
#include "flame/flame_extension.h"
#include "extensions/run_info.h"
#include "extensions/summaries.h"

#include <stdexcept>

namespace shapetrace::analyzer {

const std::vector<ExtensionSpec>& extensionSpecs() {
  static const std::vector<ExtensionSpec> specs = {
      {RunInfoExtension::kName, "the run's processes, their ends, dropped events, time span",
       [](const AnalysisSettings&) -> std::unique_ptr<Extension> {
         return std::make_unique<RunInfoExtension>();
       }},
      {CallersExtension::kName,
       "calls and inclusive/exclusive time of every function by its caller",
       [](const AnalysisSettings& settings) -> std::unique_ptr<Extension> {
         return std::make_unique<CallersExtension>(settings.thread.max_depth);
       }},
      {FlameExtension::kName,
       "the exact calling-context tree (flame and funky graphs, exports), merged over threads",
       [](const AnalysisSettings& settings) -> std::unique_ptr<Extension> {
         return std::make_unique<FlameExtension>(FlameExtension::kDefaultMaxNodes,
                                                 settings.thread.max_depth);
       }},
      {SummariesExtension::kName,
       "every thread's phases (001's summary view: Sequitur, repetitions as one phase): its first "
       "2^20 events two levels deep",
       [](const AnalysisSettings& settings) -> std::unique_ptr<Extension> {
         return std::make_unique<SummariesExtension>(SummariesExtension::kDefaultDepth,
                                                     SummariesExtension::kDefaultMaxEvents,
                                                     settings.thread.max_depth);
       }},
  };
  return specs;
}

std::vector<const ExtensionSpec*> selectExtensions(std::string_view selection) {
  const auto& specs = extensionSpecs();
  std::vector<bool> wanted(specs.size(), false);
  while (!selection.empty()) {
    const size_t comma = selection.find(',');
    const std::string_view name = selection.substr(0, comma);
    selection = comma == std::string_view::npos ? std::string_view{} : selection.substr(comma + 1);
    if (name == "none") continue;
    if (name == "all") {
      wanted.assign(specs.size(), true);
      continue;
    }
    size_t i = 0;
    while (i < specs.size() && specs[i].name != name)
      ++i;
    if (i == specs.size()) {
      std::string known;
      for (const ExtensionSpec& spec : specs)
        known += (known.empty() ? "" : ", ") + std::string(spec.name);
      throw std::invalid_argument("unknown extension '" + std::string(name) +
                                  "' (known: " + known + "; or all, none)");
    }
    wanted[i] = true;
  }
  std::vector<const ExtensionSpec*> selected;
  for (size_t i = 0; i < specs.size(); ++i)
    if (wanted[i]) selected.push_back(&specs[i]);
  return selected;
}

std::vector<NamedExtension> makeExtensions(const std::vector<const ExtensionSpec*>& specs,
                                           const AnalysisSettings& settings) {
  std::vector<NamedExtension> out;
  for (const ExtensionSpec* spec : specs)
    out.push_back({std::string(spec->name), spec->make(settings)});
  return out;
}

} // namespace shapetrace::analyzer
