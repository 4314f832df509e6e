// NATS authentication and TLS through a real nats-server configured by the test (docs/fleet.md,
// "Authentication and TLS"): an nkey user (a key pair made here: an ed25519 key from openssl,
// encoded as NATS nkeys are) publishes and reads the fleet's stream while a client without a key,
// with a key the server does not list, or with a seed that does not match its public key is
// refused; a server with a certificate signed by a CA made here with openssl is reached over TLS
// with --nats-ca, and refused with another CA or without TLS. Every refusal is a clear error and
// exit code 1, for `fleet` and for `live --nats` (a refusal is not NATS being away); flags that
// cannot work together are usage errors (exit 2).
#include "fleet/host_publisher.h"
#include "fleet/nats.h"
#include "hosts.h"
#include "nats_server.h"
#include "support/command.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <fstream>

namespace shapetrace::fleet {
namespace {

using analyzer::AnalysisSettings;
using analyzer::Analyzer;
using nlohmann::json;

// NATS nkeys (github.com/nats-io/nkeys): a prefix byte, the 32-byte ed25519 key, CRC-16/XMODEM
// little-endian, in unpadded RFC 4648 base32.
uint16_t crc16(const std::vector<uint8_t>& bytes) {
  uint16_t crc = 0;
  for (const uint8_t byte : bytes) {
    crc ^= static_cast<uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit)
      crc = static_cast<uint16_t>(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
  }
  return crc;
}

std::string base32(const std::vector<uint8_t>& bytes) {
  static const char* const kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (const uint8_t byte : bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += kAlphabet[(buffer >> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += kAlphabet[(buffer << (5 - bits)) & 31];
  return out;
}

std::string nkeyText(std::vector<uint8_t> raw) {
  const uint16_t crc = crc16(raw);
  raw.push_back(static_cast<uint8_t>(crc & 0xff));
  raw.push_back(static_cast<uint8_t>(crc >> 8));
  return base32(raw);
}

constexpr uint8_t kPrefixSeed = 18 << 3, kPrefixUser = 20 << 3;

std::vector<uint8_t> lastBytes(const std::filesystem::path& file, size_t n) {
  const std::string bytes = shapetrace::testing::slurp(file);
  if (bytes.size() < n) throw std::runtime_error("short key file " + file.string());
  return {bytes.end() - static_cast<long>(n), bytes.end()};
}

struct NKeyUser {
  std::string public_key; // "U..."
  std::string seed_file;  // holds "SU..."
};

class FleetAuth : public shapetrace::testing::CommandTest {
protected:
  FleetAuth() : CommandTest("shapetrace-fleet-auth-") {}
  void SetUp() override {
    CommandTest::SetUp();
    std::filesystem::create_directories(dir / "nats");
  }
  void TearDown() override {
    nats.reset();
    CommandTest::TearDown();
  }

  void sh(const std::string& command) {
    const auto result = runCommand(command);
    ASSERT_EQ(result.exit_code, 0) << command << "\n" << result.err;
  }

  // An nkey user: openssl makes the ed25519 key, encoded as `nk -gen user` would.
  NKeyUser makeUser(const std::string& name) {
    const auto key = dir / (name + ".der"), pub = dir / (name + ".pub.der");
    sh("openssl genpkey -algorithm ed25519 -outform DER -out " + key.string());
    sh("openssl pkey -inform DER -in " + key.string() + " -pubout -outform DER -out " +
       pub.string());
    std::vector<uint8_t> seed{kPrefixSeed | (kPrefixUser >> 5),
                              static_cast<uint8_t>((kPrefixUser & 31) << 3)};
    const auto private_bytes = lastBytes(key, 32);
    seed.insert(seed.end(), private_bytes.begin(), private_bytes.end());
    std::vector<uint8_t> user{kPrefixUser};
    const auto public_bytes = lastBytes(pub, 32);
    user.insert(user.end(), public_bytes.begin(), public_bytes.end());
    NKeyUser result{nkeyText(user), (dir / (name + ".nk")).string()};
    std::ofstream(result.seed_file) << nkeyText(seed) << "\n";
    return result;
  }

  void startNats(const std::string& config_text) {
    const auto config = dir / "nats.conf";
    std::ofstream(config) << config_text;
    nats = std::make_unique<testing::NatsServer>(dir / "nats", config.string());
  }

  // One host's summary, through HostPublisher (what `live --nats` runs) with `settings`.
  void publish(const NatsSettings& settings) {
    Analyzer analyzer(AnalysisSettings{}, 1);
    for (const auto& item : testing::hostItems(0))
      analyzer.consume(item);
    HostPublisher publisher(settings, "S", "web-1", "/var/rec/web-1");
    publisher.takeSummary(analyzer);
    ASSERT_TRUE(publisher.waitDelivered(std::chrono::seconds(20))) << publisher.status().last_error;
  }

  shapetrace::testing::CommandResult fleet(const std::string& url, const std::string& flags) {
    return runCommand(std::string(SHAPETRACE_BINARY) + " fleet --nats " + url +
                      " --stream S --duration 2 --json " + (dir / "fleet.json").string() + " " +
                      flags);
  }
  json fleetModel() { return json::parse(shapetrace::testing::slurp(dir / "fleet.json")); }

  std::unique_ptr<testing::NatsServer> nats;
};

TEST_F(FleetAuth, AnNkeyUserPublishesAndReadsAndEveryOtherClientIsRefused) {
  const NKeyUser allowed = makeUser("allowed"), stranger = makeUser("stranger");
  ASSERT_EQ(allowed.public_key.size(), 56u);
  ASSERT_EQ(allowed.public_key[0], 'U');
  startNats("authorization { users = [ { nkey: " + allowed.public_key + " } ] }\n");

  NatsSettings settings;
  settings.url = nats->url();
  settings.nkey_public = allowed.public_key;
  settings.nkey_seed_file = allowed.seed_file;
  publish(settings);
  auto result = fleet(nats->url(), "--nats-nkey-seed " + allowed.seed_file + " --nats-nkey " +
                                       allowed.public_key);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json model = fleetModel();
  ASSERT_EQ(model["fleet"]["hosts"].size(), 1u);
  EXPECT_EQ(model["fleet"]["hosts"][0]["host"], "web-1");
  EXPECT_GT(model["summary"]["calls"].get<uint64_t>(), 0u);

  // No key, a key the server does not list, a seed that is not the public key's.
  const std::string refused = "shapetrace fleet: error: NATS connection to " + nats->url();
  for (const std::string& flags :
       {std::string(), "--nats-nkey-seed " + stranger.seed_file + " --nats-nkey " +
                           stranger.public_key,
        "--nats-nkey-seed " + stranger.seed_file + " --nats-nkey " + allowed.public_key}) {
    result = fleet(nats->url(), flags);
    EXPECT_EQ(result.exit_code, 1) << flags << "\n" << result.err;
    EXPECT_NE(result.err.find(refused), std::string::npos) << flags << "\n" << result.err;
    EXPECT_NE(result.err.find("Authorization"), std::string::npos) << flags << "\n" << result.err;
  }
  // A host refused by the server stops with the reason (retrying cannot fix credentials), unlike a
  // host whose NATS is away, which goes on analysing.
  result = runCommand(std::string(SHAPETRACE_BINARY) + " live --connect ipc:///nonexistent " +
                      "--no-http --duration 1 --stream S --nats " + nats->url() +
                      " --nats-nkey-seed " + stranger.seed_file + " --nats-nkey " +
                      stranger.public_key);
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("shapetrace live: error: NATS connection to " + nats->url()),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("Authorization"), std::string::npos) << result.err;
  // A seed file that holds no seed.
  std::ofstream(dir / "empty.nk") << "not a seed\n";
  result = fleet(nats->url(), "--nats-nkey-seed " + (dir / "empty.nk").string() + " --nats-nkey " +
                                  allowed.public_key);
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("shapetrace fleet: error: "), std::string::npos) << result.err;
}

TEST_F(FleetAuth, NkeyAndCredentialsFlagsThatCannotWorkAreUsageErrors) {
  const NKeyUser user = makeUser("user");
  startNats("");
  auto result = fleet(nats->url(), "--nats-nkey-seed " + user.seed_file);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("--nats-nkey-seed and --nats-nkey go together"), std::string::npos)
      << result.err;
  result = fleet(nats->url(), "--nats-nkey " + user.public_key);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  result = fleet(nats->url(), "--nats-creds " + user.seed_file + " --nats-nkey-seed " +
                                  user.seed_file + " --nats-nkey " + user.public_key);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("--nats-creds or --nats-nkey-seed, not both"), std::string::npos)
      << result.err;
  result = fleet(nats->url(), "--nats-ca " + (dir / "missing.pem").string());
  EXPECT_EQ(result.exit_code, 2) << result.err;
  // live checks the same flags.
  result = runCommand(std::string(SHAPETRACE_BINARY) + " live --connect ipc:///nonexistent " +
                      "--no-http --duration 0.1 --nats " + nats->url() + " --nats-nkey " +
                      user.public_key);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("--nats-nkey-seed and --nats-nkey go together"), std::string::npos)
      << result.err;
}

