// The one error type of the wire layer: every way bytes from outside can be wrong.
//
// Decoders throw FormatError and nothing else (Cap'n Proto's kj::Exception is translated); callers
// that must survive bad input (the collector, the analyzer's readers) catch it, count it by reason,
// and go on.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace shapetrace::wire {

#define SHAPETRACE_FORMAT_ERROR_REASONS(X)                                                         \
  X(Truncated, "the message ends before its declared contents")                                   \
  X(Oversized, "the message is larger than the format allows")                                     \
  X(Malformed, "Cap'n Proto rejected the message structure")                                       \
  X(UnsupportedVersion, "the message was written by an incompatible format version")               \
  X(UnknownItem, "the message holds an item kind this reader does not know")                       \
  X(BadEvents, "the events of a batch do not decode to the declared count")                        \
  X(BadChecksum, "a recorded frame does not match its checksum")                                   \
  X(BadHeader, "a file or frame header is not shapetrace's")                                       \
  X(BadValue, "a field holds a value no writer produces")

enum class FormatErrorReason : uint8_t {
#define SHAPETRACE_X(name, description) name,
  SHAPETRACE_FORMAT_ERROR_REASONS(SHAPETRACE_X)
#undef SHAPETRACE_X
};
inline constexpr size_t kFormatErrorReasonCount = 0
#define SHAPETRACE_X(name, description) +1
    SHAPETRACE_FORMAT_ERROR_REASONS(SHAPETRACE_X)
#undef SHAPETRACE_X
    ;

const char* formatErrorReasonName(FormatErrorReason reason);
const char* formatErrorReasonDescription(FormatErrorReason reason);

class FormatError : public std::runtime_error {
public:
  FormatError(FormatErrorReason reason, const std::string& detail);
  FormatErrorReason reason() const { return reason_; }

private:
  FormatErrorReason reason_;
};

} // namespace shapetrace::wire
