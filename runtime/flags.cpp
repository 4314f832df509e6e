// Parsing of the SHAPETRACE_* environment variables declared in flags.inc.
#include "flags.h"

#include "channel/channel.h"
#include "value_text.h"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace shapetrace::rt {
namespace {

bool parseCount(const char* text, uint64_t& out) {
  if (!*text || *text == '-' || *text == '+')
    return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (errno || *end)
    return false;
  out = value;
  return true;
}

bool parseBytes(const char* text, uint64_t& out) {
  if (!*text || *text == '-' || *text == '+')
    return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (errno || end == text)
    return false;
  unsigned shift = 0;
  switch (*end) {
  case '\0': break;
  case 'k': case 'K': shift = 10; ++end; break;
  case 'm': case 'M': shift = 20; ++end; break;
  case 'g': case 'G': shift = 30; ++end; break;
  default: return false;
  }
  if (*end == 'i' || *end == 'I') // accept "MiB"-style spellings: 16MiB, 16MB, 16M
    ++end;
  if (*end == 'b' || *end == 'B')
    ++end;
  if (*end || value > (std::numeric_limits<uint64_t>::max() >> shift))
    return false;
  out = value << shift;
  return true;
}

bool parseBool(const char* text, bool& out) {
  for (const char* yes : {"1", "true", "yes", "on"})
    if (!strcasecmp(text, yes))
      return out = true, true;
  for (const char* no : {"0", "false", "no", "off"})
    if (!strcasecmp(text, no))
      return out = false, true;
  return false;
}

bool parseValue(const char* text, std::string& out) { return out = text, true; }
bool parseValue(const char* text, bool& out) { return parseBool(text, out); }

std::string show(const std::string& value) { return value; }
std::string show(bool value) { return value ? "1" : "0"; }
std::string show(uint64_t value) { return std::to_string(value); }

void check(bool ok, const char* name, const char* expected, std::vector<std::string>& errors) {
  if (!ok)
    errors.push_back(std::string("shapetrace: ignoring SHAPETRACE_") + name + ": expected " +
                     expected + "; using the default");
}

// Range rules beyond the syntax of each kind.
void validate(Flags& flags, const Flags& defaults, std::vector<std::string>& errors) {
  if (flags.ring_bytes < 256 || flags.ring_bytes > (uint64_t{1} << 34)) {
    check(false, "RING", "a size from 256 bytes to 16G", errors);
    flags.ring_bytes = defaults.ring_bytes;
  }
  if (flags.batch_events < 1 || flags.batch_events > (1u << 20)) {
    check(false, "BATCH", "a count from 1 to 1048576", errors);
    flags.batch_events = defaults.batch_events;
  }
  if (flags.value_text_max < 1 || flags.value_text_max > kValueTextHardMax) {
    check(false, "VALUE_TEXT_MAX", "a count from 1 to 1024", errors);
    flags.value_text_max = defaults.value_text_max;
  }
  if (flags.drain_interval_us < 100 || flags.drain_interval_us > 1000000) {
    check(false, "DRAIN_INTERVAL_US", "microseconds from 100 to 1000000", errors);
    flags.drain_interval_us = defaults.drain_interval_us;
  }
  if (flags.exit_timeout_ms > 3600000) {
    check(false, "EXIT_TIMEOUT_MS", "milliseconds up to 3600000", errors);
    flags.exit_timeout_ms = defaults.exit_timeout_ms;
  }
  if (flags.channel_bytes < channel::kMinDataBytes || flags.channel_bytes > channel::kMaxDataBytes) {
    check(false, "CHANNEL", "a size from 64K to 1G", errors);
    flags.channel_bytes = defaults.channel_bytes;
  }
  if (flags.clock != "auto" && flags.clock != "counter" && flags.clock != "tsc" &&
      flags.clock != "monotonic") {
    check(false, "CLOCK", "auto, counter (tsc) or monotonic", errors);
    flags.clock = defaults.clock;
  }
  if (ThrottleLimits limits; !flags.throttle.empty() && !parseThrottle(flags.throttle, limits)) {
    check(false, "THROTTLE", "CALLS:NS, two integers of at least 1 (100000:10000)", errors);
    flags.throttle = defaults.throttle;
  }
}

Flags& storage() {
  static Flags flags;
  return flags;
}

} // namespace

bool parseThrottle(const std::string& text, ThrottleLimits& out) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos)
    return false;
  const auto positive = [](const char* begin, const char* end, uint64_t& value) {
    const auto [stop, error] = std::from_chars(begin, end, value);
    return error == std::errc() && stop == end && value != 0;
  };
  ThrottleLimits limits;
  const char* begin = text.data();
  if (!positive(begin, begin + colon, limits.calls) ||
      !positive(begin + colon + 1, begin + text.size(), limits.max_ns))
    return false;
  out = limits;
  return true;
}

Flags parseFlags(const char* (*getenv_fn)(const char*), std::vector<std::string>& errors) {
  const Flags defaults;
  Flags flags;
#define SHAPETRACE_PARSE_String(field, name, text) check(parseValue(text, flags.field), #name, "text", errors)
#define SHAPETRACE_PARSE_Bool(field, name, text)                                                   \
  check(parseValue(text, flags.field), #name, "1/0, true/false, yes/no or on/off", errors)
#define SHAPETRACE_PARSE_Count(field, name, text)                                                  \
  check(parseCount(text, flags.field), #name, "an unsigned decimal integer", errors)
#define SHAPETRACE_PARSE_Bytes(field, name, text)                                                  \
  check(parseBytes(text, flags.field), #name, "a size in bytes with an optional K, M or G suffix", \
        errors)
#define SHAPETRACE_FLAG(kind, field, name, default_value, description)                           \
  if (const char* text = getenv_fn("SHAPETRACE_" #name))                                          \
    SHAPETRACE_PARSE_##kind(field, name, text);
#include "flags.inc"
#undef SHAPETRACE_FLAG
  validate(flags, defaults, errors);
  return flags;
}

std::vector<std::pair<std::string, std::string>> describeFlags(const Flags& flags) {
  std::vector<std::pair<std::string, std::string>> out;
#define SHAPETRACE_FLAG(kind, field, name, default_value, description)                           \
  out.emplace_back("SHAPETRACE_" #name, show(flags.field));
#include "flags.inc"
#undef SHAPETRACE_FLAG
  return out;
}

void reloadFlags() {
  std::vector<std::string> errors;
  storage() = parseFlags([](const char* name) -> const char* { return std::getenv(name); }, errors);
  for (const std::string& error : errors)
    std::fprintf(stderr, "%s\n", error.c_str());
}

const Flags& flags() {
  static const bool loaded = (reloadFlags(), true);
  (void)loaded;
  return storage();
}

} // namespace shapetrace::rt
