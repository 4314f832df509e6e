//===- FunctionTable.h - per-module function table and its constructor ---===//
//
// What a module tells the runtime about the functions it instrumented, in the layout of
// runtime/include/shapetrace/abi.h: a constant array of __shapetrace_function records (mangled and
// demangled name, source file, line), a constant __shapetrace_module pointing at it and at an
// internal uint32_t base id and at the image's recording flag, a module constructor that passes the
// module to __shapetrace_register_module and a destructor that passes it to
// __shapetrace_unregister_module. Registration writes the module's first global id into the base
// id, so ids are assigned at load time and dlopen'ed libraries get their own range; the hooks add
// a function's local index to it. The runtime writes the flag while the module is registered: the
// destructor ends that before dlclose unmaps the image. Only names, never function addresses, are stored, so the table
// keeps nothing alive that the optimiser would otherwise delete. An ELF note in section
// .note.shapetrace points at the module record, so that the runtime can register every module of
// the objects loaded with it before any of their code can run (another library's constructor may
// call into a module whose own constructor has not run yet).
//
//===----------------------------------------------------------------------===//
#ifndef SHAPETRACE_LLVM_PASS_FUNCTIONTABLE_H
#define SHAPETRACE_LLVM_PASS_FUNCTIONTABLE_H

#include "llvm/ADT/StringMap.h"
#include "llvm/IR/Module.h"

#include <string>
#include <vector>

namespace shapetrace {

/// Names and place of a function as the table records them.
struct FunctionInfo {
  std::string Mangled;
  std::string Demangled;  ///< equal to Mangled when it is not an Itanium-mangled name
  std::string SourceFile; ///< from the debug info; empty without it
  unsigned Line = 0;      ///< the definition's line; 0 without debug info
  unsigned Flags = 0;     ///< 0 instrumented, else SHAPETRACE_FUNCTION_EXCLUDED_* (abi.h)
};

/// Reads F's names and its place in the source from the IR and its debug info.
FunctionInfo describeFunction(const llvm::Function& F);

class FunctionTable {
public:
  /// Creates the module's base id global (initialised to SHAPETRACE_UNREGISTERED_BASE); the record
  /// will point at `ImageFlag`, the flag the instrumented code reads.
  FunctionTable(llvm::Module& M, llvm::GlobalVariable* ImageFlag);

  /// The internal uint32_t the hooks load their base id from.
  llvm::GlobalVariable* baseId() const { return BaseId; }

  /// Appends a function and returns its local index. Functions the user's filters left out
  /// (Info.Flags set) come after every instrumented one, so instrumented functions' indices do not
  /// depend on the filters.
  uint32_t add(FunctionInfo Info);
  bool empty() const { return Functions.empty(); }
  size_t size() const { return Functions.size(); }

  /// Emits the table, the module record, the registering constructor and the unregistering
  /// destructor. Call once, after the last add(), and only if the table is not empty.
  void emit();

private:
  llvm::Constant* stringConstant(llvm::StringRef S);
  /// The ELF note that lets the runtime find the module record without running any of the
  /// module's code (abi.h): it registers every loaded module at its own start.
  void emitNote(llvm::GlobalVariable* Record);

  llvm::Module& M;
  llvm::GlobalVariable* BaseId;
  llvm::GlobalVariable* ImageFlag;
  std::vector<FunctionInfo> Functions;
  llvm::StringMap<llvm::Constant*> Strings; // one private constant per distinct string
};

} // namespace shapetrace

#endif // SHAPETRACE_LLVM_PASS_FUNCTIONTABLE_H
