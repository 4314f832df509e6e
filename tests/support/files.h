// File helpers shared by the tests of several parts.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace shapetrace::testing {

// The whole content of a file ("" when it cannot be read: the assertion on it then fails).
inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

} // namespace shapetrace::testing
