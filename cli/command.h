// The `shapetrace` command line: one binary whose subcommands are registered by the parts that own
// them (cli/CMakeLists.txt lists where each is). Each subcommand lives in its own file and registers
// itself:
//
//   namespace {
//   cli::Runner setupInfo(CLI::App& command) {
//     auto options = std::make_shared<InfoOptions>();
//     command.add_option("dir", options->dir, "recording directory")->required();
//     return [options] { return runInfo(*options); };
//   }
//   const cli::Registration info{"info", "Summarise a recording", setupInfo};
//   }
//
// A runner returns the process exit code; an exception escaping it is reported as
// "shapetrace <command>: error: <what>" with exit code 1. Parts link their commands into the binary
// as CMake OBJECT libraries (so the static registrations are kept), see collector/CMakeLists.txt.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace shapetrace::cli {

using Runner = std::function<int()>;
using Setup = Runner (*)(CLI::App& command);

// `run`, with std::invalid_argument (what the user typed cannot mean anything: a malformed time,
// an id that is not a number) reported as a usage error: "shapetrace NAME: error: ...", exit 2.
// Other errors reach main, which reports them with exit 1.
inline Runner usageErrorsExit2(const char* name, Runner run) {
  return [name, run = std::move(run)]() -> int {
    try {
      return run();
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "shapetrace %s: error: %s\n", name, e.what());
      return 2;
    }
  };
}

struct Command {
  std::string name;
  std::string summary;
  Setup setup;
};

// Every registered command, in registration order (main sorts them by name for --help).
std::vector<Command>& registeredCommands();

struct Registration {
  Registration(std::string name, std::string summary, Setup setup) {
    registeredCommands().push_back({std::move(name), std::move(summary), setup});
  }
};

} // namespace shapetrace::cli
