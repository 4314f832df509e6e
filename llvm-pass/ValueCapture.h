//===- ValueCapture.h - arguments and return values of chosen functions ---===//
//
// The user names functions and the values of theirs to record: `FUNCTION@argN` (the N-th argument
// of the function's IR signature once the ABI has lowered it: `this` is arg1, an sret pointer is
// not counted; a std::string_view the ABI split in two counts once) and `FUNCTION@retval`, several
// at once as `FUNCTION@arg1,arg3,retval` and `f@arg1,g@retval` (uftrace's `-A`/`-R` syntax),
// `argN/s` or `retval/s` for a `const char*` or a `std::string_view` recorded as its text
// (uftrace's format suffix; no other format is known). They come from -shapetrace-args
// (SHAPETRACE_PASS_ARGS) and from `args` lines of the rule file. For each instrumented function
// that a choice names, the pass classifies the chosen values from the IR signature and calls
// __shapetrace_value (abi.h) with each one, after the entry hook and before the exit hook; a value
// the runtime cannot carry in 64 bits (a struct passed in memory or in registers, a vector, a
// long double) stops the compilation with a message saying which and why.
//
//===----------------------------------------------------------------------===//
#ifndef SHAPETRACE_LLVM_PASS_VALUECAPTURE_H
#define SHAPETRACE_LLVM_PASS_VALUECAPTURE_H

#include "FunctionTable.h"

#include "llvm/IR/Function.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/GlobPattern.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace shapetrace {

/// What a function records: argument positions (1-based, ascending, no repeats) and whether its
/// return value; those of them to record as text (`/s`: a `const char*` or `std::string_view` whose
/// characters the runtime reads, 0 for the return value).
struct ChosenValues {
  std::vector<unsigned> Args;
  bool ReturnValue = false;
  std::vector<unsigned> Strings;
  bool empty() const { return Args.empty() && !ReturnValue; }
};

/// Where a std::string_view's two members are in the IR: two arguments of their own (x86-64, in
/// registers), two elements of one aggregate argument or return value (`[2 x i64]` on AArch64,
/// `{ i64, ptr }` returned on x86-64), or two fields of one passed in memory (`byval`, x86-64 when
/// the registers have run out).
struct ViewPieces {
  enum Form { TwoArguments, Aggregate, InMemory };
  Form How = TwoArguments;
  /// IR argument indices (TwoArguments), element indices (Aggregate) or byte offsets (InMemory)
  /// of the view's pointer to its characters and of its length.
  unsigned Data = 0;
  unsigned Length = 0;
  /// InMemory: the members' sizes in bytes (what to load).
  unsigned DataBytes = 0;
  unsigned LengthBytes = 0;
};

/// One value to record: where it is and how to widen it to 64 bits (SHAPETRACE_VALUE_* in abi.h).
struct CapturedValue {
  unsigned Position = 0; ///< N of argN; 0 for the return value
  unsigned Type = 0;     ///< SHAPETRACE_VALUE_SIGNED, _UNSIGNED, _POINTER, _FLOAT or _STRING
  unsigned ArgNo = 0;    ///< the IR argument's index (arguments only; a view's first one)
  /// A std::string_view (Type is _STRING): its pieces, recorded by __shapetrace_value_view.
  std::optional<ViewPieces> View;
};

/// The values recorded in one function, classified from its IR signature.
struct CapturePlan {
  std::vector<CapturedValue> Args;
  std::optional<CapturedValue> ReturnValue;
};

class ValueChoices {
public:
  /// Adds the choices of `Text` (`FUNCTION@SPEC[,SPEC...][,FUNCTION@SPEC...]`, SPEC argN or
  /// retval, either followed by `/s`). `Origin` names where the text came from, for messages.
  llvm::Error add(llvm::StringRef Text, const std::string& Origin);
  bool empty() const { return Choices.empty(); }

  /// What the choices matching the function ask for (all of them together). A pattern matches the
  /// demangled name with its parameters, the same without them, or the mangled name.
  ChosenValues match(const FunctionInfo& Info) const;

private:
  struct Choice {
    llvm::GlobPattern Pattern;
    std::string Origin;
    ChosenValues Values;
  };
  std::vector<Choice> Choices;
  // GlobPattern keeps a StringRef into the text it was made from: the texts live here, at
  // addresses that moving the vector does not change.
  std::vector<std::unique_ptr<std::string>> Texts;
};

/// Classifies the chosen values of F from its IR signature, or says why one cannot be recorded.
llvm::Expected<CapturePlan> planCapture(const llvm::Function& F, const FunctionInfo& Info,
                                        const ChosenValues& Chosen);

/// `arg1, arg3, retval`: what a remark says the function records.
std::string describeChosen(const ChosenValues& Chosen);

} // namespace shapetrace

#endif // SHAPETRACE_LLVM_PASS_VALUECAPTURE_H
