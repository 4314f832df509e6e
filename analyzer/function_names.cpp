// Shorter forms of demangled C++ function names (function_names.h).
#include "function_names.h"

#include <cctype>

namespace shapetrace::analyzer {
namespace {

constexpr std::string_view kOperator = "operator";
constexpr std::string_view kOperatorSymbols = "<>=!+-*/%^&|~,";

bool isIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// Whether "operator" at `at` is the keyword (not part of "my_operator" or "operators").
bool isOperatorKeyword(std::string_view name, size_t at) {
  if (name.substr(at, kOperator.size()) != kOperator) return false;
  const size_t end = at + kOperator.size();
  return (at == 0 || !isIdentifierChar(name[at - 1])) &&
         (end == name.size() || !isIdentifierChar(name[end]));
}

// The index one past the '>' that closes the '<' at `open`, or npos when it is not closed.
size_t closingAngle(std::string_view name, size_t open) {
  int depth = 0;
  for (size_t i = open; i < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    else if (name[i] == '>' && --depth == 0) return i + 1;
  }
  return std::string_view::npos;
}

} // namespace

std::string withoutParameters(std::string_view name) {
  int depth = 0;
  for (size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')') ++depth;
    else if (name[i] == '(' && --depth == 0 && i > 0) return std::string(name.substr(0, i));
  }
  return std::string(name);
}

std::string withoutAbiTags(std::string_view name) {
  std::string out;
  for (size_t i = 0; i < name.size();) {
    const size_t tag = name.find("[abi:", i);
    const size_t end = tag == std::string_view::npos ? tag : name.find(']', tag);
    if (end == std::string_view::npos) {
      out += name.substr(i);
      break;
    }
    out += name.substr(i, tag - i);
    i = end + 1;
  }
  return out;
}

std::string shortFunctionName(std::string_view full) {
  // A value symbol (summarize --with-values: `FUNC@argN=VALUE`): the value is no C++ name (a
  // string argument may hold spaces, brackets, `<unreadable 0x..>`), kept as it is.
  if (const size_t at = full.find('@'); at != std::string_view::npos && at > 0)
    return shortFunctionName(full.substr(0, at)) + std::string(full.substr(at));
  const std::string bare = withoutParameters(full);
  const std::string_view name = bare;
  std::string out;
  int depth = 0;         // inside (), [] or {}: "(anonymous namespace)", "{lambda(int)#1}"
  bool after_operator = false;  // the operator's own name may hold spaces ("operator new")
  for (size_t i = 0; i < name.size();) {
    const char c = name[i];
    if (depth == 0 && !after_operator && isOperatorKeyword(name, i)) {
      after_operator = true;
      out += kOperator;
      i += kOperator.size();
      if (name.substr(i, 2) == "()" || name.substr(i, 2) == "[]") {
        out += name.substr(i, 2);
        i += 2;
      } else {
        while (i < name.size() && kOperatorSymbols.find(name[i]) != std::string_view::npos) {
          out += name[i++];
        }
      }
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
    if (depth == 0 && c == ' ' && !after_operator) {
      out.clear();  // what came before was the return type
      ++i;
      continue;
    }
    if (depth == 0 && c == '<') {
      const size_t end = closingAngle(name, i);
      if (end == std::string_view::npos) {  // not a name the demangler wrote: keep the rest
        out += name.substr(i);
        break;
      }
      const std::string_view arguments = name.substr(i + 1, end - i - 2);
      if (arguments.size() <= kShortTemplateArguments &&
          arguments.find('<') == std::string_view::npos) {
        out += name.substr(i, end - i);
      } else {
        out += "<...>";
      }
      i = end;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

std::string fitColumn(std::string text, size_t width) {
  if (text.size() <= width) return text;
  text.resize(width - 3);
  return text + "...";
}

const std::string& ShortNames::of(std::string_view full) {
  if (const auto it = by_full_.find(full); it != by_full_.end()) return it->second;
  std::string name = shortFunctionName(full);
  const size_t seen = taken_[name]++;
  if (seen > 0) name += " #" + std::to_string(seen + 1);
  return by_full_.emplace(std::string(full), std::move(name)).first->second;
}

} // namespace shapetrace::analyzer
