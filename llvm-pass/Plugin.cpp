//===- Plugin.cpp - shapetrace pass plugin entry point --------------------===//
//
// Makes ShapeTracePass.so a new-pass-manager plugin: clang-19 -fpass-plugin=ShapeTracePass.so adds
// the pass to its default pipeline, and opt-19 -load-pass-plugin=ShapeTracePass.so accepts it as
// -passes=shapetrace-instrument. The pass is registered at two extension points and the
// -shapetrace-mode option chooses which one adds it, so that exactly one does:
//   - OptimizerLastEP (default, "after-inlining"): the module is optimised, small functions are
//     inlined away, what runs is what is recorded (XRay's choice);
//   - PipelineStartEP ("before-inlining"): every source function is instrumented before the
//     optimiser sees it, inlined copies keep their hooks (-finstrument-functions' choice).
// Both extension points also run in clang's -O0 pipeline.
//
//===----------------------------------------------------------------------===//
#include "ShapeTracePass.h"

#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include "llvm/Support/CommandLine.h"

using namespace llvm;
using shapetrace::InstrumentationPoint;

static cl::opt<InstrumentationPoint>
    ClMode("shapetrace-mode",
           cl::desc("Where clang's pipeline runs the shapetrace instrumentation"),
           cl::values(clEnumValN(InstrumentationPoint::AfterInlining, "after-inlining",
                                 "after inlining and optimisation: record what runs (default)"),
                      clEnumValN(InstrumentationPoint::BeforeInlining, "before-inlining",
                                 "before optimisation: record every source function")),
           cl::init(InstrumentationPoint::AfterInlining));

static cl::opt<shapetrace::RecordingGate> ClDetached(
    "shapetrace-detached",
    cl::desc("How an instrumented function skips its hooks while recording is off "
             "(after-inlining mode; before-inlining always gates)"),
    cl::values(clEnumValN(shapetrace::RecordingGate::Clone, "clone",
                          "two bodies: the ordinary one behind one test, a hooked copy (default)"),
               clEnumValN(shapetrace::RecordingGate::Gate, "gate",
                          "one body, each hook behind the entry's test of the flag")),
    cl::init(shapetrace::RecordingGate::Clone));

static cl::opt<unsigned> ClMinInstructions(
    "shapetrace-min-instructions",
    cl::desc("Do not instrument loop-free leaf functions with fewer IR instructions than this"),
    cl::init(0));

static cl::opt<std::string>
    ClFilterFile("shapetrace-filter-file",
                 cl::desc("File of include/exclude rules selecting the functions to instrument"),
                 cl::value_desc("path"));

static cl::opt<std::string> ClArgs(
    "shapetrace-args",
    cl::desc("Arguments and return values of chosen functions to record: "
             "FUNCTION@argN[,argM...][,retval][,FUNCTION@...]; argN/s or retval/s records a "
             "const char* as its text"),
    cl::value_desc("choices"));

static shapetrace::Options optionsFromCommandLine() {
  shapetrace::Options Opts;
  Opts.Gate = ClDetached;
  Opts.MinInstructions = ClMinInstructions;
  Opts.FilterFile = ClFilterFile;
  Opts.ValueChoices = ClArgs;
  return Opts;
}

static void registerCallbacks(PassBuilder& PB) {
  PB.registerPipelineStartEPCallback([](ModulePassManager& MPM, OptimizationLevel) {
    if (ClMode != InstrumentationPoint::BeforeInlining)
      return;
    // A copy made before inlining would double what the inliner weighs and optimises, and every
    // inlined call site would carry both bodies: gate in place.
    shapetrace::Options Opts = optionsFromCommandLine();
    Opts.Gate = shapetrace::RecordingGate::Gate;
    MPM.addPass(shapetrace::ShapeTracePass(std::move(Opts)));
  });
  PB.registerOptimizerLastEPCallback([](ModulePassManager& MPM, OptimizationLevel) {
    if (ClMode == InstrumentationPoint::AfterInlining)
      MPM.addPass(shapetrace::ShapeTracePass(optionsFromCommandLine()));
  });
  PB.registerPipelineParsingCallback(
      [](StringRef Name, ModulePassManager& MPM, ArrayRef<PassBuilder::PipelineElement>) {
        if (Name != "shapetrace-instrument")
          return false;
        MPM.addPass(shapetrace::ShapeTracePass(optionsFromCommandLine()));
        return true;
      });
}

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "ShapeTracePass", "0.1.0", registerCallbacks};
}
