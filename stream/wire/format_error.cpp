#include "wire/format_error.h"

namespace shapetrace::wire {

const char* formatErrorReasonName(FormatErrorReason reason) {
  switch (reason) {
#define SHAPETRACE_X(name, description)                                                            \
  case FormatErrorReason::name:                                                                    \
    return #name;
    SHAPETRACE_FORMAT_ERROR_REASONS(SHAPETRACE_X)
#undef SHAPETRACE_X
  }
  return "?";
}

const char* formatErrorReasonDescription(FormatErrorReason reason) {
  switch (reason) {
#define SHAPETRACE_X(name, description)                                                            \
  case FormatErrorReason::name:                                                                    \
    return description;
    SHAPETRACE_FORMAT_ERROR_REASONS(SHAPETRACE_X)
#undef SHAPETRACE_X
  }
  return "?";
}

FormatError::FormatError(FormatErrorReason reason, const std::string& detail)
    : std::runtime_error(std::string(formatErrorReasonName(reason)) + ": " + detail),
      reason_(reason) {}

} // namespace shapetrace::wire
