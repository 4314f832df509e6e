// Writing a command's output file so that a reader (a browser, a live snapshot, a script polling
// the file) never sees half of it: the text goes to "<path>.partial", then is renamed over `path`.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace shapetrace::cli {

// The file holds what the traced programs did (names, arguments, timings): it is created 0600, as
// a recording's files are, or 0644 (before the umask) when `readable` (the commands' --readable).
// Throws std::runtime_error naming the file when it cannot be written or renamed.
void writeFileAtomically(const std::string& path, std::string_view text, bool readable = false);
// The help of the commands' --readable flag.
inline constexpr const char* kReadableHelp =
    "let other local users read the output files (0644; default: 0600, as a recording's files)";
// The same for output too large to hold in memory: `write` streams it. When `write` throws, the
// partial file is removed and the exception passes on.
void writeFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& write,
                         bool readable = false);

} // namespace shapetrace::cli
