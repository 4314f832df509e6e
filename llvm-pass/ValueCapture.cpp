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
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Module.h"
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
            "' is not a format this pass knows (only /s, a const char* or std::string_view "
            "recorded as its text)";
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
  // An enumeration is its underlying integer type.
  if (const auto* Enum = dyn_cast_or_null<DICompositeType>(Ty);
      Enum && Enum->getTag() == dwarf::DW_TAG_enumeration_type)
    Ty = Enum->getBaseType() ? stripQualifiers(Enum->getBaseType()) : nullptr;
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

/// The name with its namespaces and classes, as C++ spells it: `std::basic_string_view<char, ...>`.
std::string qualifiedName(const DIType* Ty) {
  std::string Name = Ty->getName().str();
  for (const DIScope* Scope = Ty->getScope(); Scope && !isa<DIFile>(Scope) &&
                                              !isa<DICompileUnit>(Scope);
       Scope = Scope->getScope())
    if (!Scope->getName().empty())
      Name = Scope->getName().str() + "::" + Name;
  return Name;
}

/// The class template `Name` of namespace std (or of one inside it: libc++'s std::__1) by value.
const DICompositeType* stdClass(const DIType* SourceType, StringRef Name) {
  const auto* Composite = dyn_cast_or_null<DICompositeType>(stripQualifiers(SourceType));
  if (!Composite || !Composite->getName().starts_with((Name + "<").str()))
    return nullptr;
  const DIScope* Scope = Composite->getScope();
  while (isa_and_nonnull<DINamespace>(Scope) && Scope->getName() != "std")
    Scope = Scope->getScope();
  return isa_and_nonnull<DINamespace>(Scope) ? Composite : nullptr;
}

const DICompositeType* asStringView(const DIType* SourceType) {
  return stdClass(SourceType, "basic_string_view");
}

/// A std::basic_string_view's two members as its debug information lists them: the pointer to its
/// characters and its length (libstdc++ puts the length first, libc++ the pointer), in bytes.
struct ViewLayout {
  uint64_t DataOffset = 0, DataSize = 0;
  uint64_t LengthOffset = 0, LengthSize = 0;
  uint64_t CharBits = 0; ///< the characters' size: 8 for std::string_view, 32 for wstring_view
};

std::optional<ViewLayout> viewLayout(const DICompositeType* View) {
  std::optional<ViewLayout> Layout = ViewLayout{};
  bool HaveData = false, HaveLength = false;
  for (const DINode* Element : View->getElements()) {
    const auto* Member = dyn_cast_or_null<DIDerivedType>(Element);
    if (!Member || Member->getTag() != dwarf::DW_TAG_member || Member->isStaticMember())
      continue;
    const DIType* Ty = stripQualifiers(Member->getBaseType());
    const auto* Pointer = dyn_cast_or_null<DIDerivedType>(Ty);
    const auto* Integer = dyn_cast_or_null<DIBasicType>(Ty);
    if (Pointer && Pointer->getTag() == dwarf::DW_TAG_pointer_type && !HaveData) {
      const DIType* Char = stripQualifiers(Pointer->getBaseType());
      Layout->DataOffset = Member->getOffsetInBits() / 8;
      Layout->DataSize = Member->getSizeInBits() / 8;
      Layout->CharBits = Char ? Char->getSizeInBits() : 0;
      HaveData = true;
    } else if (Integer && Integer->getEncoding() == dwarf::DW_ATE_unsigned && !HaveLength) {
      Layout->LengthOffset = Member->getOffsetInBits() / 8;
      Layout->LengthSize = Member->getSizeInBits() / 8;
      HaveLength = true;
    } else {
      return std::nullopt; // a member this pass does not know
    }
  }
  if (!HaveData || !HaveLength)
    return std::nullopt; // a declaration only, or a layout of another kind
  return Layout;
}

/// The size in bytes of an integer or pointer IR type, 0 for any other.
uint64_t scalarSize(const Type* Ty, const DataLayout& DL) {
  return Ty->isIntegerTy() || Ty->isPointerTy() ? DL.getTypeStoreSize(const_cast<Type*>(Ty)) : 0;
}

