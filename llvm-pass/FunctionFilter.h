//===- FunctionFilter.h - which functions the user wants instrumented -----===//
//
// The user's choices of what to leave out of the trace, decided per function:
//   - the opt-out attribute, SHAPETRACE_NO_INSTRUMENT from <shapetrace/shapetrace.h>, which is
//     clang's xray_never_instrument and reaches the IR as "function-instrument"="xray-never";
//     __attribute__((annotate("shapetrace_no_instrument"))), an entry of @llvm.global.annotations,
//     and clang's disable_sanitizer_instrumentation attribute also opt out;
//   - a minimum size: loop-free leaf functions with fewer IR instructions than
//     Options::MinInstructions are left out, as XRay's instruction threshold does, because their
//     hooks would cost more than their body and their time is visible in their caller;
//   - a rule file of include/exclude glob patterns on function names and source files
//     (format in docs/pass.md), where the last matching rule decides.
// It also holds which arguments and return values to record (ValueCapture.h), chosen by the same
// rule file (`args` lines) and -shapetrace-args.
// Structural rules (declarations, naked functions, the runtime's own functions) are not user
// choices and live in EntryExitInstrumentation.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef SHAPETRACE_LLVM_PASS_FUNCTIONFILTER_H
#define SHAPETRACE_LLVM_PASS_FUNCTIONFILTER_H

#include "FunctionTable.h"
#include "ShapeTracePass.h"
#include "ValueCapture.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace shapetrace {

class FunctionFilter {
public:
  /// Reads the rule file named in Opts (if any) and M's opt-out annotations. Fails with a message
  /// naming the file and line of the first bad rule, or why the file cannot be read.
  static llvm::Expected<FunctionFilter> create(const Options& Opts, const llvm::Module& M);

  /// Why F is left out of the trace, and whether the user's filters left it out (the rule file or
  /// the minimum size: its SHAPETRACE_FUNCTION_EXCLUDED_* flag, listed in the module's table) or
  /// the program's own marks did (flag 0, not listed).
  struct Exclusion {
    std::string Reason;
    unsigned TableFlag = 0;
  };
  std::optional<Exclusion> exclusionReason(const llvm::Function& F,
                                           const FunctionInfo& Info) const;

  /// The arguments and return values to record (-shapetrace-args and the `args` rules).
  const ValueChoices& valueChoices() const { return Values; }

private:
  struct Rule {
    bool Include;
    bool OnSourceFile; // matches the source file instead of the function's names
    llvm::GlobPattern Pattern;
    std::string Text; // as written, for remarks
    unsigned Line;
  };

  llvm::Error readRules(llvm::StringRef Path);
  const Rule* lastMatchingRule(const FunctionInfo& Info, llvm::StringRef File) const;

  unsigned MinInstructions = 0;
  std::string RuleFile;
  // The rules' GlobPatterns keep StringRefs into the file's text: it lives as long as they do.
  std::unique_ptr<llvm::MemoryBuffer> RuleText;
  std::vector<Rule> Rules;
  bool HasIncludeRule = false;
  llvm::SmallPtrSet<const llvm::Function*, 8> OptedOut;
  ValueChoices Values;
};

} // namespace shapetrace

#endif // SHAPETRACE_LLVM_PASS_FUNCTIONFILTER_H
