//===- EntryExitInstrumentation.cpp - hooks on every way in and out -------===//
//
// The instrumentation itself. Every function that passes the skip rules gets:
//   - __shapetrace_enter(id) at its entry;
//   - __shapetrace_exit(id) before each `ret`, or, when the `ret` returns the result of a
//     `musttail`/`tail` call, before that call: the callee then runs after the caller's exit, which
//     is what happens once the backend turns the call into a jump, and it keeps the call in tail
//     position so that the jump (and the bounded stack it buys) survives instrumentation;
//   - __shapetrace_unwind_exit(id) on the way out of an exception: calls that may throw and would
//     unwind straight to the caller become invokes of one cleanup landing pad that calls the hook
//     and resumes; existing `resume`s get the hook before them; and existing landing pads are
//     marked `cleanup`, because the unwinder only lands in a catch-only pad whose clause matches
//     and would otherwise leave the frame silently (the no-match path of every frontend ends in
//     the `resume` that now carries the hook).
// Each hook is called only when the frame's entry found recording on (a one-byte atomic load of the
// image's @__shapetrace_image_enabled after the entry's static allocas), so a frame's exits are
// called exactly when its entry was: recording switched on or off mid-frame never unbalances a
// thread. The flag is the linked image's own (hidden, one per executable or shared library, merged
// across its objects), which the runtime writes whenever recording is switched: a hidden variable
// is read PC-relative, `cmpb $0, flag(%rip)`, in every kind of code, where the runtime's exported
// flag would cost a GOT load in position-independent code.
// Two ways to carry that decision through the frame (Options::Gate):
//   - clone (default): the hooks go, unconditionally, into an internal copy of the function,
//     F.traced; F keeps its ordinary body behind `if (flag) return musttail F.traced(args...)`.
//     The decision is which body runs; a program not recording pays `cmpb $0, flag; jne` per
//     call, and F's body is compiled exactly as without the plugin.
//   - gate: one body, the flag's value kept in a register for the frame and tested at each hook.
// The id is load(@__shapetrace_base_id) + the function's local index: one RIP-relative load, one
// add and the call. The hooks are declared nounwind and nonlazybind (called through the GOT, not
// a PLT stub); see docs/BENCHMARKS.md for what a call costs.
//
// Not covered, and documented in docs/pass.md: longjmp and exit() leave frames without an exit
// event (the analyzer resynchronises on the next exit it sees), and functions using funclet-based
// (Windows) exception handling are not instrumented.
//
//===----------------------------------------------------------------------===//
#include "FunctionFilter.h"
#include "FunctionTable.h"
#include "ShapeTracePass.h"
#include "ValueCapture.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/EHPersonalities.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/Local.h"

#include "shapetrace/abi.h"

#include <tuple>

using namespace llvm;