/// The element of an aggregate IR type ({ i64, ptr }, [2 x i64]) that starts at `Offset` bytes
/// and holds `Size` bytes as an integer or pointer.
std::optional<unsigned> elementAt(Type* Ty, uint64_t Offset, uint64_t Size, const DataLayout& DL) {
  if (auto* Struct = dyn_cast<StructType>(Ty)) {
    const StructLayout* Layout = DL.getStructLayout(Struct);
    for (unsigned I = 0; I < Struct->getNumElements(); ++I)
      if (Layout->getElementOffset(I) == Offset &&
          scalarSize(Struct->getElementType(I), DL) == Size)
        return I;
  } else if (auto* Array = dyn_cast<ArrayType>(Ty)) {
    const uint64_t Element = scalarSize(Array->getElementType(), DL);
    if (Element == Size && Offset % Element == 0 && Offset / Element < Array->getNumElements())
      return unsigned(Offset / Element);
  }
  return std::nullopt;
}

/// How a std::string_view's two members came to an aggregate IR value (an argument or the return
/// value), or nothing when its elements are not the members.
std::optional<ViewPieces> viewInAggregate(Type* Ty, const ViewLayout& Layout, const DataLayout& DL) {
  std::optional<unsigned> Data = elementAt(Ty, Layout.DataOffset, Layout.DataSize, DL);
  std::optional<unsigned> Length = elementAt(Ty, Layout.LengthOffset, Layout.LengthSize, DL);
  if (!Data || !Length)
    return std::nullopt;
  return ViewPieces{ViewPieces::Aggregate, *Data, *Length, 0, 0};
}

/// How the ABI passed a std::string_view that begins at IR argument `First`, and how many IR
/// arguments it took; nothing when the arguments there do not hold its two members as this pass
/// knows them (then the positions cannot be trusted).
std::optional<std::pair<ViewPieces, unsigned>>
viewInArguments(ArrayRef<const Argument*> Args, unsigned First, const ViewLayout& Layout,
                const DataLayout& DL) {
  const Argument& Arg = *Args[First];
  if (Arg.hasByValAttr()) {
    if (DL.getTypeStoreSize(Arg.getParamByValType()) <
        std::max(Layout.DataOffset + Layout.DataSize, Layout.LengthOffset + Layout.LengthSize))
      return std::nullopt;
    return std::pair{ViewPieces{ViewPieces::InMemory, unsigned(Layout.DataOffset),
                                unsigned(Layout.LengthOffset), unsigned(Layout.DataSize),
                                unsigned(Layout.LengthSize)},
                     1u};
  }
  if (Arg.getType()->isAggregateType()) {
    std::optional<ViewPieces> Pieces = viewInAggregate(Arg.getType(), Layout, DL);
    return Pieces ? std::optional(std::pair{*Pieces, 1u}) : std::nullopt;
  }
  // Two registers, the member at the lower offset first.
  if (First + 1 >= Args.size())
    return std::nullopt;
  const bool DataFirst = Layout.DataOffset < Layout.LengthOffset;
  const uint64_t FirstSize = scalarSize(Args[First]->getType(), DL);
  const uint64_t SecondSize = scalarSize(Args[First + 1]->getType(), DL);
  const Argument& LengthArg = *Args[First + (DataFirst ? 1 : 0)];
  if (FirstSize != (DataFirst ? Layout.DataSize : Layout.LengthSize) ||
      SecondSize != (DataFirst ? Layout.LengthSize : Layout.DataSize) ||
      !LengthArg.getType()->isIntegerTy() || Args[First + 1]->hasByValAttr())
    return std::nullopt;
  const unsigned FirstNo = Args[First]->getArgNo(), SecondNo = Args[First + 1]->getArgNo();
  return std::pair{ViewPieces{ViewPieces::TwoArguments, DataFirst ? FirstNo : SecondNo,
                              DataFirst ? SecondNo : FirstNo, 0, 0},
                   2u};
}

/// Source parameter P's place among the IR's arguments: the first of them, and how a
/// std::string_view came (nothing for a parameter that is one IR argument).
struct Lowered {
  unsigned First = 0;
  std::optional<ViewPieces> View;
};

/// The IR arguments each source parameter became (index 0 is the return value's, unused), walking
/// both lists together: every parameter is one argument, except a std::string_view, which the ABI
/// may split over two; nothing when the lists do not come out even (another struct split over
/// several registers or packed with another, or arguments the optimiser removed), as positions
/// would then not be the source's.
std::optional<SmallVector<Lowered, 8>> lowerParameters(ArrayRef<const Argument*> Args,
                                                       ArrayRef<const DIType*> Source,
                                                       const DataLayout& DL) {
  SmallVector<Lowered, 8> Lowering(Source.size());
  unsigned Next = 0;
  for (unsigned P = 1; P < Source.size(); ++P) {
    if (Next >= Args.size())
      return std::nullopt;
    Lowering[P].First = Next;
    unsigned Taken = 1;
    if (const DICompositeType* View = asStringView(Source[P]))
      if (std::optional<ViewLayout> Layout = viewLayout(View)) {
        auto Pieces = viewInArguments(Args, Next, *Layout, DL);
        if (!Pieces)
          return std::nullopt;
        Lowering[P].View = Pieces->first;
        Taken = Pieces->second;
      }
    Next += Taken;
  }
  if (Next != Args.size())
    return std::nullopt;
  return Lowering;
}

