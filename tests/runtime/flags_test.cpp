// Unit tests of the SHAPETRACE_* environment parsing, and of its documentation staying complete.
#include "flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace shapetrace::rt {
namespace {

std::map<std::string, std::string> g_env;
const char* fakeGetenv(const char* name) {
  auto found = g_env.find(name);
  return found == g_env.end() ? nullptr : found->second.c_str();
}

Flags parse(std::map<std::string, std::string> env, std::vector<std::string>& errors) {
  g_env = std::move(env);
  return parseFlags(fakeGetenv, errors);
}

TEST(Flags, DefaultsWithAnEmptyEnvironment) {
  std::vector<std::string> errors;
  const Flags flags = parse({}, errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(flags.ring_bytes, 16u << 20);
  EXPECT_EQ(flags.drain_interval_us, 1000u);
  EXPECT_EQ(flags.clock, "auto");
  EXPECT_TRUE(flags.enabled);
  EXPECT_FALSE(flags.blocking);
}

TEST(Flags, ParsesEveryKind) {
  std::vector<std::string> errors;
  const Flags flags = parse({{"SHAPETRACE_RING", "4MiB"},
                             {"SHAPETRACE_BLOCKING", "yes"},
                             {"SHAPETRACE_ENABLED", "off"},
                             {"SHAPETRACE_BATCH", "100"},
                             {"SHAPETRACE_CLOCK", "monotonic"},
                             {"SHAPETRACE_ENDPOINT", "tcp://127.0.0.1:5555"}},
                            errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(flags.ring_bytes, 4u << 20);
  EXPECT_TRUE(flags.blocking);
  EXPECT_FALSE(flags.enabled);
  EXPECT_EQ(flags.batch_events, 100u);
  EXPECT_EQ(flags.clock, "monotonic");
  EXPECT_EQ(flags.endpoint, "tcp://127.0.0.1:5555");
  std::vector<std::string> more;
  EXPECT_EQ(parse({{"SHAPETRACE_CLOCK", "counter"}}, more).clock, "counter");
  EXPECT_EQ(parse({{"SHAPETRACE_CLOCK", "tsc"}}, more).clock, "tsc");
  EXPECT_EQ(parse({{"SHAPETRACE_RING", "512k"}}, more).ring_bytes, 512u << 10);
  EXPECT_EQ(parse({{"SHAPETRACE_RING", "1G"}}, more).ring_bytes, 1u << 30);
  EXPECT_TRUE(more.empty());
}

TEST(Flags, BadValuesAreNamedAndReplacedByDefaults) {
  const std::map<std::string, std::string> bad[] = {
      {{"SHAPETRACE_RING", "lots"}},        {{"SHAPETRACE_RING", "-1"}},
      {{"SHAPETRACE_RING", "16"}},          {{"SHAPETRACE_RING", "12Q"}},
      {{"SHAPETRACE_BATCH", "0"}},          {{"SHAPETRACE_BATCH", "1x"}},
      {{"SHAPETRACE_BLOCKING", "maybe"}},   {{"SHAPETRACE_CLOCK", "hpet"}},
      {{"SHAPETRACE_DRAIN_INTERVAL_US", "5"}}, {{"SHAPETRACE_CHANNEL", "1K"}},
      {{"SHAPETRACE_EXIT_TIMEOUT_MS", "99999999999999999999999"}},
      {{"SHAPETRACE_THROTTLE", "100"}},      {{"SHAPETRACE_THROTTLE", "0:10"}},
      {{"SHAPETRACE_THROTTLE", "10:0"}},     {{"SHAPETRACE_THROTTLE", "10:"}},
      {{"SHAPETRACE_THROTTLE", ":10"}},      {{"SHAPETRACE_THROTTLE", "10:5us"}},
      {{"SHAPETRACE_THROTTLE", "-1:10"}},    {{"SHAPETRACE_THROTTLE", "1:2:3"}},
      {{"SHAPETRACE_THROTTLE", "99999999999999999999999:1"}},
  };
  const Flags defaults;
  for (const auto& env : bad) {
    std::vector<std::string> errors;
    const Flags flags = parse(env, errors);
    ASSERT_EQ(errors.size(), 1u) << env.begin()->first;
    EXPECT_THAT(errors[0], ::testing::HasSubstr(env.begin()->first));
    EXPECT_EQ(describeFlags(flags), describeFlags(defaults)) << env.begin()->first;
  }
}

// SHAPETRACE_THROTTLE=N:T; off (empty) by default.
TEST(Flags, ThrottleIsCallsColonNanoseconds) {
  std::vector<std::string> errors;
  EXPECT_EQ(parse({}, errors).throttle, "");
  ThrottleLimits limits;
  EXPECT_FALSE(parseThrottle("", limits));
  EXPECT_FALSE(limits.on());
  const Flags flags = parse({{"SHAPETRACE_THROTTLE", "100000:10000"}}, errors);
  EXPECT_TRUE(errors.empty());
  ASSERT_TRUE(parseThrottle(flags.throttle, limits));
  EXPECT_TRUE(limits.on());
  EXPECT_EQ(limits.calls, 100000u);
  EXPECT_EQ(limits.max_ns, 10000u);
  ASSERT_TRUE(parseThrottle("1:18446744073709551615", limits));
  EXPECT_EQ(limits.max_ns, UINT64_MAX);
}

TEST(Flags, DescribeListsEveryVariable) {
  const auto described = describeFlags(Flags{});
  ASSERT_FALSE(described.empty());
  EXPECT_EQ(described.front().first, "SHAPETRACE_ENDPOINT");
  for (const auto& [name, value] : described)
    EXPECT_EQ(name.rfind("SHAPETRACE_", 0), 0u);
}

// docs/runtime.md documents exactly the variables flags.inc declares.
TEST(Flags, DocumentationListsExactlyTheDeclaredVariables) {
  std::set<std::string> declared;
  for (const auto& [name, value] : describeFlags(Flags{}))
    declared.insert(name);
  std::ifstream doc(SHAPETRACE_RUNTIME_DOC);
  ASSERT_TRUE(doc) << SHAPETRACE_RUNTIME_DOC;
  std::set<std::string> documented;
  const std::regex row(R"(^\| `(SHAPETRACE_[A-Z_]+)` \|)");
  for (std::string line; std::getline(doc, line);) {
    std::smatch match;
    if (std::regex_search(line, match, row))
      documented.insert(match[1]);
  }
  EXPECT_EQ(documented, declared);
}

} // namespace
} // namespace shapetrace::rt