TEST_F(FleetAuth, TlsWithTheServersCaIsReachedAndAnotherCaOrPlainTextIsRefused) {
  // A CA, the server's certificate for 127.0.0.1 signed by it, and another CA.
  const std::string d = dir.string();
  sh("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca -keyout " + d +
     "/ca.key -out " + d + "/ca.pem");
  sh("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other-ca -keyout " + d +
     "/other.key -out " + d + "/other.pem");
  sh("openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout " + d +
     "/server.key -out " + d + "/server.csr");
  std::ofstream(dir / "san.ext") << "subjectAltName=IP:127.0.0.1\n";
  sh("openssl x509 -req -in " + d + "/server.csr -CA " + d + "/ca.pem -CAkey " + d +
     "/ca.key -CAcreateserial -days 2 -extfile " + d + "/san.ext -out " + d + "/server.pem");
  startNats("tls { cert_file: \"" + d + "/server.pem\", key_file: \"" + d + "/server.key\" }\n");

  NatsSettings settings;
  settings.url = nats->url("tls");
  settings.tls_ca_file = d + "/ca.pem";
  publish(settings);
  auto result = fleet(nats->url("tls"), "--nats-ca " + d + "/ca.pem");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(fleetModel()["fleet"]["hosts"].size(), 1u);

  // Another CA: the server's certificate is not trusted.
  result = fleet(nats->url("tls"), "--nats-ca " + d + "/other.pem");
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("shapetrace fleet: error: NATS connection to " + nats->url("tls")),
            std::string::npos)
      << result.err;
  result = runCommand(std::string(SHAPETRACE_BINARY) + " live --connect ipc:///nonexistent " +
                      "--no-http --duration 1 --stream S --nats " + nats->url("tls") +
                      " --nats-ca " + d + "/other.pem");
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("shapetrace live: error: NATS connection to " + nats->url("tls")),
            std::string::npos)
      << result.err;
  // Without a CA: the system's CAs do not know the test's either.
  result = fleet(nats->url(), "");
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("shapetrace fleet: error: NATS connection to " + nats->url()),
            std::string::npos)
      << result.err;
}

} // namespace
} // namespace shapetrace::fleet
