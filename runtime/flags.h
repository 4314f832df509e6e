// The runtime's configuration: SHAPETRACE_* environment variables read once (flags.inc lists them).
//
// Read with flags() only. An invalid value is reported on stderr (the only output the runtime ever
// adds to a program's, and only for a broken configuration) and replaced by the default.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace shapetrace::rt {

struct Flags {
#define SHAPETRACE_FLAG_TYPE_String std::string
#define SHAPETRACE_FLAG_TYPE_Bytes uint64_t
#define SHAPETRACE_FLAG_TYPE_Count uint64_t
#define SHAPETRACE_FLAG_TYPE_Bool bool
#define SHAPETRACE_FLAG(kind, field, name, default_value, description)                           \
  SHAPETRACE_FLAG_TYPE_##kind field = default_value;
#include "flags.inc"
#undef SHAPETRACE_FLAG
};

// SHAPETRACE_THROTTLE (throttle.h): stop recording a function after `calls` calls shorter than
// `max_ns` each.
struct ThrottleLimits {
  uint64_t calls = 0;  // 0: throttling off
  uint64_t max_ns = 0; // a call counts when it lasted less than this
  bool on() const { return calls != 0; }
};
// "N:T", both decimal integers of at least 1; false for anything else.
bool parseThrottle(const std::string& text, ThrottleLimits& out);

// Parses the environment through `getenv_fn` (getenv in production, a map in tests). Problems are
// appended to `errors` as complete sentences naming the variable.
Flags parseFlags(const char* (*getenv_fn)(const char*), std::vector<std::string>& errors);

// Every flag as (SHAPETRACE_NAME, value as text), in flags.inc order: the ProcessStart config.
std::vector<std::pair<std::string, std::string>> describeFlags(const Flags& flags);

// The process's flags, parsed from the environment on first use.
const Flags& flags();
// Re-reads the environment (fork child keeps its parent's flags; tests use it).
void reloadFlags();

} // namespace shapetrace::rt