/// Why a std::string_view (the source type) cannot be recorded as text, or nothing when it can.
std::optional<std::string> viewRefusal(const DICompositeType* View,
                                       const std::optional<ViewLayout>& Layout) {
  if (!Layout)
    return "a " + qualifiedName(View) +
           " whose debug information does not list its pointer and its length (a declaration "
           "only, or a layout this pass does not know): /s cannot find its characters";
  if (Layout->CharBits != 8)
    return "a " + qualifiedName(View) + " (characters of " + std::to_string(Layout->CharBits) +
           " bits): /s records 8-bit characters only (const char*, std::string_view)";
  return std::nullopt;
}

/// A value chosen with `/s` that is not a std::string_view: a pointer in the IR and, with debug
/// information, a pointer to characters in the source.
Expected<unsigned> classifyString(const Type* Ty, const DIType* SourceType, bool HaveSource,
                                  const Twine& What) {
  if (const DICompositeType* String = stdClass(SourceType, "basic_string"))
    return createStringError(inconvertibleErrorCode(),
                             What + " is a " + qualifiedName(String) +
                                 " by value (the ABI passes a hidden reference to a copy): /s "
                                 "records a const char* or a std::string_view; choose a function "
                                 "that receives .c_str() or a std::string_view");
  if (!Ty->isPointerTy())
    return createStringError(inconvertibleErrorCode(),
                             What + " has IR type " + typeName(Ty) +
                                 ": /s records a const char* or (with debug information, -g) a "
                                 "std::string_view, and this is neither");
  if (HaveSource && !isCharPointer(SourceType)) {
    const auto* Pointer = dyn_cast_or_null<DIDerivedType>(stripQualifiers(SourceType));
    const DIType* Pointee = Pointer ? stripQualifiers(Pointer->getBaseType()) : nullptr;
    const bool Reference = Pointer && Pointer->getTag() != dwarf::DW_TAG_pointer_type;
    // A pointer to a pointer, or to a function, has no name of its own.
    std::string PointeeName = "'void'";
    if (isa_and_nonnull<DISubroutineType>(Pointee))
      PointeeName = "a function";
    else if (Pointee && Pointee->getName().empty())
      PointeeName = "another pointer or an unnamed type";
    else if (Pointee)
      PointeeName = "'" + qualifiedName(Pointee) + "'";
    return createStringError(inconvertibleErrorCode(),
                             What + " is a " + (Reference ? "reference" : "pointer") + " to " +
                                 PointeeName +
                                 ", not to characters: /s records a const char* or a "
                                 "std::string_view; drop /s to record its address");
  }
  return SHAPETRACE_VALUE_STRING;
}

