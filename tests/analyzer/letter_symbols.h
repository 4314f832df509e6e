// Test helper for the structure summaries' papers' examples, written in letters: "A" is a call of
// function 0, "B" of function 1, and so on.
#pragma once

#include "summaries/symbols.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shapetrace::analyzer::summaries::testing {

inline std::vector<uint32_t> letters(const std::string& text) {
  std::vector<uint32_t> out;
  for (char c : text)
    out.push_back(enterSymbol(static_cast<uint32_t>(c - 'A')));
  return out;
}

inline std::string letterName(uint32_t symbol) {
  return symbolText(symbol, SymbolForm::kCalls,
                    [](uint32_t f) { return std::string(1, static_cast<char>('A' + f)); });
}

} // namespace shapetrace::analyzer::summaries::testing
