//===- FunctionTable.cpp - per-module function table and its constructor --===//
//
// Emits the abi.h records for the functions a module instrumented (see FunctionTable.h).
//
//===----------------------------------------------------------------------===//
#include "FunctionTable.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/Support/Path.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"

using namespace llvm;

namespace shapetrace {

// Values from runtime/include/shapetrace/abi.h. They are repeated rather than included because
// the header is the runtime's C view of the same contract; the IR tests check both agree.
static constexpr uint32_t AbiVersion = 3;
static constexpr uint32_t UnregisteredBase = 0x80000000u;
static constexpr char RegisterModuleName[] = "__shapetrace_register_module";
static constexpr char UnregisterModuleName[] = "__shapetrace_unregister_module";
static constexpr char CtorName[] = "shapetrace.module_ctor";
static constexpr char DtorName[] = "shapetrace.module_dtor";
// The module's ELF note (abi.h, SHAPETRACE_MODULE_NOTE_*).
static constexpr char NoteSection[] = ".note.shapetrace";
static constexpr char NoteName[] = "shapetrace"; // with its terminating null: 11 bytes
static constexpr uint32_t NoteType = 1;
// Run before ordinary constructors (65535) so that C++ static constructors already record with
// registered ids; sanitizer runtimes use 1 and SanitizerCoverage 2.
static constexpr int CtorPriority = 2;

FunctionInfo describeFunction(const Function& F) {
  FunctionInfo Info;
  // A leading \1 only tells the backend not to add a platform prefix; it is not part of the name.
  Info.Mangled = GlobalValue::dropLLVMManglingEscape(F.getName()).str();
  Info.Demangled = demangle(Info.Mangled);
  if (const DISubprogram* SP = F.getSubprogram()) {
    Info.Line = SP->getLine();
    StringRef File = SP->getFilename();
    StringRef Directory = SP->getDirectory();
    if (File.empty() || Directory.empty() || sys::path::is_absolute(File)) {
      Info.SourceFile = File.str();
    } else {
      SmallString<256> Path(Directory);
      sys::path::append(Path, File);
      Info.SourceFile = Path.str().str();
    }
  }
  return Info;
}

FunctionTable::FunctionTable(Module& M, GlobalVariable* ImageFlag) : M(M), ImageFlag(ImageFlag) {
  Type* Int32Ty = Type::getInt32Ty(M.getContext());
  BaseId = new GlobalVariable(M, Int32Ty, /*isConstant=*/false, GlobalValue::InternalLinkage,
                              ConstantInt::get(Int32Ty, UnregisteredBase), "__shapetrace_base_id");
}

uint32_t FunctionTable::add(FunctionInfo Info) {
  Functions.push_back(std::move(Info));
  return static_cast<uint32_t>(Functions.size() - 1);
}

Constant* FunctionTable::stringConstant(StringRef S) {
  Constant*& Slot = Strings[S];
  if (!Slot) {
    auto* Data = ConstantDataArray::getString(M.getContext(), S);
    auto* GV = new GlobalVariable(M, Data->getType(), /*isConstant=*/true,
                                  GlobalValue::PrivateLinkage, Data, "__shapetrace_str");
    GV->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
    GV->setAlignment(Align(1));
    Slot = GV;
  }
  return Slot;
}

void FunctionTable::emit() {
  LLVMContext& Ctx = M.getContext();
  Type* Int32Ty = Type::getInt32Ty(Ctx);
  PointerType* PtrTy = PointerType::getUnqual(Ctx);
  // struct __shapetrace_function { const char *mangled, *demangled, *file; uint32_t line, flags; }
  auto* FunctionTy = StructType::get(Ctx, {PtrTy, PtrTy, PtrTy, Int32Ty, Int32Ty});
  // struct __shapetrace_module { uint32_t abi_version, function_count;
  //   const struct __shapetrace_function *functions; const char *module_id; uint32_t *base_id;
  //   uint8_t *image_enabled; }
  auto* ModuleTy = StructType::get(Ctx, {Int32Ty, Int32Ty, PtrTy, PtrTy, PtrTy, PtrTy});

  std::vector<Constant*> Records;
  Records.reserve(Functions.size());
  for (const FunctionInfo& Info : Functions) {
    Constant* Mangled = stringConstant(Info.Mangled);
    Records.push_back(ConstantStruct::get(
        FunctionTy, {Mangled, stringConstant(Info.Demangled), stringConstant(Info.SourceFile),
                     ConstantInt::get(Int32Ty, Info.Line), ConstantInt::get(Int32Ty, Info.Flags)}));
  }
  auto* TableTy = ArrayType::get(FunctionTy, Records.size());
  auto* Table = new GlobalVariable(M, TableTy, /*isConstant=*/true, GlobalValue::PrivateLinkage,
                                   ConstantArray::get(TableTy, Records), "__shapetrace_functions");
  auto* Record = new GlobalVariable(
      M, ModuleTy, /*isConstant=*/true, GlobalValue::PrivateLinkage,
      ConstantStruct::get(ModuleTy, {ConstantInt::get(Int32Ty, AbiVersion),
                                     ConstantInt::get(Int32Ty, Records.size()), Table,
                                     stringConstant(M.getSourceFileName()), BaseId, ImageFlag}),
      "__shapetrace_module");

  emitNote(Record);

  // The constructor is internal and, unlike SanitizerCoverage's and AddressSanitizer's, in no
  // comdat: theirs do the same work in every object, so a comdat keyed on their shared name lets
  // the linker keep one, while each of ours registers a different table and all must run (lld and
  // GNU ld both keep a single `shapetrace.module_ctor` group otherwise). Its .init_array entry is
  // a --gc-sections root, which keeps the constructor and, through it, the table. The destructor
  // is the same for .fini_array: AddressSanitizer unregisters its globals so on dlclose.
  // The unregistering function is referenced weakly and called only when present: a runtime
  // older than ABI version 3 refuses the module with a message instead of failing the program at
  // its exit with an undefined symbol (in position-independent code; a non-PIC executable's
  // reference is its PLT entry, never null).
  FunctionType* RegisterTy = FunctionType::get(Type::getVoidTy(Ctx), {PtrTy}, /*isVarArg=*/false);
  auto callAtLoad = [&](const char* FunctionName, const char* CalleeName, bool IfPresent) {
    Function* Caller = createSanitizerCtor(M, FunctionName);
    FunctionCallee Callee = M.getOrInsertFunction(CalleeName, RegisterTy);
    auto* CalleeFn = dyn_cast<Function>(Callee.getCallee());
    if (CalleeFn) {
      CalleeFn->addFnAttr(Attribute::NoUnwind);
      if (IfPresent && CalleeFn->isDeclaration())
        CalleeFn->setLinkage(GlobalValue::ExternalWeakLinkage);
    }
    Instruction* InsertPt = Caller->getEntryBlock().getTerminator();
    if (IfPresent && CalleeFn)
      InsertPt = SplitBlockAndInsertIfThen(
          IRBuilder<>(InsertPt).CreateIsNotNull(CalleeFn), InsertPt, /*Unreachable=*/false);
    IRBuilder<> IRB(InsertPt);
    IRB.CreateCall(Callee, {Record});
    return Caller;
  };
  Function* Ctor = callAtLoad(CtorName, RegisterModuleName, /*IfPresent=*/false);
  Function* Dtor = callAtLoad(DtorName, UnregisterModuleName, /*IfPresent=*/true);
  appendToGlobalCtors(M, Ctor, CtorPriority);
  appendToGlobalDtors(M, Dtor, CtorPriority);
}

void FunctionTable::emitNote(GlobalVariable* Record) {
  LLVMContext& Ctx = M.getContext();
  Type* Int32Ty = Type::getInt32Ty(Ctx);
  Type* Int64Ty = Type::getInt64Ty(Ctx);
  // Elf_Nhdr { namesz, descsz, type }, the name padded to 4 bytes, then the descriptor: the
  // record's offset from the descriptor itself, so that the note needs no dynamic relocation and
  // can sit in a read-only segment.
  auto* NameTy = ArrayType::get(Type::getInt8Ty(Ctx), 12);
  auto* NoteTy = StructType::get(Ctx, {Int32Ty, Int32Ty, Int32Ty, NameTy, Int32Ty});
  auto* Note = new GlobalVariable(M, NoteTy, /*isConstant=*/true, GlobalValue::PrivateLinkage,
                                  nullptr, "__shapetrace_note");
  Constant* Desc = ConstantExpr::getInBoundsGetElementPtr(
      NoteTy, Note, ArrayRef<Constant*>{ConstantInt::get(Int32Ty, 0), ConstantInt::get(Int32Ty, 4)});
  Constant* Offset = ConstantExpr::getTrunc(
      ConstantExpr::getSub(ConstantExpr::getPtrToInt(Record, Int64Ty),
                           ConstantExpr::getPtrToInt(Desc, Int64Ty)),
      Int32Ty);
  Note->setInitializer(ConstantStruct::get(
      NoteTy, {ConstantInt::get(Int32Ty, sizeof NoteName), ConstantInt::get(Int32Ty, 4),
               ConstantInt::get(Int32Ty, NoteType),
               ConstantDataArray::getRaw(StringRef(NoteName, sizeof NoteName).str() + '\0', 12,
                                         Type::getInt8Ty(Ctx)),
               Offset}));
  Note->setSection(NoteSection);
  Note->setAlignment(Align(4));
  // Nothing refers to the note: keep it (linkers keep note sections under --gc-sections too).
  appendToUsed(M, {Note});
}

} // namespace shapetrace
