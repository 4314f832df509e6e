// libFuzzer target for `explain --csv FILE`: the table of runs (readRunsTable), then what the
// command does with it: the discriminant regression tree over its points (explainData), its text
// and its JSON model.
//
// Oracles besides "no crash, no sanitizer report": a malformed table or one nothing can be
// explained from is an ExplainError (the command's clear error), never another exception; a table
// read has one point per run line; the model's text and JSON (bytes that are not UTF-8 replaced, as
// the command writes it) are made without an exception.
#include "explain/explain.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

using namespace shapetrace::analyzer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::istringstream in(text);
  ExplainData table;
  try {
    table = readRunsTable(in, "fuzz.csv");
  } catch (const ExplainError&) {
    return 0;
  }
  if (table.seen != table.point_refs.size() ||
      static_cast<size_t>(table.points.times.size()) != table.seen)
    std::abort();
  const ExplainSettings settings; // the command's defaults
  nlohmann::ordered_json model;
  try {
    model = explainData(table, settings);
  } catch (const ExplainError&) {
    return 0;
  }
  (void)describeExplanation(model);
  (void)model.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace); // as the command
  return 0;
}
