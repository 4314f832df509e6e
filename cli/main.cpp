// `shapetrace`: the command-line entry point. Subcommands register themselves (cli/command.h).
#include "cli/command.h"

#include "wire/codec.h"
#include "wire/framing.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>

namespace shapetrace::cli {

std::vector<Command>& registeredCommands() {
  static std::vector<Command> commands;
  return commands;
}

namespace {

Runner setupVersion(CLI::App&) {
  return [] {
    std::printf("shapetrace %s (stream format %u, recording format %u)\n", SHAPETRACE_VERSION,
                unsigned{wire::kFormatVersion}, unsigned{wire::kRecordingFormatVersion});
    return 0;
  };
}
const Registration version{"version", "Print the version and the formats this build reads",
                           setupVersion};

} // namespace
} // namespace shapetrace::cli

int main(int argc, char** argv) {
  using namespace shapetrace::cli;
  CLI::App app{"shapetrace: record, stream and analyze function traces of C/C++ programs.\n"
               "Run 'shapetrace <command> --help' for a command's options."};
  app.require_subcommand(1);
  app.fallthrough(false);

  auto commands = registeredCommands();
  std::sort(commands.begin(), commands.end(),
            [](const Command& a, const Command& b) { return a.name < b.name; });
  std::map<CLI::App*, std::pair<std::string, Runner>> runners;
  for (const Command& command : commands) {
    CLI::App* sub = app.add_subcommand(command.name, command.summary);
    runners[sub] = {command.name, command.setup(*sub)};
  }

  if (argc > 1 && argv[1][0] != '-' && !runners.empty() &&
      std::none_of(commands.begin(), commands.end(),
                   [&](const Command& c) { return c.name == argv[1]; })) {
    std::fprintf(stderr, "shapetrace: unknown command '%s' (run 'shapetrace --help')\n", argv[1]);
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help exits 0; every usage error exits 2, as is conventional for command-line tools.
    return app.exit(e) == 0 ? 0 : 2;
  }
  for (CLI::App* sub : app.get_subcommands()) {
    auto& [name, run] = runners.at(sub);
    try {
      return run();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "shapetrace %s: error: %s\n", name.c_str(), e.what());
      return 1;
    }
  }
  return 2;
}
