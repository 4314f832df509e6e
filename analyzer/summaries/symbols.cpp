// Symbol forms and how terminals are written.
#include "summaries/symbols.h"

namespace shapetrace::analyzer::summaries {

std::string_view symbolFormName(SymbolForm form) {
  switch (form) {
  case SymbolForm::kString: return "string";
  case SymbolForm::kCalls: return "calls";
  case SymbolForm::kEnterExit: return "enter-exit";
  }
  return "?";
}

std::optional<SymbolForm> parseSymbolForm(std::string_view name) {
  for (SymbolForm form : {SymbolForm::kString, SymbolForm::kCalls, SymbolForm::kEnterExit})
    if (symbolFormName(form) == name) return form;
  return std::nullopt;
}

std::string symbolText(uint32_t symbol, SymbolForm form, const FunctionNamer& name) {
  if (symbol == kReturnSymbol) return "∨";
  if (symbol == kEndSymbol) return "$";
  const std::string function = name(symbolFunction(symbol));
  if (form != SymbolForm::kEnterExit) return function;
  return (isOpenSymbol(symbol) ? "+" : "-") + function;
}

int64_t terminalCode(uint32_t symbol) {
  if (symbol == kReturnSymbol) return -1 - int64_t{kMaxFunctionId};
  const int64_t function = symbolFunction(symbol);
  return isOpenSymbol(symbol) ? function : -1 - function;
}

} // namespace shapetrace::analyzer::summaries