/// Whether the function's demangled parameters hold a std::string_view: without debug information
/// the pass cannot tell which of the IR arguments it became.
bool takesStringViewByName(const FunctionInfo& Info) {
  StringRef Demangled = Info.Demangled;
  size_t Open = Demangled.find('(');
  return Open != StringRef::npos && Demangled.drop_front(Open).contains("basic_string_view<");
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

namespace {

Error refuse(const Twine& Why) { return createStringError(inconvertibleErrorCode(), Why); }

/// A std::string_view chosen with /s, once its pieces are known; any other use of one refused.
Expected<CapturedValue> captureView(const DICompositeType* View, bool String,
                                    std::optional<ViewPieces> Pieces, unsigned Position,
                                    unsigned ArgNo, const Twine& What) {
  if (!String)
    return refuse(What + " is a " + qualifiedName(View) +
                  " by value: record its characters with /s (" +
                  (Position == SHAPETRACE_VALUE_RETURN ? Twine("retval") : "arg" + Twine(Position)) +
                  "/s)");
  if (std::optional<std::string> Why = viewRefusal(View, viewLayout(View)))
    return refuse(What + " is " + *Why);
  if (!Pieces)
    return refuse(What + " is a " + qualifiedName(View) +
                  " that the ABI did not pass as a pointer and a length this pass can find");
  return CapturedValue{Position, SHAPETRACE_VALUE_STRING, ArgNo, Pieces};
}

} // namespace

Expected<CapturePlan> planCapture(const Function& F, const FunctionInfo& Info,
                                  const ChosenValues& Chosen) {
  CapturePlan Plan;
  const DataLayout& DL = F.getParent()->getDataLayout();
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
  // With debug information, the source's parameters and where each went among the IR's; the two
  // lists must come out even, or a struct split over several registers has shifted the positions.
  SmallVector<const DIType*, 8> Source = sourceTypes(F);
  const bool HaveSource = !Source.empty();
  if (!HaveSource && !Chosen.Strings.empty() && takesStringViewByName(Info))
    return refuse(Name + " takes a std::string_view, which the ABI may split over two arguments: "
                         "without debug information (-g; line tables only do not describe "
                         "parameters) the pass cannot tell which IR argument /s would read");
  std::optional<SmallVector<Lowered, 8>> Lowering;
  if (HaveSource && !Chosen.Args.empty()) {
    Lowering = lowerParameters(Args, Source, DL);
    if (!Lowering)
      return refuse(Name + " has " + Twine(Source.size() - 1) + " parameters in the source and " +
                    Twine(Args.size()) +
                    " arguments in the IR, which do not correspond (a struct by value split over "
                    "several registers or packed with another, or arguments the optimiser removed "
                    "from this internal function): argument positions would not be the source's, "
                    "so none can be recorded; SHAPETRACE_PASS_MODE=before-inlining records "
                    "functions as the source declares them");
  }
  const size_t Parameters = HaveSource ? Source.size() - 1 : Args.size();
  for (unsigned Position : Chosen.Args) {
    if (Position > Parameters)
      return refuse(Name + " has " + Twine(Parameters) +
                    " arguments (`this` counted, an sret pointer not), no arg" + Twine(Position));
    const Lowered Place = Lowering ? (*Lowering)[Position] : Lowered{Position - 1, std::nullopt};
    const Argument& Arg = *Args[Place.First];
    const std::string What = "arg" + std::to_string(Position) + " of " + Name;
    const DIType* SourceType = HaveSource ? Source[Position] : nullptr;
    if (const DICompositeType* View = asStringView(SourceType)) {
      Expected<CapturedValue> Captured = captureView(View, isString(Chosen, Position), Place.View,
                                                     Position, Arg.getArgNo(), What);
      if (!Captured)
        return Captured.takeError();
      Plan.Args.push_back(*Captured);
      continue;
    }
    if (Arg.hasByValAttr() || Arg.hasInAllocaAttr() || Arg.hasPreallocatedAttr())
      return refuse(What + " is passed in memory (a struct or class by value): only integers up "
                           "to 64 bits, pointers, float and double can be recorded");
    Expected<unsigned> Type = isString(Chosen, Position)
                                  ? classifyString(Arg.getType(), SourceType, HaveSource, What)
                                  : classify(Arg.getType(), Arg.hasZExtAttr(), What);
    if (Type && HaveSource && *Type != SHAPETRACE_VALUE_STRING)
      Type = refineWithSource(SourceType, *Type, What);
    if (!Type)
      return Type.takeError();
    Plan.Args.push_back({Position, *Type, Arg.getArgNo(), std::nullopt});
  }
  if (Chosen.ReturnValue) {
    const std::string What = "the return value of " + Name;
    if (ReturnsInMemory)
      return refuse(Name + " returns a struct in memory (sret): no return value can be recorded");
    Type* RetTy = F.getReturnType();
    if (RetTy->isVoidTy())
      return refuse(Name + " returns nothing (void)");
    const DIType* SourceType = HaveSource ? Source[0] : nullptr;
    const bool String = isString(Chosen, SHAPETRACE_VALUE_RETURN);
    if (const DICompositeType* View = asStringView(SourceType)) {
      std::optional<ViewLayout> Layout = viewLayout(View);
      std::optional<ViewPieces> Pieces;
      if (Layout && RetTy->isAggregateType())
        Pieces = viewInAggregate(RetTy, *Layout, DL);
      Expected<CapturedValue> Captured =
          captureView(View, String, Pieces, SHAPETRACE_VALUE_RETURN, 0, What);
      if (!Captured)
        return Captured.takeError();
      Plan.ReturnValue = *Captured;
      return std::move(Plan);
    }
    Expected<unsigned> Type =
        String ? classifyString(RetTy, SourceType, HaveSource, What)
               : classify(RetTy, F.getAttributes().hasRetAttr(Attribute::ZExt), What);
    if (Type && HaveSource && *Type != SHAPETRACE_VALUE_STRING)
      Type = refineWithSource(SourceType, *Type, What);
    if (!Type)
      return Type.takeError();
    Plan.ReturnValue = CapturedValue{SHAPETRACE_VALUE_RETURN, *Type, 0, std::nullopt};
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