namespace shapetrace {
namespace {

constexpr char PassName[] = "shapetrace";
constexpr char EnterHookName[] = "__shapetrace_enter";
constexpr char ExitHookName[] = "__shapetrace_exit";
constexpr char UnwindExitHookName[] = "__shapetrace_unwind_exit";
constexpr char ValueHookName[] = "__shapetrace_value";
constexpr char ViewHookName[] = "__shapetrace_value_view";
constexpr char ImageFlagName[] = "__shapetrace_image_enabled";
// The image flag is alone on its cache line: the program's own stores to a neighbour would
// otherwise make every core reload the line that every call reads.
constexpr unsigned ImageFlagBytes = 64;
constexpr char RuntimePrefix[] = "__shapetrace_";
// The hooked copy of F is F.traced: demanglers show C++ ones as `f(int) [clone .traced]`.
constexpr char TracedSuffix[] = ".traced";
// Marks a module as instrumented, so that running the pass twice (an explicit -passes plus a
// default pipeline, or re-optimising instrumented IR) does not add a second set of hooks.
constexpr char InstrumentedMarker[] = "shapetrace.instrumented";

/// Where the hooks go in one function, collected before the function is changed.
struct ExitPoints {
  SmallVector<Instruction*, 4> Exits;       // insert __shapetrace_exit before these
  SmallVector<ResumeInst*, 2> Resumes;      // insert __shapetrace_unwind_exit before these
  SmallVector<LandingPadInst*, 2> Pads;     // to be entered on every unwind
  SmallVector<CallInst*, 8> UnwindToCaller; // calls that may throw straight to the caller
};

/// The call whose result `Ret` returns, when that call is marked tail or musttail and nothing
/// but debug records separates them: a tail call the backend can turn into a jump.
CallInst* tailCallReturnedBy(ReturnInst& Ret) {
  if (CallInst* MustTail = Ret.getParent()->getTerminatingMustTailCall())
    return MustTail;
  auto* Call = dyn_cast_or_null<CallInst>(Ret.getPrevNonDebugInstruction());
  if (!Call || !Call->isTailCall() || isa<IntrinsicInst>(Call) || Call->isInlineAsm())
    return nullptr;
  Value* Returned = Ret.getReturnValue();
  return !Returned || Returned == Call ? Call : nullptr;
}

/// The call of a tail-call candidate block: a `tail` call to a non-intrinsic function followed
/// only by an unconditional branch to `Ret`'s block, whose result `Ret` returns through its phi.
CallInst* tailCallBranchingTo(BasicBlock& Pred, ReturnInst& Ret, PHINode* Phi) {
  auto* Br = dyn_cast<BranchInst>(Pred.getTerminator());
  if (!Br || !Br->isUnconditional())
    return nullptr;
  auto* Call = dyn_cast_or_null<CallInst>(Br->getPrevNonDebugInstruction());
  if (!Call || !Call->isTailCall() || isa<IntrinsicInst>(Call) || Call->isInlineAsm())
    return nullptr;
  if (Phi ? Phi->getIncomingValueForBlock(&Pred) != Call : Ret.getReturnValue() != nullptr)
    return nullptr;
  return Call;
}

/// Gives each tail call that reaches a shared return block through a branch a `ret` of its own,
/// as CodeGenPrepare's dupRetToEnableTailCallOpts would. The backend does that itself, but only
/// when the return block holds nothing but the phi and the `ret`; once the exit hook sits there,
/// it would not, and `return c ? 1 : f(x);` would lose its jump.
void duplicateReturnsIntoTailCallers(Function& F) {
  SmallVector<ReturnInst*, 4> Returns;
  for (BasicBlock& BB : F)
    if (auto* Ret = dyn_cast<ReturnInst>(BB.getTerminator()))
      Returns.push_back(Ret);
  for (ReturnInst* Ret : Returns) {
    BasicBlock* RetBB = Ret->getParent();
    // Only a block that is just [phi] + ret: anything else would have to be duplicated too.
    auto* Phi = dyn_cast<PHINode>(&RetBB->front());
    Instruction* First = Phi ? Phi->getNextNonDebugInstruction() : &RetBB->front();
    if (First != Ret || (Phi && Ret->getReturnValue() != Phi) || (!Phi && Ret->getReturnValue()) ||
        &F.getEntryBlock() == RetBB)
      continue;
    SmallVector<BasicBlock*, 4> Preds(predecessors(RetBB));
    for (BasicBlock* Pred : Preds) {
      CallInst* Call = tailCallBranchingTo(*Pred, *Ret, Phi);
      if (!Call)
        continue;
      Instruction* Br = Pred->getTerminator();
      ReturnInst* NewRet = ReturnInst::Create(F.getContext(), Phi ? Call : nullptr, Br);
      NewRet->setDebugLoc(Ret->getDebugLoc());
      RetBB->removePredecessor(Pred, /*KeepOneInputPHIs=*/true);
      Br->eraseFromParent();
    }
    if (pred_empty(RetBB))
      DeleteDeadBlock(RetBB);
  }
}

/// Whether an exception thrown by this call would leave the function without passing a
/// landing pad.
bool mayUnwindToCaller(const CallInst& Call) {
  if (Call.doesNotThrow() || Call.isMustTailCall())
    return false;
  // Intrinsics that may throw (statepoints, deoptimize, ...) cannot all be invoked.
  if (const Function* Callee = Call.getCalledFunction(); Callee && Callee->isIntrinsic())
    return false;
  return !Call.getOperandBundle(LLVMContext::OB_funclet);
}

class ModuleEntryExit {
public:
  ModuleEntryExit(Module& M, const FunctionFilter& Filter, RecordingGate Gate)
      : M(M), Ctx(M.getContext()), Filter(Filter), Gate(Gate), Int32Ty(Type::getInt32Ty(Ctx)) {}

  /// Instruments every eligible function and emits the function table. Returns whether the
  /// module changed.
  bool instrumentModule();

private:
  bool declareHooks();
  std::optional<std::string> structuralSkipReason(const Function& F) const;
  std::optional<std::string> cloneUnsupportedReason(const Function& F) const;
  void addHooks(Function& F, Value* Enabled, uint32_t Index, GlobalVariable* BaseId,
                const CapturePlan& Plan);
  void instrumentWithGate(Function& F, uint32_t Index, GlobalVariable* BaseId,
                          const CapturePlan& Plan);
  void instrumentWithClone(Function& F, uint32_t Index, GlobalVariable* BaseId,
                           const CapturePlan& Plan);
  std::optional<CapturePlan> planFor(Function& F, const FunctionInfo& Info,
                                     OptimizationRemarkEmitter& ORE);
  ExitPoints findExitPoints(Function& F, bool HandleUnwinding) const;
  Instruction* entryInsertionPoint(Function& F);
  Value* loadEnabledFlag(Instruction* InsertPt);
  void callHook(FunctionCallee Hook, Value* Enabled, Instruction* Before, uint32_t Index,
                GlobalVariable* BaseId, DebugLoc Loc, const CapturedValue* Captured = nullptr,
                Value* Returned = nullptr);
  void addUnwindCleanup(Function& F, ArrayRef<CallInst*> Calls, Value* Enabled, uint32_t Index,
                        GlobalVariable* BaseId);
  Constant* personalityFor(const Function& F);

