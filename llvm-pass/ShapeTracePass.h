//===- ShapeTracePass.h - shapetrace entry/exit instrumentation -----------===//
//
// The shapetrace module pass: it inserts a call to __shapetrace_enter at the entry of every
// instrumented function and a call to __shapetrace_exit or __shapetrace_unwind_exit on every way
// out of it (each return, before each tail call, and when an exception unwinds through it), then
// emits the module's function table and the constructor that registers it with the runtime (the
// contract is runtime/include/shapetrace/abi.h). Plugin.cpp decides where in clang's pipeline the
// pass runs; this header is what the plugin and the tests share.
//
//===----------------------------------------------------------------------===//
#ifndef SHAPETRACE_LLVM_PASS_SHAPETRACEPASS_H
#define SHAPETRACE_LLVM_PASS_SHAPETRACEPASS_H

#include "llvm/IR/PassManager.h"

#include <string>

namespace shapetrace {

/// Where in the optimisation pipeline the pass runs.
enum class InstrumentationPoint {
  /// OptimizerLastEP: after inlining, so what runs is what is recorded (as XRay). Default.
  AfterInlining,
  /// PipelineStartEP: before any optimisation, so every source-level function is recorded,
  /// inlined or not (as -finstrument-functions).
  BeforeInlining,
};

/// How an instrumented function decides, at each call, whether to call its hooks.
enum class RecordingGate {
  /// Two bodies: the function keeps its ordinary body behind one test of the runtime's flag, which
  /// tail-calls an internal copy carrying the hooks when recording. Not recording, a call costs a
  /// compare and a not-taken branch, and the ordinary body is compiled as if uninstrumented.
  /// Default.
  Clone,
  /// One body: the flag is read at the entry and each hook sits behind a test of that value, kept
  /// for the whole frame. Smaller code; not recording, the kept value costs a register (often a
  /// save and restore) and a test at every hook. Always used before inlining, where a copy would
  /// double what the inliner weighs.
  Gate,
};

/// What the user chose; Plugin.cpp fills it from the -shapetrace-* command-line options.
struct Options {
  /// How the hooks are skipped while not recording (-shapetrace-detached).
  RecordingGate Gate = RecordingGate::Clone;
  /// Leaf functions without loops and with fewer IR instructions than this are not instrumented
  /// (XRay's instruction threshold). 0 instruments every function.
  unsigned MinInstructions = 0;
  /// A file of include/exclude rules (see docs/pass.md); empty for none.
  std::string FilterFile;
  /// Arguments and return values to record, `FUNCTION@argN,retval,...` (-shapetrace-args; the
  /// rule file's `args` lines add to it); empty for none.
  std::string ValueChoices;
};

class ShapeTracePass : public llvm::PassInfoMixin<ShapeTracePass> {
public:
  explicit ShapeTracePass(Options Opts) : Opts(std::move(Opts)) {}
  llvm::PreservedAnalyses run(llvm::Module& M, llvm::ModuleAnalysisManager& MAM);
  /// Instrumentation must run even on optnone functions (-O0) and under opt-bisect.
  static bool isRequired() { return true; }

private:
  Options Opts;
};

} // namespace shapetrace

#endif // SHAPETRACE_LLVM_PASS_SHAPETRACEPASS_H
