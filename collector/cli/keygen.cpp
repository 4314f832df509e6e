// `shapetrace keygen -o FILE`: a CURVE key pair for a collector that listens beyond loopback. The
// secret key goes to FILE (mode 0600, for --curve-secret-key), the public key to FILE.pub (for
// clients, through SHAPETRACE_CURVE_SERVER_KEY).
#include "cli/command.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <zmq.h>

namespace shapetrace::cli {
namespace {

void writeKey(const std::string& path, const char* key, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0)
    throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno) +
                             (errno == EEXIST ? " (not overwriting a key)" : ""));
  const std::string line = std::string(key) + "\n";
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  if (!ok)
    throw std::runtime_error("cannot write " + path);
}

Runner setupKeygen(CLI::App& command) {
  auto out = std::make_shared<std::string>();
  command.add_option("--out,-o", *out, "secret key file to create (FILE.pub gets the public key)")
      ->required();
  return [out] {
    if (!zmq_has("curve"))
      throw std::runtime_error("this libzmq was built without CURVE support");
    char public_key[41], secret_key[41];
    if (zmq_curve_keypair(public_key, secret_key) != 0)
      throw std::runtime_error("zmq_curve_keypair failed");
    writeKey(*out, secret_key, 0600);
    writeKey(*out + ".pub", public_key, 0644);
    std::printf("secret key: %s (for shapetrace collect --curve-secret-key)\n"
                "clients:    export SHAPETRACE_CURVE_SERVER_KEY=%s\n",
                out->c_str(), public_key);
    return 0;
  };
}

const Registration keygen{"keygen", "Create a CURVE key pair for a collector reachable remotely",
                          setupKeygen};

} // namespace
} // namespace shapetrace::cli