  Module& M;
  LLVMContext& Ctx;
  const FunctionFilter& Filter;
  RecordingGate Gate;
  Type* Int32Ty;
  FunctionCallee EnterHook, ExitHook, UnwindExitHook, ValueHook, ViewHook;
  GlobalVariable* ImageFlag = nullptr;
  SmallPtrSet<const Function*, 4> IFuncResolvers;
};

bool ModuleEntryExit::declareHooks() {
  FunctionType* HookTy = FunctionType::get(Type::getVoidTy(Ctx), {Int32Ty}, /*isVarArg=*/false);
  AttributeList Attrs = AttributeList()
                            .addFnAttribute(Ctx, Attribute::NoUnwind)
                            .addFnAttribute(Ctx, Attribute::NonLazyBind);
  Type* Int64Ty = Type::getInt64Ty(Ctx);
  FunctionType* ValueHookTy =
      FunctionType::get(Type::getVoidTy(Ctx), {Int32Ty, Int32Ty, Int64Ty}, /*isVarArg=*/false);
  FunctionType* ViewHookTy = FunctionType::get(Type::getVoidTy(Ctx),
                                               {Int32Ty, Int32Ty, Int64Ty, Int64Ty}, false);
  for (auto [Name, Ty, Text] :
       {std::tuple{EnterHookName, HookTy, "void(uint32_t)"}, {ExitHookName, HookTy, "void(uint32_t)"},
        {UnwindExitHookName, HookTy, "void(uint32_t)"},
        {ValueHookName, ValueHookTy, "void(uint32_t, uint32_t, uint64_t)"},
        {ViewHookName, ViewHookTy, "void(uint32_t, uint32_t, uint64_t, uint64_t)"}}) {
    if (const Function* Existing = M.getFunction(Name);
        Existing && Existing->getFunctionType() != Ty) {
      Ctx.emitError(Twine("shapetrace: '") + Name + "' is declared in this module with a type other than " +
                    Text + "; the name is reserved for the shapetrace runtime");
      return false;
    }
  }
  EnterHook = M.getOrInsertFunction(EnterHookName, HookTy, Attrs);
  ExitHook = M.getOrInsertFunction(ExitHookName, HookTy, Attrs);
  UnwindExitHook = M.getOrInsertFunction(UnwindExitHookName, HookTy, Attrs);
  // Declared only in modules that record values: others keep needing nothing more of the runtime.
  if (!Filter.valueChoices().empty()) {
    ValueHook = M.getOrInsertFunction(ValueHookName, ValueHookTy, Attrs);
    ViewHook = M.getOrInsertFunction(ViewHookName, ViewHookTy, Attrs);
  }
  ImageFlag = M.getGlobalVariable(ImageFlagName);
  auto* FlagTy = ArrayType::get(Type::getInt8Ty(Ctx), ImageFlagBytes);
  if (ImageFlag && (ImageFlag->getValueType() != FlagTy || !ImageFlag->hasLinkOnceODRLinkage())) {
    Ctx.emitError(Twine("shapetrace: '") + ImageFlagName +
                  "' is defined or declared in this module other than by shapetrace; "
                  "the name is reserved for the shapetrace runtime");
    return false;
  }
  if (!ImageFlag) {
    // linkonce_odr in a comdat of its name: the linker keeps one per executable or shared
    // library. Hidden: never exported, so each image reads its own, without the GOT.
    ImageFlag = new GlobalVariable(M, FlagTy, /*isConstant=*/false,
                                   GlobalValue::LinkOnceODRLinkage, Constant::getNullValue(FlagTy),
                                   ImageFlagName);
    ImageFlag->setVisibility(GlobalValue::HiddenVisibility);
    ImageFlag->setDSOLocal(true);
    ImageFlag->setAlignment(Align(ImageFlagBytes));
    if (Triple(M.getTargetTriple()).supportsCOMDAT())
      ImageFlag->setComdat(M.getOrInsertComdat(ImageFlagName));
  }
  return true;
}

/// Functions that cannot or must not carry hooks, whatever the user asked for.
std::optional<std::string> ModuleEntryExit::structuralSkipReason(const Function& F) const {
  // Another module's definition runs; this body only feeds the optimiser.
  if (F.hasAvailableExternallyLinkage())
    return "available_externally";
  // A naked function has no prologue to put a call in.
  if (F.hasFnAttribute(Attribute::Naked))
    return "naked";
  // The runtime is never instrumented, even when compiled into the module.
  if (F.getName().starts_with(RuntimePrefix))
    return "part of the shapetrace runtime";
  // An ifunc resolver runs while the dynamic loader relocates, before any constructor.
  if (IFuncResolvers.contains(&F))
    return "an ifunc resolver";
  // CoroSplit turns the coroutine into ramp/resume/destroy functions later; in after-inlining
  // mode those are instrumented, each call of them being one enter/exit pair.
  if (F.isPresplitCoroutine())
    return "a coroutine not yet split";
  if (F.hasPersonalityFn() && isScopedEHPersonality(classifyEHPersonality(F.getPersonalityFn())))
    return "uses funclet-based exception handling, which shapetrace does not support";
  return std::nullopt;
}

/// The values F records (none unless a choice names it), or nothing after reporting why one
/// cannot be recorded: a compile error, the user asked for it.
std::optional<CapturePlan> ModuleEntryExit::planFor(Function& F, const FunctionInfo& Info,
                                                    OptimizationRemarkEmitter& ORE) {
  ChosenValues Chosen = Filter.valueChoices().match(Info);
  if (Chosen.empty())
    return CapturePlan();
  // A copy the optimiser made (f.specialized.1, f.constprop.0, f.argelim) has arguments of its
  // own: some of the source's are constants in it, or gone.
  if (F.getName().contains('.')) {
    ORE.emit([&] {
      return OptimizationRemarkMissed(PassName, "ValuesNotRecorded", &F)
             << "'" << Info.Demangled << "' records no values: a copy the optimiser made, whose "
             << "arguments are not the source's";
    });
    return CapturePlan();
  }
  Expected<CapturePlan> Plan = planCapture(F, Info, Chosen);
  if (!Plan) {
    Ctx.emitError("shapetrace: " + toString(Plan.takeError()));
    return std::nullopt;
  }
  ORE.emit([&] {
    return OptimizationRemark(PassName, "RecordsValues", &F)
           << "'" << Info.Demangled << "' records " << describeChosen(Chosen);
  });
  return std::move(*Plan);
}

bool ModuleEntryExit::instrumentModule() {
  if (M.getNamedMetadata(InstrumentedMarker))
    return false;
  if (!declareHooks())
    return false;
  for (const GlobalIFunc& IFunc : M.ifuncs())
    if (const Function* Resolver = IFunc.getResolverFunction())
      IFuncResolvers.insert(Resolver);

  FunctionTable Table(M, ImageFlag);
  SmallVector<Function*, 64> Functions;
  for (Function& F : M)
    if (!F.isDeclaration())
      Functions.push_back(&F);
  std::vector<FunctionInfo> Excluded; // by the user's filters: listed after the instrumented
  for (Function* F : Functions) {
    OptimizationRemarkEmitter ORE(F);
    FunctionInfo Info = describeFunction(*F);
    std::optional<FunctionFilter::Exclusion> Skip;
    if (std::optional<std::string> Structural = structuralSkipReason(*F))
      Skip = FunctionFilter::Exclusion{std::move(*Structural)};
    else
      Skip = Filter.exclusionReason(*F, Info);
    if (Skip) {
      ORE.emit([&] {
        return OptimizationRemarkMissed(PassName, "NotInstrumented", F)
               << "'" << Info.Demangled << "' not instrumented: " << Skip->Reason;
      });
      if (Skip->TableFlag != 0) {
        Info.Flags = Skip->TableFlag;
        Excluded.push_back(std::move(Info));
      }
      continue;
    }
    ORE.emit([&] {
      return OptimizationRemark(PassName, "Instrumented", F)
             << "'" << Info.Demangled << "' instrumented with local id "
             << ore::NV("LocalId", static_cast<unsigned>(Table.size()));
    });
    std::optional<CapturePlan> Plan = planFor(*F, Info, ORE);
    if (!Plan)
      return false;
    std::string Demangled = Info.Demangled;
    uint32_t Index = Table.add(std::move(Info));
    std::optional<std::string> NoClone;
    if (Gate == RecordingGate::Clone)
      NoClone = cloneUnsupportedReason(*F);
    if (Gate == RecordingGate::Gate || NoClone) {
      if (NoClone)
        ORE.emit([&] {
          return OptimizationRemarkAnalysis(PassName, "GatedInPlace", F)
                 << "'" << Demangled << "' gated in place, not cloned: " << *NoClone;
        });
      instrumentWithGate(*F, Index, Table.baseId(), *Plan);
    } else {
      instrumentWithClone(*F, Index, Table.baseId(), *Plan);
    }
  }

  // A module none of whose functions is instrumented registers no table, even when filters left
  // some out: the process would pay a registration for names alone.
  if (Table.empty()) {
    Table.baseId()->eraseFromParent();
    for (const char* Name :
         {EnterHookName, ExitHookName, UnwindExitHookName, ValueHookName, ViewHookName})
      if (Function* Hook = M.getFunction(Name); Hook && Hook->use_empty())
        Hook->eraseFromParent();
    if (ImageFlag->use_empty())
      ImageFlag->eraseFromParent();
    return false;
  }
  for (FunctionInfo& Info : Excluded)
    Table.add(std::move(Info));
  Table.emit();
  // A value hook no chosen value needed (only views, or none of them) is not left declared.
  for (const char* Name : {ValueHookName, ViewHookName})
    if (Function* Hook = M.getFunction(Name); Hook && Hook->use_empty())
      Hook->eraseFromParent();
  M.getOrInsertNamedMetadata(InstrumentedMarker);
  return true;
}

ExitPoints ModuleEntryExit::findExitPoints(Function& F, bool HandleUnwinding) const {
  ExitPoints Points;
  SmallPtrSet<const CallInst*, 4> TailCalls;
  for (BasicBlock& BB : F) {
    Instruction* Terminator = BB.getTerminator();
    if (auto* Ret = dyn_cast<ReturnInst>(Terminator)) {
      CallInst* TailCall = tailCallReturnedBy(*Ret);
      Points.Exits.push_back(TailCall ? static_cast<Instruction*>(TailCall) : Ret);
      if (TailCall)
        TailCalls.insert(TailCall);
    } else if (auto* Resume = dyn_cast<ResumeInst>(Terminator); Resume && HandleUnwinding) {
      Points.Resumes.push_back(Resume);
    }
  }
  if (!HandleUnwinding)
    return Points;
  for (BasicBlock& BB : F) {
    if (BB.isLandingPad())
      Points.Pads.push_back(BB.getLandingPadInst());
    for (Instruction& I : BB)
      // A tail call already follows the caller's exit: if it throws, the caller has left.
      if (auto* Call = dyn_cast<CallInst>(&I);
          Call && mayUnwindToCaller(*Call) && !TailCalls.contains(Call))
        Points.UnwindToCaller.push_back(Call);
  }
  return Points;
}

/// The location of code inserted at `F`'s entry: its opening line, when it has debug information.
static DebugLoc entryDebugLoc(const Function& F) {
  if (DISubprogram* SP = F.getSubprogram())
    return DILocation::get(F.getContext(), SP->getScopeLine(), 0, SP);
  return DebugLoc();
}

/// Where code runs first in `F`: after the entry block's static allocas, which must stay in the
/// entry block to remain static (those further down are hoisted above this point).
Instruction* ModuleEntryExit::entryInsertionPoint(Function& F) {
  BasicBlock& Entry = F.getEntryBlock();
  auto IsStaticAlloca = [](const Instruction& I) {
    const auto* Alloca = dyn_cast<AllocaInst>(&I);
    return Alloca && Alloca->isStaticAlloca();
  };
  Instruction* InsertPt = &*Entry.getFirstInsertionPt();
  while (IsStaticAlloca(*InsertPt))
    InsertPt = InsertPt->getNextNode();
  // Static allocas further down the entry block would land after the split: hoist them.
  SmallVector<Instruction*, 4> LateAllocas;
  for (Instruction* I = InsertPt->getNextNode(); I; I = I->getNextNode())
    if (IsStaticAlloca(*I))
      LateAllocas.push_back(I);
  for (Instruction* Alloca : LateAllocas)
    Alloca->moveBefore(InsertPt);
  return InsertPt;
}

/// Loads the enabled flag before `InsertPt` and returns `flag != 0`, both at the function's
/// opening line when it has debug information (what a symbolizer gives for its first bytes).
Value* ModuleEntryExit::loadEnabledFlag(Instruction* InsertPt) {
  IRBuilder<> IRB(InsertPt);
  IRB.SetCurrentDebugLocation(entryDebugLoc(*InsertPt->getFunction()));
  LoadInst* Flag = IRB.CreateAlignedLoad(Type::getInt8Ty(Ctx), ImageFlag, Align(1),
                                         "shapetrace.flag");
  // The runtime flips it from another thread; a frame may start on either side. Unordered (never
  // torn or invented, no ordering with other locations, which nothing here needs) rather than
  // monotonic: the backend folds it into the compare (`cmpb $0, flag`), one instruction less.
  Flag->setAtomic(AtomicOrdering::Unordered);
  return IRB.CreateIsNotNull(Flag, "shapetrace.on");
}

/// `V` as the 64 bits __shapetrace_value records (abi.h): integers sign- or zero-extended,
/// pointers as their address, float and double as a double's bits.
Value* widenTo64Bits(IRBuilder<>& IRB, Value* V, unsigned Kind) {
  Type* Int64Ty = IRB.getInt64Ty();
  switch (Kind) {
  case SHAPETRACE_VALUE_POINTER:
  case SHAPETRACE_VALUE_STRING: // its address: the runtime reads the text
    return IRB.CreatePtrToInt(V, Int64Ty, "shapetrace.value");
  case SHAPETRACE_VALUE_FLOAT:
    return IRB.CreateBitCast(IRB.CreateFPExt(V, IRB.getDoubleTy()), Int64Ty, "shapetrace.value");
  case SHAPETRACE_VALUE_UNSIGNED:
    return IRB.CreateZExt(V, Int64Ty, "shapetrace.value");
  default:
    return IRB.CreateSExt(V, Int64Ty, "shapetrace.value");
  }
}

/// A std::string_view's pointer or length (ViewPieces, ValueCapture.h) as 64 bits: from an
/// argument of its own, an element of `Whole` (the aggregate argument or return value), or a load
/// from `Whole` (the argument passed in memory).
Value* viewPiece(IRBuilder<>& IRB, const Function& F, const ViewPieces& View, Value* Whole,
                 unsigned Index, unsigned Bytes, const Twine& Name) {
  Value* Piece = nullptr;
  switch (View.How) {
  case ViewPieces::TwoArguments:
    Piece = F.getArg(Index);
    break;
  case ViewPieces::Aggregate:
    Piece = IRB.CreateExtractValue(Whole, Index, Name);
    break;
  case ViewPieces::InMemory:
    Piece = IRB.CreateLoad(
        IRB.getIntNTy(8 * Bytes),
        Index == 0 ? Whole : IRB.CreateConstInBoundsGEP1_64(IRB.getInt8Ty(), Whole, Index), Name);
    break;
  }
  return Piece->getType()->isPointerTy() ? IRB.CreatePtrToInt(Piece, IRB.getInt64Ty(), Name)
                                         : IRB.CreateZExtOrTrunc(Piece, IRB.getInt64Ty(), Name);
}

/// The operands of the value hook after the id and the descriptor: the value widened to 64 bits
/// (__shapetrace_value), or a std::string_view's address and length (__shapetrace_value_view).
/// `Returned` is the return value; an argument is F's.
SmallVector<Value*, 2> valueOperands(IRBuilder<>& IRB, const Function& F,
                                     const CapturedValue& Captured, Value* Returned) {
  Value* Whole = Returned ? Returned : F.getArg(Captured.ArgNo);
  if (!Captured.View)
    return {widenTo64Bits(IRB, Whole, Captured.Type)};
  const ViewPieces& View = *Captured.View;
  return {viewPiece(IRB, F, View, Whole, View.Data, View.DataBytes, "shapetrace.view.data"),
          viewPiece(IRB, F, View, Whole, View.Length, View.LengthBytes, "shapetrace.view.length")};
}

/// Calls `Hook(id)` before `Before`: when `Enabled` is true, or always when `Enabled` is null.
/// With `Captured`, the hook is __shapetrace_value (or __shapetrace_value_view for a
/// std::string_view) and records that argument of the function, or `Returned`:
/// `Hook(id, descriptor, value widened to 64 bits)`.
void ModuleEntryExit::callHook(FunctionCallee Hook, Value* Enabled, Instruction* Before,
                               uint32_t Index, GlobalVariable* BaseId, DebugLoc Loc,
                               const CapturedValue* Captured, Value* Returned) {
  Instruction* InsertPt = Before;
  if (Enabled) {
    InsertPt = SplitBlockAndInsertIfThen(Enabled, Before, /*Unreachable=*/false);
    InsertPt->getParent()->setName("shapetrace.hook");
  }
  IRBuilder<> IRB(InsertPt);
  // A call in a function with debug information should have a location; line 0 says "compiler
  // generated" where no better one exists.
  if (!Loc)
    if (DISubprogram* SP = Before->getFunction()->getSubprogram())
      Loc = DILocation::get(Ctx, 0, 0, SP);
  IRB.SetCurrentDebugLocation(Loc);
  Value* Id = IRB.CreateLoad(Int32Ty, BaseId, "shapetrace.base");
  if (Index != 0)
    Id = IRB.CreateAdd(Id, ConstantInt::get(Int32Ty, Index), "shapetrace.id");
  if (!Captured) {
    IRB.CreateCall(Hook, {Id});
    return;
  }
  SmallVector<Value*, 4> Operands = {
      Id, ConstantInt::get(Int32Ty, SHAPETRACE_VALUE_DESCRIPTOR(Captured->Position, Captured->Type))};
  append_range(Operands, valueOperands(IRB, *Before->getFunction(), *Captured, Returned));
  IRB.CreateCall(Captured->View ? ViewHook : Hook, Operands);
}

/// Whether inline assembly defines a symbol that a copy would define a second time ("symbol
/// already defined"): a label other than a numeric local one (`1:`) or one made unique per copy
/// (`%=`, `${:uid}` in IR), whatever its characters (quoted, or pasted from an operand: `.L%c0:`),
/// an `.equiv`, or an assembler macro (its labels are not seen here). Statements are split at
/// newlines and semicolons; what comes before a colon is a label only when it has no space, comma
/// or parenthesis (`movq %fs:0, %rax` is not one).
bool definesSymbol(const InlineAsm& Asm) {
  StringRef Text = Asm.getAsmString();
  if (Text.contains(".macro"))
    return true;
  SmallVector<StringRef, 8> Statements;
  SplitString(Text, Statements, "\n;");
  for (StringRef Piece : Statements) {
    // `${:uid}` (what %= is in IR) holds a colon of its own.
    std::string Statement = Piece.trim().str();
    for (size_t At; (At = Statement.find("${:uid}")) != std::string::npos;)
      Statement.replace(At, 7, "%=");
    if (StringRef(Statement).starts_with(".equiv"))
      return true;
    size_t Colon = Statement.find(':');
    if (Colon == std::string::npos || Colon == 0)
      continue;
    StringRef Label = StringRef(Statement).take_front(Colon);
    if (Label.find_first_of(" \t,()") != StringRef::npos || Label.contains("%="))
      continue;
    if (!all_of(Label, [](char C) { return isDigit(C); }))
      return true;
  }
  return false;
}

/// Why `F` cannot have two bodies, the ordinary one tail-calling the hooked one; it is then gated
/// in place. A `musttail` call must forward the arguments exactly as they came, which the
/// backends do for ordinary calling conventions and register or pointer arguments.
std::optional<std::string> ModuleEntryExit::cloneUnsupportedReason(const Function& F) const {
  Triple::ArchType Arch = Triple(M.getTargetTriple()).getArch();
  if (Arch != Triple::x86_64 && Arch != Triple::aarch64)
    return "the target is not x86-64 or AArch64";
  CallingConv::ID CC = F.getCallingConv();
  if (CC != CallingConv::C && CC != CallingConv::Fast && CC != CallingConv::Cold)
    return "its calling convention is not C, fastcc or coldcc";
  for (const Argument& Arg : F.args()) {
    if (Arg.hasByValAttr() || Arg.hasInAllocaAttr() || Arg.hasPreallocatedAttr())
      return "it takes an argument by value on the stack";
    if (Arg.hasSwiftErrorAttr() || Arg.hasAttribute(Attribute::SwiftAsync))
      return "it takes a Swift error or async context argument";
  }
  // blockaddress(@F, %bb) (a computed goto) would still jump into F's blocks from the copy.
  for (const BasicBlock& BB : F) {
    if (BB.hasAddressTaken())
      return "the address of one of its labels is taken";
    for (const Instruction& I : BB) {
      const auto* Call = dyn_cast<CallBase>(&I);
      if (!Call)
        continue;
      if (Call->cannotDuplicate())
        return "it makes a call that must not be duplicated (noduplicate)";
      if (const auto* Asm = dyn_cast<InlineAsm>(Call->getCalledOperand()); Asm && definesSymbol(*Asm))
        return "its inline assembly defines a symbol, which a copy would define twice";
    }
  }
  return std::nullopt;
}

/// Calls the hooks on every way into and out of `F`, each behind `Enabled` when it is not null.
void ModuleEntryExit::addHooks(Function& F, Value* Enabled, uint32_t Index,
                               GlobalVariable* BaseId, const CapturePlan& Plan) {
  // A nounwind function cannot be left by an exception (a throw inside it ends in
  // std::terminate), so it needs no unwind path.
  duplicateReturnsIntoTailCallers(F);
  ExitPoints Points = findExitPoints(F, /*HandleUnwinding=*/!F.doesNotThrow());

  // With a gate, the entry hook follows the flag's test (itself after the static allocas).
  Instruction* EntryPt =
      Enabled ? cast<Instruction>(Enabled)->getNextNode() : entryInsertionPoint(F);
  callHook(EnterHook, Enabled, EntryPt, Index, BaseId, entryDebugLoc(F));
  // The arguments right after the entry hook (each inserted before EntryPt, so in order).
  for (const CapturedValue& Arg : Plan.Args)
    callHook(ValueHook, Enabled, EntryPt, Index, BaseId, entryDebugLoc(F), &Arg);
  for (Instruction* Exit : Points.Exits) {
    // The return value right before the exit hook; an exit before a tail call has none yet (the
    // callee returns it after the caller's exit).
    if (auto* Ret = dyn_cast<ReturnInst>(Exit); Ret && Plan.ReturnValue)
      callHook(ValueHook, Enabled, Exit, Index, BaseId, Exit->getDebugLoc(), &*Plan.ReturnValue,
               Ret->getReturnValue());
    callHook(ExitHook, Enabled, Exit, Index, BaseId, Exit->getDebugLoc());
  }
  for (ResumeInst* Resume : Points.Resumes)
    callHook(UnwindExitHook, Enabled, Resume, Index, BaseId, Resume->getDebugLoc());
  for (LandingPadInst* Pad : Points.Pads)
    Pad->setCleanup(true);
  if (!Points.UnwindToCaller.empty())
    addUnwindCleanup(F, Points.UnwindToCaller, Enabled, Index, BaseId);
}

/// Makes each inline assembly statement of `F` that defines a symbol `convergent`. The gate tests
/// the same flag before the body and again at each exit; a backend may then duplicate the block
/// between two tests into both paths (AArch64's tail duplication does, for a short body), which
/// would define the symbol twice. Convergent calls are never duplicated into new control paths,
/// and on a CPU the attribute changes nothing else.
void keepSymbolDefiningAsmSingle(Function& F) {
  for (BasicBlock& BB : F)
    for (Instruction& I : BB)
      if (auto* Call = dyn_cast<CallBase>(&I))
        if (const auto* Asm = dyn_cast<InlineAsm>(Call->getCalledOperand());
            Asm && definesSymbol(*Asm))
          Call->setConvergent();
}

/// One body: the flag is read at the entry and its value decides each hook of the frame.
void ModuleEntryExit::instrumentWithGate(Function& F, uint32_t Index, GlobalVariable* BaseId,
                                         const CapturePlan& Plan) {
  keepSymbolDefiningAsmSingle(F);
  Value* Enabled = loadEnabledFlag(entryInsertionPoint(F));
  addHooks(F, Enabled, Index, BaseId, Plan);
}

/// Two bodies: F.traced, an internal copy of F with the hooks called unconditionally, and F, whose
/// ordinary body is entered only when the flag is off:
///   entry:  %on = load atomic i8 @__shapetrace_image_enabled unordered; br %on, %traced, %body
///   traced: %r = musttail call @F.traced(args...); ret %r
/// The frame that entered F.traced records its exits whatever the flag says by then, as with the
/// gate. `musttail` makes the call a jump, so F.traced runs in F's place (same stack, same return
/// address, variadic arguments forwarded) and F's address stays the function's address.
void ModuleEntryExit::instrumentWithClone(Function& F, uint32_t Index, GlobalVariable* BaseId,
                                          const CapturePlan& Plan) {
  ValueToValueMapTy VMap;
  // Within the module, CloneFunction gives the copy a DISubprogram of its own (same name and
  // line): debuggers and symbolizers name its frames as F's.
  Function* Traced = CloneFunction(&F, VMap);
  Traced->setName(F.getName() + TracedSuffix);
  Traced->setLinkage(GlobalValue::InternalLinkage);
  Traced->setDLLStorageClass(GlobalValue::DefaultStorageClass);
  // An internal function in F's comdat is discarded with F when the linker keeps another copy.
  Traced->setComdat(F.getComdat());
  // Only F calls it: inlining it back (in a later LTO pipeline) would undo the split.
  Traced->removeFnAttr(Attribute::AlwaysInline);
  Traced->addFnAttr(Attribute::NoInline);
  // Other instrumentation added after this pass (-pg's mcount, -finstrument-functions after
  // inlining, XRay's sleds, patchable entries) is F's: the copy is only entered through F, and a
  // second set would count every recorded call twice.
  for (StringRef Kind : {"instrument-function-entry", "instrument-function-entry-inlined",
                         "instrument-function-exit", "instrument-function-exit-inlined",
                         "function-instrument", "xray-instruction-threshold", "xray-skip-entry",
                         "xray-skip-exit", "xray-ignore-loops", "xray-log-args",
                         "patchable-function-entry", "patchable-function-prefix", "fentry-call",
                         "mnop-mcount", "mrecord-mcount"})
    Traced->removeFnAttr(Kind);
  addHooks(*Traced, /*Enabled=*/nullptr, Index, BaseId, Plan);

  Instruction* InsertPt = entryInsertionPoint(F);
  Value* Enabled = loadEnabledFlag(InsertPt);
  // Unlikely: the ordinary body is laid out as the fall-through, the copy's jump out of line.
  Instruction* Unreachable = SplitBlockAndInsertIfThen(
      Enabled, InsertPt, /*Unreachable=*/true, MDBuilder(Ctx).createUnlikelyBranchWeights());
  BasicBlock* TracedBB = Unreachable->getParent();
  TracedBB->setName("shapetrace.traced");
  TracedBB->getSinglePredecessor()->getTerminator()->setDebugLoc(entryDebugLoc(F));
  IRBuilder<> IRB(Unreachable);
  IRB.SetCurrentDebugLocation(entryDebugLoc(F));
  SmallVector<Value*, 8> Args(llvm::make_pointer_range(F.args()));
  CallInst* Call = IRB.CreateCall(Traced, Args);
  Call->setTailCallKind(CallInst::TCK_MustTail);
  Call->setCallingConv(F.getCallingConv());
  // musttail requires the ABI attributes of the arguments (sret, inreg, zeroext, ...) to match.
  AttributeList FAttrs = F.getAttributes();
  SmallVector<AttributeSet, 8> ArgAttrs;
  for (unsigned I = 0; I < F.arg_size(); ++I)
    ArgAttrs.push_back(FAttrs.getParamAttrs(I));
  Call->setAttributes(AttributeList::get(Ctx, AttributeSet(), FAttrs.getRetAttrs(), ArgAttrs));
  if (F.getReturnType()->isVoidTy())
    IRB.CreateRetVoid();
  else
    IRB.CreateRet(Call);
  Unreachable->eraseFromParent();
}

/// Routes the given calls' exceptions through one cleanup landing pad that records the unwind
/// exit and resumes unwinding: `landingpad cleanup; __shapetrace_unwind_exit(id); resume`.
void ModuleEntryExit::addUnwindCleanup(Function& F, ArrayRef<CallInst*> Calls, Value* Enabled,
                                       uint32_t Index, GlobalVariable* BaseId) {
  if (!F.hasPersonalityFn())
    F.setPersonalityFn(personalityFor(F));
  BasicBlock* Cleanup = BasicBlock::Create(Ctx, "shapetrace.unwind", &F);
  Type* PadTy = StructType::get(PointerType::getUnqual(Ctx), Int32Ty);
  LandingPadInst* Pad = LandingPadInst::Create(PadTy, 0, "shapetrace.lpad", Cleanup);
  Pad->setCleanup(true);
  ResumeInst* Resume = ResumeInst::Create(Pad, Cleanup);
  callHook(UnwindExitHook, Enabled, Resume, Index, BaseId, DebugLoc());
  for (CallInst* Call : Calls)
    changeToInvokeAndSplitBasicBlock(Call, Cleanup);
}

/// The personality for a function that had no landing pad: the one the module already uses or
/// declares (__gxx_personality_v0 in C++), otherwise the platform's default for C
/// (__gcc_personality_v0), which handles cleanup-only landing pads like ours.
Constant* ModuleEntryExit::personalityFor(const Function& F) {
  for (const Function& Other : M)
    if (&Other != &F && Other.hasPersonalityFn())
      return Other.getPersonalityFn();
  if (Function* CxxPersonality = M.getFunction(getEHPersonalityName(EHPersonality::GNU_CXX)))
    return CxxPersonality;
  StringRef Name = getEHPersonalityName(getDefaultEHPersonality(Triple(M.getTargetTriple())));
  FunctionType* PersonalityTy = FunctionType::get(Int32Ty, /*isVarArg=*/true);
  return cast<Constant>(M.getOrInsertFunction(Name, PersonalityTy).getCallee());
}

} // namespace

PreservedAnalyses ShapeTracePass::run(Module& M, ModuleAnalysisManager&) {
  Expected<FunctionFilter> Filter = FunctionFilter::create(Opts, M);
  if (!Filter) {
    M.getContext().emitError("shapetrace: " + toString(Filter.takeError()));
    return PreservedAnalyses::all();
  }
  ModuleEntryExit Instrumenter(M, *Filter, Opts.Gate);
  return Instrumenter.instrumentModule() ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

} // namespace shapetrace
