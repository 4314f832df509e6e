#include "wire/endpoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace shapetrace::wire {

std::string defaultEndpointDirectory() {
  const char* runtime_dir = std::getenv("XDG_RUNTIME_DIR");
  if (runtime_dir && *runtime_dir)
    return std::string(runtime_dir) + "/shapetrace";
  return "/tmp/shapetrace-" + std::to_string(::getuid());
}

std::string defaultEndpoint() { return "ipc://" + defaultEndpointDirectory() + "/collector.sock"; }

std::string claimPrivateDirectory(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return "cannot create " + dir + ": " + std::strerror(errno);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return "cannot stat " + dir + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::getuid())
    return dir + " is not a directory owned by you";
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", st.st_mode & 0777);
    return dir + " is accessible to other users (mode " + mode + "); run 'chmod 700 " + dir + "'";
  }
  return {};
}

} // namespace shapetrace::wire
