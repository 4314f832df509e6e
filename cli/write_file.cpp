#include "cli/write_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

namespace shapetrace::cli {

void writeFileAtomically(const std::string& path, std::string_view text, bool readable) {
  writeFileAtomically(
      path,
      [text](std::ostream& out) {
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
      },
      readable);
}

namespace {

// Creates `path` anew with `mode` (before the umask): a file left there keeps its own mode when
// truncated, so it is removed first.
void createWithMode(const std::string& path, mode_t mode) {
  ::unlink(path.c_str());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0)
    throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  ::close(fd);
}

} // namespace

void writeFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& write,
                         bool readable) {
  const std::string partial = path + ".partial";
  createWithMode(partial, readable ? 0644 : 0600);
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + partial);
    try {
      write(out);
    } catch (...) {
      out.close();
      std::remove(partial.c_str());
      throw;
    }
    if (!out.flush()) {
      out.close();
      std::remove(partial.c_str());
      throw std::runtime_error("cannot write " + partial);
    }
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot rename " + partial + " to " + path);
}

} // namespace shapetrace::cli
