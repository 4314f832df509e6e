// Writing a command's output file so that a reader (a browser, a live snapshot, a script polling
// the file) never sees half of it: the text goes to "<path>.partial", then is renamed over `path`.
#pragma once

#include <string>
#include <string_view>

namespace shapetrace::cli {

// Throws std::runtime_error naming the file when it cannot be written or renamed.
void writeFileAtomically(const std::string& path, std::string_view text);

} // namespace shapetrace::cli
