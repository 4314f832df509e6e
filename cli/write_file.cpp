#include "cli/write_file.h"

#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace shapetrace::cli {

void writeFileAtomically(const std::string& path, std::string_view text) {
  writeFileAtomically(path, [text](std::ostream& out) {
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  });
}

void writeFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  const std::string partial = path + ".partial";
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
