// Shorter forms of demangled C++ function names, for text outputs and labels. A name is kept
// whole in the models (JSON, the page's data); only what is printed for a person is shortened.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace shapetrace::analyzer {

// "ns::Class::method(int, char const*) const" -> "ns::Class::method": everything from the '(' that
// matches the name's last ')'. A name without one (C) is returned unchanged.
std::string withoutParameters(std::string_view name);
// The name without its ABI tags: "kv::makeValue[abi:cxx11]" -> "kv::makeValue" (what a user types
// for a function returning std::string).
std::string withoutAbiTags(std::string_view name);

// The name as a person reads it in a line of text: without its parameters and qualifiers, without
// its return type (a template function's demangled name starts with it: "void ns::f<int>(int)"),
// and each template argument list longer than kShortTemplateArguments characters, or with a
// template inside, written "<...>". A header-only library's instantiation names run to thousands of
// characters (Boost.Asio's any_executor<...> alone is 600), which made every line that printed
// one unreadable; uftrace prints such names without their template arguments for the same reason.
//   "void boost::asio::detail::executor_function::complete<boost::asio::detail::binder2<...>,
//    std::allocator<void>>(boost::asio::detail::executor_function::impl_base*, bool)"
//     -> "boost::asio::detail::executor_function::complete<...>"
//   "boost::mp11::detail::mp_with_index_impl_<7ul>::call<0ul, F>(unsigned long, F&&)"
//     -> "boost::mp11::detail::mp_with_index_impl_<7ul>::call<0ul, F>"
// Operator names keep their symbols ("operator<<", "operator()", "operator->"), lambdas and
// "(anonymous namespace)" are kept as they are. The page's ST.fmt.shortName does the same
// (tests/analyzer/short_function_names.tsv holds the examples both are tested on).
std::string shortFunctionName(std::string_view name);

inline constexpr size_t kShortTemplateArguments = 16;

// `text` in at most `width` (>= 4) characters for a column of a text table: cut, with "..." saying
// so, when longer (never cut silently).
std::string fitColumn(std::string text, size_t width);

// Short names that stay unique within one output: two different functions whose short names
// collide (two lambdas' "std::thread::_State_impl<...>::_M_run", overloads) are told apart by
// " #2", " #3"..., numbered in the order the output first names them; the same full name always
// gets the same short one.
class ShortNames {
public:
  const std::string& of(std::string_view full);

private:
  std::map<std::string, std::string, std::less<>> by_full_;
  std::map<std::string, size_t, std::less<>> taken_; // short name -> full names given it so far
};

} // namespace shapetrace::analyzer
