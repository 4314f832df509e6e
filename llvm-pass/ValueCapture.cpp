//===- ValueCapture.cpp - arguments and return values of chosen functions -===//
//
// Parsing the choices, matching them to functions and classifying the chosen values from the IR
// signature (see ValueCapture.h).
//
//===----------------------------------------------------------------------===//
#include "ValueCapture.h"

#include "shapetrace/abi.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/BinaryFormat/Dwarf.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace llvm;

namespace shapetrace {

namespace {

constexpr unsigned MaxPosition = 255; // what the descriptor's byte holds

/// One parsed SPEC: a position (SHAPETRACE_VALUE_RETURN for the return value) and whether as text.
struct Spec {
  unsigned Position;
  bool String;
};

/// `argN` (N from 1 to 255) or `retval`, either with `/s`; nothing for any other text. A format
/// other than `/s` is an error of its own (`Error` set), not a piece of the next function's.
std::optional<Spec> parseSpec(StringRef Text, std::string& Error) {
  auto [Name, Format] = Text.split('/');
  const bool HasFormat = Text.contains('/');
  std::optional<unsigned> Position;
  unsigned N = 0;
  if (Name == "retval")
    Position = SHAPETRACE_VALUE_RETURN;
  else if (Name.consume_front("arg") && !Name.empty() &&
           all_of(Name, [](char C) { return isDigit(C); }) && !Name.getAsInteger(10, N) &&
           N >= 1 && N <= MaxPosition)
    Position = N;
  if (!Position)
    return std::nullopt;
  if (HasFormat && Format != "s") {
    Error = "'" + Text.str() + "': '/" + Format.str() +
            "' is not a format this pass knows (only /s, a const char* recorded as its text)";
    return std::nullopt;
  }
  return Spec{*Position, HasFormat};
}

void addSpec(ChosenValues& Values, Spec S) {
  if (S.String) {
    auto At = lower_bound(Values.Strings, S.Position);
    if (At == Values.Strings.end() || *At != S.Position)
      Values.Strings.insert(At, S.Position);
  }
  if (S.Position == SHAPETRACE_VALUE_RETURN) {
    Values.ReturnValue = true;
    return;
  }
  auto At = lower_bound(Values.Args, S.Position);
  if (At == Values.Args.end() || *At != S.Position)
    Values.Args.insert(At, S.Position);
}

bool isString(const ChosenValues& Values, unsigned Position) {
  return binary_search(Values.Strings, Position);
}

/// The demangled name without its parameters (`kv::Handler::serve`), or the name itself when it
/// is not an Itanium-mangled one (C).
std::string nameWithoutParameters(const FunctionInfo& Info) {
  ItaniumPartialDemangler Demangler;
  if (Demangler.partialDemangle(Info.Mangled.c_str()) || !Demangler.isFunction())
    return Info.Mangled;
  char* Name = Demangler.getFunctionName(nullptr, nullptr);
  std::string Result = Name ? Name : Info.Mangled;
  std::free(Name);
  return Result;
}

/// The name without its ABI tags: `kv::makeValue[abi:cxx11]` is `kv::makeValue` to a user.
std::string withoutAbiTags(StringRef Name) {
  std::string Out;
  while (!Name.empty()) {
    size_t Tag = Name.find("[abi:");
    size_t End = Tag == StringRef::npos ? Tag : Name.find(']', Tag);
    if (End == StringRef::npos) {
      Out += Name;
      break;
    }
    Out += Name.take_front(Tag);
    Name = Name.drop_front(End + 1);
  }
  return Out;
}

std::string typeName(const Type* Ty) {
  std::string Text;
  raw_string_ostream OS(Text);
  Ty->print(OS);
  return Text;
}

/// How a value of this IR type is widened to 64 bits, or why it cannot be.
Expected<unsigned> classify(const Type* Ty, bool ZeroExtended, const Twine& What) {
  if (Ty->isPointerTy())
    return SHAPETRACE_VALUE_POINTER;
  if (Ty->isFloatTy() || Ty->isDoubleTy())
    return SHAPETRACE_VALUE_FLOAT;
  if (const auto* Int = dyn_cast<IntegerType>(Ty); Int && Int->getBitWidth() <= 64)
    return ZeroExtended || Int->getBitWidth() == 1 ? SHAPETRACE_VALUE_UNSIGNED
                                                   : SHAPETRACE_VALUE_SIGNED;
  const char* Why = Ty->isStructTy() || Ty->isArrayTy()
                        ? "a struct or array the ABI passes in registers"
                        : "wider than 64 bits or not a scalar";
  return createStringError(inconvertibleErrorCode(),
                           What + " has IR type " + typeName(Ty) + " (" + Why +
                               "): only integers up to 64 bits, pointers, float and double "
                               "can be recorded");
}

/// The source's types of F's parameters (`this` first, as the IR has it) and of its return value
/// (SourceTypes[0]), from the debug information; empty without it (or with line tables only).
SmallVector<const DIType*, 8> sourceTypes(const Function& F) {
  SmallVector<const DIType*, 8> Types;
  const DISubprogram* SP = F.getSubprogram();
  if (!SP || !SP->getType())
    return Types;
  for (const DIType* Ty : SP->getType()->getTypeArray())
    Types.push_back(Ty);
  // A variadic function's list ends with a null entry (`...`), which the IR has no argument for.
  if (Types.size() > 1 && !Types.back())
    Types.pop_back();
  return Types;
}

/// The type under typedefs and const/volatile qualifiers.
const DIType* stripQualifiers(const DIType* Ty) {
  while (const auto* Derived = dyn_cast_or_null<DIDerivedType>(Ty)) {
    unsigned Tag = Derived->getTag();
    if (Tag != dwarf::DW_TAG_typedef && Tag != dwarf::DW_TAG_const_type &&
        Tag != dwarf::DW_TAG_volatile_type)
      break;
    Ty = Derived->getBaseType();
  }
  return Ty;
}

/// What the source says about a value the IR shows as a scalar: a struct the ABI passes in
/// registers (x86-64 packs `struct {int a, b;}` into one i64) is refused, an unsigned integer is
/// shown unsigned. Nothing is known without debug information.
Expected<unsigned> refineWithSource(const DIType* SourceType, unsigned Type, const Twine& What) {
  const DIType* Ty = stripQualifiers(SourceType);
  if (isa_and_nonnull<DICompositeType>(Ty))
    return createStringError(inconvertibleErrorCode(),
                             What + " is a struct, class or union by value (the ABI passes it in "
                                    "registers or as a hidden reference): only integers up to 64 bits, pointers, float and "
                                    "double can be recorded");
  if (const auto* Basic = dyn_cast_or_null<DIBasicType>(Ty);
      Basic && Type == SHAPETRACE_VALUE_SIGNED &&
      (Basic->getEncoding() == dwarf::DW_ATE_unsigned ||
       Basic->getEncoding() == dwarf::DW_ATE_unsigned_char ||
       Basic->getEncoding() == dwarf::DW_ATE_boolean || Basic->getEncoding() == dwarf::DW_ATE_UTF))
    return SHAPETRACE_VALUE_UNSIGNED;
  return Type;
}

/// Whether the source type is a pointer to a character type (`const char*`, `unsigned char*`,
/// `char8_t*`, through typedefs and qualifiers).
bool isCharPointer(const DIType* SourceType) {
  const auto* Pointer = dyn_cast_or_null<DIDerivedType>(stripQualifiers(SourceType));
  if (!Pointer || Pointer->getTag() != dwarf::DW_TAG_pointer_type)
    return false;
  const auto* Pointee = dyn_cast_or_null<DIBasicType>(stripQualifiers(Pointer->getBaseType()));
  if (!Pointee || Pointee->getSizeInBits() != 8)
    return false;
  const unsigned Encoding = Pointee->getEncoding();
  return Encoding == dwarf::DW_ATE_signed_char || Encoding == dwarf::DW_ATE_unsigned_char ||
         Encoding == dwarf::DW_ATE_UTF;
}

bool isStringView(const DIType* SourceType) {
  const auto* Composite = dyn_cast_or_null<DICompositeType>(stripQualifiers(SourceType));
  return Composite && Composite->getName().starts_with("basic_string_view<");
}

/// A value chosen with `/s`: a pointer in the IR and, with debug information, a pointer to
/// characters in the source.
Expected<unsigned> classifyString(const Type* Ty, const DIType* SourceType, bool HaveSource,
                                  const Twine& What) {
  if (HaveSource && isStringView(SourceType))
    return createStringError(inconvertibleErrorCode(),
                             What + " is a std::string_view, which the ABI passes as a length "
                                    "and a pointer in two registers: /s records a const char* "
                                    "only (choose a function that receives .data(), or record "
                                    "its length with argN)");
  if (!Ty->isPointerTy())
    return createStringError(inconvertibleErrorCode(),
                             What + " has IR type " + typeName(Ty) +
                                 ": /s records a const char*, and this is not a pointer");
  if (HaveSource && !isCharPointer(SourceType))
    return createStringError(inconvertibleErrorCode(),
                             What + " is a pointer to something other than characters (source "
                                    "type '" + (SourceType ? SourceType->getName() : "void*") +
                                 "'): /s records a const char*; drop /s to record its address");
  return SHAPETRACE_VALUE_STRING;
}

} // namespace

Error ValueChoices::add(StringRef Text, const std::string& Origin) {
  auto Fail = [&](const Twine& Why) {
    return createStringError(inconvertibleErrorCode(), Origin + ": " + Why);
  };
  Texts.push_back(std::make_unique<std::string>(Text.str()));
  StringRef Rest = StringRef(*Texts.back()).trim();
  if (Rest.empty())
    return Fail("no FUNCTION@argN or FUNCTION@retval given");
  while (!Rest.empty()) {
    if (!Rest.contains('@'))
      return Fail("'" + Rest + "' names no value: expected FUNCTION@argN or FUNCTION@retval");
    auto [PatternText, Specs] = Rest.split('@');
    PatternText = PatternText.trim();
    if (PatternText.empty())
      return Fail("a value without a function: expected FUNCTION@argN or FUNCTION@retval");
    Expected<GlobPattern> Pattern = GlobPattern::create(PatternText);
    if (!Pattern)
      return Fail("bad pattern '" + PatternText + "': " + toString(Pattern.takeError()));
    Choice C{std::move(*Pattern), Origin, {}};
    Rest = Specs;
    // Values separated by commas; a piece that is not a value begins the next function's.
    while (true) {
      auto [Piece, After] = Rest.split(',');
      std::string FormatError;
      std::optional<Spec> Parsed = parseSpec(Piece.trim(), FormatError);
      if (!FormatError.empty())
        return Fail(FormatError);
      if (!Parsed) {
        if (C.Values.empty() || !Rest.contains('@'))
          return Fail("'" + Piece.trim() + "' for '" + PatternText +
                      "' is not a value: expected argN (N from 1 to 255) or retval, either "
                      "with /s for a string");
        break;
      }
      addSpec(C.Values, *Parsed);
      Rest = After;
      if (Rest.empty())
        break;
    }
    Choices.push_back(std::move(C));
  }
  return Error::success();
}

ChosenValues ValueChoices::match(const FunctionInfo& Info) const {
  ChosenValues All;
  if (Choices.empty())
    return All;
  const std::string Base = nameWithoutParameters(Info);
  const std::string Untagged = withoutAbiTags(Base);
  for (const Choice& C : Choices) {
    if (!C.Pattern.match(Info.Demangled) && !C.Pattern.match(Base) &&
        !C.Pattern.match(Untagged) && !C.Pattern.match(Info.Mangled))
      continue;
    for (unsigned Position : C.Values.Args)
      addSpec(All, {Position, isString(C.Values, Position)});
    if (C.Values.ReturnValue)
      addSpec(All, {SHAPETRACE_VALUE_RETURN, isString(C.Values, SHAPETRACE_VALUE_RETURN)});
  }
  return All;
}

Expected<CapturePlan> planCapture(const Function& F, const FunctionInfo& Info,
                                  const ChosenValues& Chosen) {
  CapturePlan Plan;
  // The arguments as the ABI passes them, the hidden sret pointer left out.
  SmallVector<const Argument*, 8> Args;
  bool ReturnsInMemory = false;
  for (const Argument& Arg : F.args()) {
    if (Arg.hasStructRetAttr()) {
      ReturnsInMemory = true;
      continue;
    }
    Args.push_back(&Arg);
  }
  const std::string Name = "'" + Info.Demangled + "'";
  // With debug information, the source's parameters; the IR's must be the same list, or a struct
  // split over several registers has shifted the positions.
  SmallVector<const DIType*, 8> Source = sourceTypes(F);
  const bool HaveSource = !Source.empty();
  // A std::string_view chosen with /s: said as such, before the count of parameters below
  // (the ABI splits it in two) would say something vaguer.
  for (unsigned Position : Chosen.Strings)
    if (HaveSource && Position != SHAPETRACE_VALUE_RETURN && Position < Source.size() &&
        isStringView(Source[Position]))
      return classifyString(nullptr, Source[Position], true,
                            "arg" + Twine(Position) + " of " + Name).takeError();
  if (HaveSource && !Chosen.Args.empty() && Source.size() - 1 != Args.size())
    return createStringError(
        inconvertibleErrorCode(),
        Name + " has " + Twine(Source.size() - 1) + " parameters in the source but the ABI passes " +
            Twine(Args.size()) +
            " arguments (a struct by value split over several registers or packed with another, "
            "or arguments the optimiser removed from this internal function): argument positions "
            "would not be the source's, so none can be recorded; SHAPETRACE_PASS_MODE="
            "before-inlining records functions as the source declares them");
  for (unsigned Position : Chosen.Args) {
    if (Position > Args.size())
      return createStringError(inconvertibleErrorCode(),
                               Name + " has " + Twine(Args.size()) +
                                   " arguments (`this` counted, an sret pointer not), no arg" +
                                   Twine(Position));
    const Argument& Arg = *Args[Position - 1];
    const std::string What = "arg" + std::to_string(Position) + " of " + Name;
    if (Arg.hasByValAttr() || Arg.hasInAllocaAttr() || Arg.hasPreallocatedAttr())
      return createStringError(inconvertibleErrorCode(),
                               What + " is passed in memory (a struct or class by value): only "
                                      "integers up to 64 bits, pointers, float and double can be "
                                      "recorded");
    Expected<unsigned> Type =
        isString(Chosen, Position)
            ? classifyString(Arg.getType(), HaveSource ? Source[Position] : nullptr, HaveSource,
                             What)
            : classify(Arg.getType(), Arg.hasZExtAttr(), What);
    if (Type && HaveSource && *Type != SHAPETRACE_VALUE_STRING)
      Type = refineWithSource(Source[Position], *Type, What);
    if (!Type)
      return Type.takeError();
    Plan.Args.push_back({Position, *Type, Arg.getArgNo()});
  }
  if (Chosen.ReturnValue) {
    if (ReturnsInMemory)
      return createStringError(inconvertibleErrorCode(),
                               Name + " returns a struct in memory (sret): no return value can be "
                                      "recorded");
    Type* RetTy = F.getReturnType();
    if (RetTy->isVoidTy())
      return createStringError(inconvertibleErrorCode(), Name + " returns nothing (void)");
    Expected<unsigned> Type =
        isString(Chosen, SHAPETRACE_VALUE_RETURN)
            ? classifyString(RetTy, HaveSource ? Source[0] : nullptr, HaveSource,
                             "the return value of " + Name)
            : classify(RetTy, F.getAttributes().hasRetAttr(Attribute::ZExt),
                       "the return value of " + Name);
    if (Type && HaveSource && *Type != SHAPETRACE_VALUE_STRING)
      Type = refineWithSource(Source[0], *Type, "the return value of " + Name);
    if (!Type)
      return Type.takeError();
    Plan.ReturnValue = CapturedValue{SHAPETRACE_VALUE_RETURN, *Type, 0};
  }
  return std::move(Plan);
}

std::string describeChosen(const ChosenValues& Chosen) {
  std::string Text;
  for (unsigned Position : Chosen.Args)
    Text += (Text.empty() ? "arg" : ", arg") + std::to_string(Position) +
            (isString(Chosen, Position) ? "/s" : "");
  if (Chosen.ReturnValue)
    Text += std::string(Text.empty() ? "retval" : ", retval") +
            (isString(Chosen, SHAPETRACE_VALUE_RETURN) ? "/s" : "");
  return Text;
}

} // namespace shapetrace
