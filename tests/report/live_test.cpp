// `shapetrace live` end to end: a real PUB socket publishes the service trace (the fixture
// publisher), the command analyses it, serves the page and the snapshot over real HTTP, and prints
// its terminal summary; plus every usage error (port in use, bad --http, bad endpoint) and the
// "waiting for collector" state.
#include "support/files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

using shapetrace::testing::slurp;

// A child process with stdout and stderr in files.
class Child {
public:
  Child(std::vector<std::string> args, const fs::path& out, const fs::path& err) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  int wait() {
    int status = 0;
    if (pid_ > 0 && ::waitpid(pid_, &status, 0) == pid_) pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  void terminate() { ::kill(pid_, SIGTERM); }

private:
  pid_t pid_ = -1;
};

// A free TCP port on 127.0.0.1 (bound and released; good enough for a test).
int freePort() {
  const int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  int port = -1;
  if (::bind(sock, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(sock, reinterpret_cast<sockaddr*>(&address), &length) == 0)
    port = ntohs(address.sin_port);
  ::close(sock);
  return port;
}

class LiveTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("shapetrace-live-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  std::pair<int, std::string> run(const std::string& args) {
    const std::string command = std::string(SHAPETRACE_BINARY) + " " + args + " >" +
                                (dir / "out").string() + " 2>" + (dir / "err").string();
    const int status = std::system(command.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "err")};
  }

  // Waits (bounded) until `ready` holds; the bound only turns a hang into a failure.
  template <class F> bool eventually(F ready) {
    for (int i = 0; i < 300; ++i) {
      if (ready()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  fs::path dir;
};

TEST_F(LiveTest, ServesThePageAndASnapshotThatGrowsWithTheStream) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(freePort());
  Child live({SHAPETRACE_BINARY, "live", "--connect", endpoint, "--http", "127.0.0.1:0",
              "--interval", "0.2"},
             dir / "live.out", dir / "live.err");
  int port = 0;
  ASSERT_TRUE(eventually([&] {
    std::smatch m;
    const std::string out = slurp(dir / "live.out");
    if (!std::regex_search(out, m, std::regex(R"(serving http://127\.0\.0\.1:(\d+)/)"))) return false;
    port = std::stoi(m[1]);
    return true;
  })) << slurp(dir / "live.err");
  httplib::Client client("127.0.0.1", port);

  // Before anything is published: waiting, nothing analysed.
  auto first = client.Get("/api/snapshot");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  Json snapshot = Json::parse(first->body);
  EXPECT_TRUE(snapshot["live_state"]["waiting"].get<bool>());
  EXPECT_EQ(snapshot["live_state"]["endpoint"], endpoint);

  Child publisher({SHAPETRACE_PUBLISHER, endpoint, "--seconds", "1"}, dir / "pub.out",
                  dir / "pub.err");
  ASSERT_EQ(publisher.wait(), 0) << slurp(dir / "pub.err");
  ASSERT_TRUE(eventually([&] {
    auto r = client.Get("/api/snapshot");
    if (!r) return false;
    snapshot = Json::parse(r->body);
    return snapshot["model"]["summary"]["calls"].get<uint64_t>() == 8697; // every call published
  })) << snapshot["model"]["summary"].dump();
  EXPECT_FALSE(snapshot["live_state"]["waiting"].get<bool>());
  EXPECT_EQ(snapshot["model"]["summary"]["threads"], 5);
  EXPECT_EQ(snapshot["model"]["summary"]["clusters"], 14);
  EXPECT_EQ(snapshot["run"]["processes"][0]["executable"], "/opt/kvstore/bin/kvstore-server");

  auto page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_THAT(page->get_header_value("Content-Type"), ::testing::HasSubstr("text/html"));
  EXPECT_THAT(page->body, ::testing::HasSubstr(R"("live":{"snapshot":"/api/snapshot")"));
  EXPECT_EQ(page->body.find("https://"), std::string::npos);
  EXPECT_EQ(page->body.find("http://"), std::string::npos);

  live.terminate();
  EXPECT_EQ(live.wait(), 0);
  const std::string out = slurp(dir / "live.out");
  EXPECT_THAT(out, ::testing::HasSubstr("5 threads  17394 events  8697 calls  17 shapes  14 clusters"));
  EXPECT_THAT(out, ::testing::HasSubstr("kv::Server::handle(kv::Request const&)"));
  EXPECT_THAT(out, ::testing::HasSubstr("most extreme outliers"));
}

TEST_F(LiveTest, SaysItIsWaitingForTheCollector) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(freePort());
  const auto [code, err] = run("live --connect " + endpoint + " --no-http --duration 1.2");
  EXPECT_EQ(code, 0) << err;
  EXPECT_THAT(slurp(dir / "out"), ::testing::HasSubstr("waiting for collector at " + endpoint));
}

TEST_F(LiveTest, PortInUseIsAClearError) {
  httplib::Server occupant;
  const int port = occupant.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { occupant.listen_after_bind(); });
  const auto [code, err] =
      run("live --connect tcp://127.0.0.1:1 --http 127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err, ::testing::HasSubstr("cannot listen on 127.0.0.1:" + std::to_string(port)));
  occupant.stop();
  serving.join();
}

TEST_F(LiveTest, BadArgumentsAreClearErrors) {
  auto [code, err] = run("live --connect tcp://127.0.0.1:1 --http localhost");
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err, ::testing::HasSubstr("--http wants HOST:PORT"));
  std::tie(code, err) = run("live --connect tcp://127.0.0.1:1 --http 127.0.0.1:99999");
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err, ::testing::HasSubstr("not a port number"));
  std::tie(code, err) = run("live --connect nonsense://x --no-http --duration 1");
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err, ::testing::HasSubstr("cannot connect to nonsense://x"));
  std::tie(code, err) = run("live");
  EXPECT_NE(code, 0);
  EXPECT_THAT(err, ::testing::HasSubstr("--connect is required"));
}

} // namespace
