#include "wire/endpoint.h"

#include <cstdlib>
#include <unistd.h>

namespace shapetrace::wire {

std::string defaultEndpointDirectory() {
  const char* runtime_dir = std::getenv("XDG_RUNTIME_DIR");
  if (runtime_dir && *runtime_dir)
    return std::string(runtime_dir) + "/shapetrace";
  return "/tmp/shapetrace-" + std::to_string(::getuid());
}

std::string defaultEndpoint() { return "ipc://" + defaultEndpointDirectory() + "/collector.sock"; }

} // namespace shapetrace::wire
