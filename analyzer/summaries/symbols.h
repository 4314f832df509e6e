// The symbols the structure summaries encode (docs/summaries.md): a call stream written as a string
// of terminals, in one of three forms.
//
// - string (Reiss & Renieris, "String Compaction"): a call is its function, a return is the return
//   mark (written ∨), so that A calling B then C is "A B ∨ C ∨ ∨";
// - calls (the ThreadViewer proposal's call sequence): a call is its function, returns are not
//   written;
// - enter-exit (the ThreadViewer proposal's summary view): "+f" when f is entered, "-f" when it
//   returns.
//
// A terminal is a 32-bit value: an entry of function f is f << 1 (an "open bracket"), an exit of f
// is f << 1 | 1 and the string form's return mark is kReturnSymbol (both "close brackets"). Function
// ids are below kMaxFunctionId (call_stack.h), so every terminal is below 2^26: the encoders keep
// the bits above for their own tags.
#pragma once

#include "call_stack.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace shapetrace::analyzer::summaries {

enum class SymbolForm : uint8_t { kString, kCalls, kEnterExit };

std::string_view symbolFormName(SymbolForm form);
// "string", "calls", "enter-exit"; nullopt for anything else.
std::optional<SymbolForm> parseSymbolForm(std::string_view name);

inline constexpr uint32_t enterSymbol(uint32_t function) { return function << 1; }
inline constexpr uint32_t exitSymbol(uint32_t function) { return function << 1 | 1; }
inline constexpr uint32_t kReturnSymbol = kMaxFunctionId << 1 | 1;
// The k-tail automata's end of input ("$"); never produced by a call stream.
inline constexpr uint32_t kEndSymbol = (kMaxFunctionId + 1) << 1 | 1;
// Every terminal is below this.
inline constexpr uint32_t kTerminalLimit = (kMaxFunctionId + 2) << 1;

inline constexpr bool isOpenSymbol(uint32_t symbol) { return (symbol & 1) == 0; }
inline constexpr uint32_t symbolFunction(uint32_t symbol) { return symbol >> 1; }

// The terminal of an entry, and of an exit (nullopt: the form does not write it).
inline uint32_t entrySymbol(SymbolForm, uint32_t function) { return enterSymbol(function); }
inline std::optional<uint32_t> returnSymbol(SymbolForm form, uint32_t function) {
  switch (form) {
  case SymbolForm::kString: return kReturnSymbol;
  case SymbolForm::kCalls: return std::nullopt;
  case SymbolForm::kEnterExit: return exitSymbol(function);
  }
  return std::nullopt;
}

// A function's display name.
using FunctionNamer = std::function<std::string(uint32_t function)>;

// How a terminal is written: "f" (a call in the string and calls forms), "∨" (a return), "+f",
// "-f" (enter-exit), "$" (the end of input).
std::string symbolText(uint32_t symbol, SymbolForm form, const FunctionNamer& name);

// A terminal in the JSON documents: an entry of (or a call to) function f is f, an exit of f is
// -1 - f, the string form's return mark is -1 - kMaxFunctionId.
int64_t terminalCode(uint32_t symbol);

// Adds the form's terminals of a call stream to `push` (any callable taking a terminal).
template <typename Push> class SymbolWriter {
public:
  SymbolWriter(SymbolForm form, Push push) : form_(form), push_(std::move(push)) {}
  void enter(uint32_t function) { push_(entrySymbol(form_, function)); }
  void exit(uint32_t function) {
    if (const auto symbol = returnSymbol(form_, function)) push_(*symbol);
  }

private:
  SymbolForm form_;
  Push push_;
};

} // namespace shapetrace::analyzer::summaries
