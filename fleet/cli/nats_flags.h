// The NATS options of the commands that reach the fleet's stream (`live --nats`, `fleet`), declared
// once so that they mean the same everywhere (docs/fleet.md, "Authentication and TLS").
#pragma once

#include "fleet/nats.h"

#include <CLI/CLI.hpp>

namespace shapetrace::fleet {

inline void addNatsAuthFlags(CLI::App& command, NatsSettings& settings) {
  command
      .add_option("--nats-creds", settings.creds_file,
                  "NATS credentials file (user JWT and nkey seed, as `nsc` writes it)")
      ->check(CLI::ExistingFile);
  command
      .add_option("--nats-nkey-seed", settings.nkey_seed_file,
                  "NATS nkey seed file (with --nats-nkey, its public key)")
      ->check(CLI::ExistingFile);
  command.add_option("--nats-nkey", settings.nkey_public, "The public nkey of --nats-nkey-seed");
  command
      .add_option("--nats-ca", settings.tls_ca_file,
                  "Reach NATS over TLS, checking its certificate against this CA file (PEM)")
      ->check(CLI::ExistingFile);
}

// Authentication flags that cannot work together; throws CLI::ValidationError.
inline void checkNatsAuth(const NatsSettings& settings) {
  if (settings.nkey_seed_file.empty() != settings.nkey_public.empty())
    throw CLI::ValidationError("--nats-nkey-seed and --nats-nkey go together (the seed file and "
                               "the public key the server lists)");
  // The NATS client keeps one of them only.
  if (!settings.creds_file.empty() && !settings.nkey_seed_file.empty())
    throw CLI::ValidationError("--nats-creds or --nats-nkey-seed, not both");
}

// Usage errors CLI11 cannot check on its own; throws CLI::ValidationError.
inline void checkNatsNames(const std::string& stream, const std::string& host = "x") {
  if (!isNatsToken(stream))
    throw CLI::ValidationError("--stream", "'" + stream +
                                               "': letters, digits, '-' and '_' only (it names "
                                               "NATS subjects)");
  if (!isNatsToken(host))
    throw CLI::ValidationError("--host", "'" + host +
                                             "': letters, digits, '-' and '_' only (it names a "
                                             "NATS subject)");
}

} // namespace shapetrace::fleet
