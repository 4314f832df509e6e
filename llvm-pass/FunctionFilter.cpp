//===- FunctionFilter.cpp - which functions the user wants instrumented ---===//
//
// Opt-out annotations, the minimum size and the include/exclude rule file (see FunctionFilter.h).
//
//===----------------------------------------------------------------------===//
#include "FunctionFilter.h"

#include "shapetrace/abi.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Analysis/CFG.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace llvm;

namespace shapetrace {

static constexpr char NoInstrumentAnnotation[] = "shapetrace_no_instrument";

/// Functions annotated with SHAPETRACE_NO_INSTRUMENT. Each entry of @llvm.global.annotations is
/// { ptr annotated, ptr annotation string, ptr file, i32 line, ptr args }.
static void collectOptedOut(const Module& M, SmallPtrSetImpl<const Function*>& OptedOut) {
  const GlobalVariable* Annotations = M.getNamedGlobal("llvm.global.annotations");
  if (!Annotations || !Annotations->hasInitializer())
    return;
  const auto* Entries = dyn_cast<ConstantArray>(Annotations->getInitializer());
  if (!Entries)
    return;
  for (const Use& EntryUse : Entries->operands()) {
    const auto* Entry = dyn_cast<ConstantStruct>(EntryUse.get());
    if (!Entry || Entry->getNumOperands() < 2)
      continue;
    const auto* F = dyn_cast<Function>(Entry->getOperand(0)->stripPointerCasts());
    const auto* Text = dyn_cast<GlobalVariable>(Entry->getOperand(1)->stripPointerCasts());
    if (!F || !Text || !Text->hasInitializer())
      continue;
    const auto* Data = dyn_cast<ConstantDataSequential>(Text->getInitializer());
    if (Data && Data->isCString() && Data->getAsCString() == NoInstrumentAnnotation)
      OptedOut.insert(F);
  }
}

/// True for a loop-free function that calls nothing (intrinsics aside) and has fewer than Limit
/// instructions: its hooks would cost about as much as its body.
static bool isSmallLoopFreeLeaf(const Function& F, unsigned Limit) {
  unsigned Count = 0;
  for (const Instruction& I : instructions(F)) {
    if (I.isDebugOrPseudoInst())
      continue;
    if (isa<CallBase>(I) && !isa<IntrinsicInst>(I))
      return false;
    if (++Count >= Limit)
      return false;
  }
  SmallVector<std::pair<const BasicBlock*, const BasicBlock*>, 4> Backedges;
  FindFunctionBackedges(F, Backedges);
  return Backedges.empty();
}

Expected<FunctionFilter> FunctionFilter::create(const Options& Opts, const Module& M) {
  FunctionFilter Filter;
  Filter.MinInstructions = Opts.MinInstructions;
  collectOptedOut(M, Filter.OptedOut);
  if (!Opts.FilterFile.empty())
    if (Error E = Filter.readRules(Opts.FilterFile))
      return std::move(E);
  if (!Opts.ValueChoices.empty())
    if (Error E = Filter.Values.add(Opts.ValueChoices, "-shapetrace-args"))
      return std::move(E);
  return std::move(Filter);
}

/// One rule per line: `<kind> <glob>`, kind one of include, exclude, include-file,
/// exclude-file (or `args`, the values to record: ValueCapture.h); `#` starts a comment line; blank lines are ignored. The glob is the rest of the
/// line with surrounding blanks removed, so demangled names with spaces can be written as is.
Error FunctionFilter::readRules(StringRef Path) {
  RuleFile = Path.str();
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buffer = MemoryBuffer::getFile(Path, /*IsText=*/true);
  if (!Buffer)
    return createStringError(Buffer.getError(), "cannot read the filter file '%s': %s",
                             RuleFile.c_str(), Buffer.getError().message().c_str());
  RuleText = std::move(*Buffer);
  SmallVector<StringRef, 64> Lines;
  RuleText->getBuffer().split(Lines, '\n');
  for (auto [Index, RawLine] : enumerate(Lines)) {
    unsigned LineNo = static_cast<unsigned>(Index) + 1;
    StringRef Line = RawLine.trim();
    if (Line.empty() || Line.starts_with("#"))
      continue;
    auto [Kind, PatternText] = Line.split(' ');
    PatternText = PatternText.trim();
    auto Fail = [&](const Twine& Why) {
      return createStringError(inconvertibleErrorCode(),
                               RuleFile + ":" + Twine(LineNo) + ": " + Why);
    };
    if (Kind == "args") {
      if (Error E = Values.add(PatternText, RuleFile + ":" + std::to_string(LineNo)))
        return E;
      continue;
    }
    Rule R{false, false, GlobPattern(), PatternText.str(), LineNo};
    if (Kind == "include" || Kind == "include-file")
      R.Include = true;
    else if (Kind != "exclude" && Kind != "exclude-file")
      return Fail("unknown rule '" + Kind +
                  "' (expected include, exclude, include-file, exclude-file or args)");
    R.OnSourceFile = Kind.ends_with("-file");
    if (PatternText.empty())
      return Fail("rule '" + Kind + "' has no pattern");
    Expected<GlobPattern> Pattern = GlobPattern::create(PatternText);
    if (!Pattern)
      return Fail("bad pattern '" + PatternText + "': " + toString(Pattern.takeError()));
    R.Pattern = std::move(*Pattern);
    HasIncludeRule |= R.Include;
    Rules.push_back(std::move(R));
  }
  return Error::success();
}

const FunctionFilter::Rule* FunctionFilter::lastMatchingRule(const FunctionInfo& Info,
                                                             StringRef File) const {
  for (const Rule& R : reverse(Rules)) {
    bool Matches = R.OnSourceFile
                       ? R.Pattern.match(File)
                       : R.Pattern.match(Info.Demangled) || R.Pattern.match(Info.Mangled);
    if (Matches)
      return &R;
  }
  return nullptr;
}

std::optional<FunctionFilter::Exclusion>
FunctionFilter::exclusionReason(const Function& F, const FunctionInfo& Info) const {
  // SHAPETRACE_NO_INSTRUMENT is xray_never_instrument; the annotate form is accepted too.
  if (F.getFnAttribute("function-instrument").getValueAsString() == "xray-never")
    return Exclusion{"marked SHAPETRACE_NO_INSTRUMENT (xray_never_instrument)"};
  if (OptedOut.contains(&F))
    return Exclusion{"marked SHAPETRACE_NO_INSTRUMENT (annotate)"};
  if (F.hasFnAttribute(Attribute::DisableSanitizerInstrumentation))
    return Exclusion{"marked disable_sanitizer_instrumentation"};
  if (!Rules.empty()) {
    // Without debug information the module's source file stands for the function's.
    StringRef File = Info.SourceFile.empty() ? StringRef(F.getParent()->getSourceFileName())
                                             : StringRef(Info.SourceFile);
    const Rule* R = lastMatchingRule(Info, File);
    if (R && !R->Include)
      return Exclusion{RuleFile + ":" + std::to_string(R->Line) + ": excluded by '" + R->Text + "'",
                       SHAPETRACE_FUNCTION_EXCLUDED_BY_RULE};
    if (!R && HasIncludeRule)
      return Exclusion{"matches no include rule of " + RuleFile,
                       SHAPETRACE_FUNCTION_EXCLUDED_BY_RULE};
  }
  if (MinInstructions > 0 && isSmallLoopFreeLeaf(F, MinInstructions))
    return Exclusion{"a loop-free leaf smaller than " + std::to_string(MinInstructions) +
                         " instructions",
                     SHAPETRACE_FUNCTION_EXCLUDED_BY_SIZE};
  return std::nullopt;
}

} // namespace shapetrace
