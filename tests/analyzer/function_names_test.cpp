// The short form of demangled names that text outputs print (function_names.h), on the examples
// the page's ST.fmt.shortName is tested on too (short_function_names.tsv).
#include "function_names.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace shapetrace::analyzer {
namespace {

std::vector<std::pair<std::string, std::string>> examples() {
  std::ifstream file(SHORT_FUNCTION_NAMES);
  std::vector<std::pair<std::string, std::string>> out;
  for (std::string line; std::getline(file, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    out.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return out;
}

TEST(FunctionNames, ShortFormsOfTheExamples) {
  const auto cases = examples();
  ASSERT_EQ(cases.size(), 24u) << "cannot read " << SHORT_FUNCTION_NAMES;
  for (const auto& [name, expected] : cases) EXPECT_EQ(shortFunctionName(name), expected) << name;
}

TEST(FunctionNames, WithoutParametersKeepsTemplatesAndReturnType) {
  EXPECT_EQ(withoutParameters("void ns::f<int>(int, char const*) const"), "void ns::f<int>");
  EXPECT_EQ(withoutParameters("main::{lambda(int)#1}::operator()(int) const"),
            "main::{lambda(int)#1}::operator()");
  EXPECT_EQ(withoutParameters("fib"), "fib");
  EXPECT_EQ(withoutParameters("(int)"), "(int)");  // nothing before the parameters: kept
}

TEST(FunctionNames, EmptyAndDegenerateNames) {
  EXPECT_EQ(shortFunctionName(""), "");
  EXPECT_EQ(shortFunctionName("<"), "<");
  EXPECT_EQ(shortFunctionName("a>b"), "a>b");
  EXPECT_EQ(shortFunctionName("operator"), "operator");
}

// Two lambdas run by std::thread share a short name; each keeps one of its own in an output, and
// the same full name always gets the same one.
TEST(FunctionNames, ShortNamesStayUniqueWithinAnOutput) {
  ShortNames names;
  const std::string run_a =
      "std::thread::_State_impl<std::thread::_Invoker<std::tuple<kv::runService()::$_0>>>::_M_run()";
  const std::string run_b =
      "std::thread::_State_impl<std::thread::_Invoker<std::tuple<kv::runService()::$_1>>>::_M_run()";
  EXPECT_EQ(names.of(run_a), "std::thread::_State_impl<...>::_M_run");
  EXPECT_EQ(names.of(run_b), "std::thread::_State_impl<...>::_M_run #2");
  EXPECT_EQ(names.of(run_a), "std::thread::_State_impl<...>::_M_run");
  EXPECT_EQ(names.of("kv::Store::get(unsigned long)"), "kv::Store::get");
  EXPECT_EQ(names.of("kv::Store::get(unsigned long) const"), "kv::Store::get #2");
  EXPECT_EQ(names.of(run_b), "std::thread::_State_impl<...>::_M_run #2");
}

TEST(FunctionNames, ColumnsCutSayTheyWereCut) {
  EXPECT_EQ(fitColumn("kv::Store::get", 20), "kv::Store::get");
  EXPECT_EQ(fitColumn("kv::RequestHandler::handlePut", 20), "kv::RequestHandle...");
  EXPECT_EQ(fitColumn("kv::RequestHandler::handlePut", 20).size(), 20u);
}

} // namespace
} // namespace shapetrace::analyzer
