// The collector with real ZeroMQ sockets, real sender processes (test_sender) and real files:
// many senders at once with every event recorded exactly once and in order per thread, malformed
// messages counted and dropped, CURVE refusal and acceptance, a stalled subscriber that does not
// stall recording and sees what it missed, and a full disk.
#include "collector.h"
#include "process.h"
#include "recording/recording.h"
#include "sender_events.h"
#include "support/memory.h"
#include "wire/codec.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <memory>
#include <csignal>
#include <poll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace shapetrace::collector {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::TempDir;
using testing::senderBatchEvents;
using namespace std::chrono_literals;

struct RecordedThread {
  std::vector<uint64_t> sequences;
  bool events_match = true;
  bool started = false, ended = false;
};
struct Recorded {
  std::map<std::pair<uint64_t, uint32_t>, RecordedThread> threads;
  std::map<uint64_t, int> process_starts, process_ends;
  size_t items = 0;
  std::vector<recording::Damage> damage;
};

// Reads a recording of test_sender processes and checks every batch's events.
Recorded readRecording(const std::string& dir, uint32_t events_per_batch) {
  Recorded r;
  recording::RecordingReader reader(dir);
  while (auto item = reader.nextItem()) {
    ++r.items;
    if (auto* batch = std::get_if<wire::EventBatch>(&item->body)) {
      RecordedThread& t = r.threads[{item->process, batch->thread}];
      t.sequences.push_back(batch->sequence);
      if (batch->events != senderBatchEvents(batch->thread, batch->sequence, events_per_batch))
        t.events_match = false;
    } else if (auto* start = std::get_if<wire::ThreadStart>(&item->body)) {
      r.threads[{item->process, start->thread}].started = true;
    } else if (auto* end = std::get_if<wire::ThreadEnd>(&item->body)) {
      r.threads[{item->process, end->thread}].ended = true;
    } else if (item->kind() == wire::ItemKind::ProcessStart) {
      ++r.process_starts[item->process];
    } else if (item->kind() == wire::ItemKind::ProcessEnd) {
      ++r.process_ends[item->process];
    }
  }
  r.damage = reader.damage();
  return r;
}

std::vector<uint64_t> iota(uint64_t n) {
  std::vector<uint64_t> v(n);
  for (uint64_t i = 0; i < n; ++i)
    v[i] = i;
  return v;
}

bool allEnded(const Collector& c, size_t processes) {
  const CollectorStats s = c.stats();
  if (s.senders.size() < processes)
    return false;
  for (const auto& [key, sender] : s.senders)
    if (!sender.ended)
      return false;
  return true;
}

// Polls the collector until every child has exited and `processes` senders sent their end.
void collectUntilDone(Collector& collector, std::vector<std::unique_ptr<Child>>& children,
                      size_t processes) {
  for (;;) {
    collector.poll(20ms);
    bool running = false;
    for (auto& child : children)
      running |= !child->exited();
    if (!running && allEnded(collector, processes))
      return;
  }
}

std::unique_ptr<Child> sender(const std::string& endpoint, std::vector<std::string> args) {
  args.insert(args.begin(), {TEST_SENDER, endpoint});
  auto child = std::make_unique<Child>(args);
  child->closeStdin();
  return child;
}

TEST(Collector, EightProcessesWithFourThreadsEachEveryEventExactlyOnceInOrder) {
  TempDir tmp;
  zmq::context_t context;
  CollectorOptions options;
  options.listen = {"ipc://" + tmp.sub("c.sock")};
  options.out_dir = tmp.sub("rec");
  options.recording.segment_bytes = 1 << 20; // several segments
  Collector collector(options, context);

  constexpr uint64_t kBatches = 60;
  constexpr uint32_t kEvents = 500;
  std::vector<std::unique_ptr<Child>> children;
  for (int p = 0; p < 8; ++p)
    children.push_back(sender(options.listen[0],
                              {"--threads", "4", "--batches", std::to_string(kBatches), "--events",
                               std::to_string(kEvents)}));
  collectUntilDone(collector, children, 8);
  for (auto& child : children)
    EXPECT_EQ(child->exitCode(), 0);
  ASSERT_TRUE(collector.finish());

  const CollectorStats stats = collector.stats();
  const SenderCounters total = stats.total();
  EXPECT_EQ(total.events, 8 * 4 * kBatches * kEvents);
  EXPECT_EQ(total.malformed + total.oversized + total.duplicate + total.out_of_order +
                total.missing_batches + total.unrecorded,
            0u);
  const Recorded r = readRecording(options.out_dir, kEvents);
  EXPECT_TRUE(r.damage.empty());
  EXPECT_GT(recording::RecordingReader(options.out_dir).segmentCount(), 1u);
  EXPECT_EQ(r.items, stats.recording.items_written);
  EXPECT_EQ(r.process_starts.size(), 8u);
  EXPECT_EQ(r.process_ends.size(), 8u);
  ASSERT_EQ(r.threads.size(), 32u);
  for (const auto& [key, t] : r.threads) {
    EXPECT_EQ(t.sequences, iota(kBatches)) << "thread " << key.second;
    EXPECT_TRUE(t.events_match) << "thread " << key.second;
    EXPECT_TRUE(t.started && t.ended);
  }
  // collector.json holds the same counters.
  std::ifstream json(options.out_dir + "/collector.json");
  EXPECT_TRUE(json.good());
}

TEST(Collector, MalformedOversizedDuplicateAndLateMessagesAreCountedAndDropped) {
  TempDir tmp;
  zmq::context_t context;
  CollectorOptions options;
  options.listen = {"ipc://" + tmp.sub("c.sock")};
  options.out_dir = tmp.sub("rec");
  Collector collector(options, context);
  std::vector<std::unique_ptr<Child>> children;
  children.push_back(sender(options.listen[0], {"--threads", "2", "--batches", "5", "--events",
                                                "10", "--malformed", "3", "--process", "77"}));
  collectUntilDone(collector, children, 1);
  EXPECT_EQ(children[0]->exitCode(), 0);
  ASSERT_TRUE(collector.finish());

  const CollectorStats stats = collector.stats();
  ASSERT_EQ(stats.senders.count(77), 1u);
  const SenderCounters& s = stats.senders.at(77);
  EXPECT_EQ(s.duplicate, 3u);      // batch 0 of thread 1 sent again, three times
  EXPECT_EQ(s.out_of_order, 1u);   // batch 5 after batch 6
  EXPECT_EQ(s.missing_batches, 0u); // the late one filled the hole
  const SenderCounters total = stats.total();
  EXPECT_EQ(total.malformed, 6u);  // random bytes and truncated batches
  EXPECT_EQ(total.oversized, 3u);
  // Recorded: thread 1 has batches 0..4 and 6 (5 came late and was dropped), thread 2 has 0..4.
  const Recorded r = readRecording(options.out_dir, 10);
  EXPECT_EQ(r.threads.at({77, 1}).sequences, (std::vector<uint64_t>{0, 1, 2, 3, 4, 6}));
  EXPECT_EQ(r.threads.at({77, 2}).sequences, iota(5));
  EXPECT_TRUE(r.threads.at({77, 2}).events_match);
}

TEST(Collector, RefusesNonLoopbackTcpWithoutCurveKeys) {
  EXPECT_THROW(checkListenEndpoint("tcp://0.0.0.0:5555", false), std::runtime_error);
  EXPECT_THROW(checkListenEndpoint("tcp://*:5555", false), std::runtime_error);
  EXPECT_THROW(checkListenEndpoint("tcp://eth0:5555", false), std::runtime_error);
  EXPECT_THROW(checkListenEndpoint("pgm://eth0;239.192.1.1:5555", true), std::runtime_error);
  EXPECT_THROW(checkListenEndpoint("127.0.0.1:5555", false), std::runtime_error);
  EXPECT_NO_THROW(checkListenEndpoint("tcp://127.0.0.1:5555", false));
  EXPECT_NO_THROW(checkListenEndpoint("tcp://localhost:5555", false));
  EXPECT_NO_THROW(checkListenEndpoint("ipc:///tmp/x.sock", false));
  EXPECT_NO_THROW(checkListenEndpoint("tcp://0.0.0.0:5555", true));

  zmq::context_t context;
  CollectorOptions options;
  options.listen = {"tcp://0.0.0.0:*"};
  try {
    Collector collector(options, context);
    FAIL() << "bound a non-loopback address without CURVE";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--curve-secret-key"), std::string::npos) << e.what();
  }
}

std::string writeKeyFile(const std::string& path, const char* key, mode_t mode) {
  std::ofstream(path) << key << "\n";
  fs::permissions(path, static_cast<fs::perms>(mode));
  return path;
}

TEST(Collector, CurveAcceptsClientsWithTheServerKeyAndNoOthers) {
  TempDir tmp;
  char public_key[41], secret_key[41];
  ASSERT_EQ(zmq_curve_keypair(public_key, secret_key), 0);
  zmq::context_t context;
  CollectorOptions options;
  options.listen = {"tcp://0.0.0.0:*"};
  options.out_dir = tmp.sub("rec");

  // A key file others can read is refused, as is one that is not a key.
  options.curve_secret_key_file = writeKeyFile(tmp.sub("open.key"), secret_key, 0644);
  EXPECT_THROW(Collector(options, context), std::runtime_error);
  options.curve_secret_key_file = writeKeyFile(tmp.sub("bad.key"), "not a key", 0600);
  EXPECT_THROW(Collector(options, context), std::runtime_error);

  options.curve_secret_key_file = writeKeyFile(tmp.sub("server.key"), secret_key, 0600);
  // Off loopback, the clients' keys must be listed.
  EXPECT_THROW(Collector(options, context), std::runtime_error);
  char client_public[41], client_secret[41];
  ASSERT_EQ(zmq_curve_keypair(client_public, client_secret), 0);
  options.curve_clients =
      writeKeyFile(tmp.sub("clients"), (std::string("# the forwarders\n") + client_public).c_str(),
                   0600);
  Collector collector(options, context);
  EXPECT_EQ(collector.curvePublicKey(), public_key);
  const std::string bound = collector.boundEndpoints().at(0);
  const std::string port = bound.substr(bound.rfind(':'));
  const std::string endpoint = "tcp://127.0.0.1" + port;

  // Without the server key (plain ZeroMQ), with a wrong one, and with the right one but a client
  // key not listed (knowing the server's public key is no credential): nothing gets through (the
  // senders are killed at the end if they still wait).
  char other_public[41], other_secret[41];
  zmq_curve_keypair(other_public, other_secret);
  std::vector<std::unique_ptr<Child>> refused;
  refused.push_back(sender(endpoint, {"--process", "1", "--batches", "3"}));
  refused.push_back(
      sender(endpoint, {"--process", "2", "--batches", "3", "--curve-server-key", other_public}));
  refused.push_back(
      sender(endpoint, {"--process", "4", "--batches", "3", "--curve-server-key", public_key}));
  std::vector<std::unique_ptr<Child>> accepted;
  accepted.push_back(sender(endpoint, {"--process", "3", "--batches", "3", "--curve-server-key",
                                       public_key, "--curve-client-key", client_secret}));
  collectUntilDone(collector, accepted, 1);
  EXPECT_EQ(accepted[0]->exitCode(), 0);
  // Give the refused senders the same chance: poll while they try their handshakes.
  for (int i = 0; i < 10; ++i)
    collector.poll(20ms);
  ASSERT_TRUE(collector.finish());
  const CollectorStats stats = collector.stats();
  EXPECT_EQ(stats.senders.size(), 1u);
  EXPECT_EQ(stats.senders.count(3), 1u);
  EXPECT_EQ(stats.senders.at(3).events, 3u * 100u);
  EXPECT_GE(stats.refused_clients, 1u) << "the unlisted key was refused and counted";
}

// One process key that starts again and again under new pids (a forged stream) holds one pid
// entry, not one per pid: the collector's state stays as small as for one process.
TEST(Collector, ProcessStartsUnderEndlessNewPidsHoldOneEntry) {
  TempDir tmp;
  zmq::context_t context;
  CollectorOptions options;
  options.listen = {"tcp://127.0.0.1:*"};
  Collector collector(options, context);
  zmq::socket_t push(context, zmq::socket_type::push);
  push.set(zmq::sockopt::sndhwm, 0);
  push.connect(collector.boundEndpoints().at(0));
  constexpr uint32_t kStarts = 100000;
  for (uint32_t pid = 1; pid <= kStarts; ++pid) {
    wire::ProcessStart start;
    start.pid = pid;
    const auto bytes = wire::encodeItem({42, start});
    push.send(zmq::buffer(bytes.data(), bytes.size()), zmq::send_flags::none);
  }
  size_t handled = 0;
  for (int i = 0; i < 3000 && handled < kStarts; ++i)
    handled += collector.poll(20ms);
  ASSERT_EQ(handled, kStarts);
  EXPECT_EQ(collector.latestImage(kStarts), 42u);
  EXPECT_EQ(collector.latestImage(1), 0u) << "the pids it left are forgotten";
  EXPECT_LE(collector.stateBytes(), Collector::kProcessStateBytes + Collector::kPidEntryBytes);
}

// A sender may not write into a process another sender sends (a local process's key forged over
// ZeroMQ, or the other way round): those messages are refused and counted.
TEST(Collector, ASenderCannotWriteIntoAnotherSendersProcess) {
  TempDir tmp;
  zmq::context_t context;
  CollectorOptions options;
  options.listen = {"ipc://" + tmp.sub("c.sock"), "tcp://127.0.0.1:*"};
  options.out_dir = tmp.sub("rec");
  Collector collector(options, context);
  std::vector<std::unique_ptr<Child>> local;
  local.push_back(sender(options.listen[0], {"--process", "7", "--batches", "2"}));
  collectUntilDone(collector, local, 1);
  zmq::socket_t forger(context, zmq::socket_type::push);
  forger.connect(collector.boundEndpoints().at(1));
  const auto forged = wire::encodeEventBatch(7, 1, 2, testing::senderBatchEvents(1, 2, 100));
  forger.send(zmq::buffer(forged.data(), forged.size()), zmq::send_flags::none);
  for (int i = 0; i < 500 && collector.stats().foreign_messages == 0; ++i)
    collector.poll(20ms);
  ASSERT_TRUE(collector.finish());
  const CollectorStats stats = collector.stats();
  EXPECT_EQ(stats.foreign_messages, 1u);
  EXPECT_EQ(stats.senders.at(7).events, 2u * 100u);
}

TEST(Collector, AStalledSubscriberDoesNotStallRecordingAndSeesWhatItMissed) {
  TempDir tmp;
  zmq::context_t context;
  CollectorOptions options;
  options.listen = {"ipc://" + tmp.sub("c.sock")};
  options.out_dir = tmp.sub("rec");
  options.publish = "ipc://" + tmp.sub("pub.sock");
  options.publish_hwm = 10;
  Collector collector(options, context);
  fanout::Subscriber subscriber(context, options.publish, {}, 10);
  // Let the subscription reach the publisher before anything is sent (heartbeats until then).
  while (subscriber.received() == 0 && !subscriber.firstSequence()) {
    collector.poll(20ms);
    subscriber.receive(0ms);
  }

  constexpr uint64_t kBatches = 3000;
  std::vector<std::unique_ptr<Child>> children;
  children.push_back(sender(options.listen[0], {"--batches", std::to_string(kBatches),
                                                "--events", "200", "--process", "5"}));
  // The subscriber reads nothing while the sender runs.
  collectUntilDone(collector, children, 1);
  // Everything was recorded although the subscriber stalled.
  ASSERT_TRUE(collector.flushRecording());
  const Recorded r = readRecording(options.out_dir, 200);
  EXPECT_EQ(r.threads.at({5, 1}).sequences, iota(kBatches));

  // Now it reads what is queued for it. Items dropped at the end of the burst are revealed by the
  // next heartbeat, and everything by the end marker.
  while (subscriber.receive(100ms)) {
  }
  for (int i = 0; i < 10; ++i)
    collector.poll(20ms);
  ASSERT_TRUE(collector.finish());
  while (!subscriber.ended())
    subscriber.receive(100ms);
  const uint64_t published = collector.stats().published;
  EXPECT_EQ(published, kBatches + 5); // process start, module table, thread start/end, process end
  EXPECT_GT(subscriber.missed(), 0u);
  EXPECT_EQ(subscriber.received() + subscriber.missed(), published - *subscriber.firstSequence());
  EXPECT_EQ(subscriber.malformed(), 0u);
}

TEST(Collector, ASubscriberThatKeepsUpReceivesEveryItem) {
  TempDir tmp;
  zmq::context_t context;
  CollectorOptions options;
  options.listen = {"ipc://" + tmp.sub("c.sock")};
  options.publish = "ipc://" + tmp.sub("pub.sock");
  options.publish_hwm = 100000;
  Collector collector(options, context);
  fanout::Subscriber subscriber(context, options.publish, {}, 100000);
  while (!subscriber.firstSequence()) {
    collector.poll(20ms);
    subscriber.receive(0ms);
  }
  std::vector<std::unique_ptr<Child>> children;
  children.push_back(sender(options.listen[0], {"--batches", "200", "--process", "9"}));
  collectUntilDone(collector, children, 1);
  collector.finish();
  std::vector<uint64_t> sequences;
  while (!subscriber.ended())
    if (auto item = subscriber.receive(100ms)) {
      const wire::StreamItem decoded = wire::decodeItem(
          {static_cast<const std::byte*>(item->message.data()), item->message.size()});
      if (auto* batch = std::get_if<wire::EventBatch>(&decoded.body))
        sequences.push_back(batch->sequence);
    }
  EXPECT_EQ(subscriber.missed(), 0u);
  EXPECT_EQ(sequences, iota(200));
}

// A live subscriber in a process of its own that connects, takes one message (so its subscription
// is known to have reached the publisher: it writes a byte to `ready` then) and never reads again;
// its own ZeroMQ queue holds one message. Killed by the test (or when the test dies).
pid_t neverReadingSubscriber(const std::string& endpoint, int ready) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  zmq::context_t context;
  fanout::Subscriber subscriber(context, endpoint, {}, 1);
  while (!subscriber.firstSequence()) // a heartbeat, or an item
    subscriber.receive(100ms);
  (void)!::write(ready, "r", 1);
  for (;;)
    ::pause();
}

// A module table of about `bytes` bytes (10,000 functions with long names).
wire::Bytes largeModuleTable(uint64_t process, size_t bytes) {
  wire::ModuleTable table{"big", 0, {}};
  const size_t per_function = bytes / 10'000;
  for (uint32_t id = 1; id <= 10'000; ++id)
    table.functions.push_back({id, "_Z" + std::string(per_function / 2, 'm') + std::to_string(id),
                               std::string(per_function / 2, 'd') + std::to_string(id), "", 0});
  return wire::encodeItem({process, table});
}

// A subscriber that never reads, and 24 module tables of 40 MB: the items the subscribers' queues
// hold are bounded in bytes (here 64 MiB), not in messages (10,000, which held every table: 1.4 GB
// before), the items past the bound are not published but counted, and a subscriber that reads
// counts each of them as missed.
TEST(Collector, ASubscriberThatNeverReadsHoldsAtMostTheQueueBound) {
  TempDir tmp;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const std::string publish = "ipc://" + tmp.sub("pub.sock");
  const pid_t stalled = neverReadingSubscriber(publish, ready[1]);
  ASSERT_GT(stalled, 0);
  const int64_t before = shapetrace::testing::peakRssMib();
  {
    zmq::context_t context;
    CollectorOptions options;
    options.listen = {"tcp://127.0.0.1:*"};
    options.publish = publish;
    options.publish_max_queued_bytes = size_t{64} << 20;
    Collector collector(options, context);
    pollfd waiting{ready[0], POLLIN, 0};
    for (int i = 0; i < 1500 && ::poll(&waiting, 1, 0) == 0; ++i)
      collector.poll(20ms); // heartbeats until the stalled subscriber took one
    ASSERT_EQ(::poll(&waiting, 1, 0), 1) << "the subscriber never received anything";
    fanout::Subscriber reader(context, publish);
    for (int i = 0; i < 1500 && !reader.firstSequence(); ++i) {
      collector.poll(20ms);
      reader.receive(0ms);
    }
    ASSERT_TRUE(reader.firstSequence());

    zmq::socket_t push(context, zmq::socket_type::push);
    push.connect(collector.boundEndpoints().at(0));
    wire::ProcessStart start;
    start.pid = 42;
    const wire::Bytes start_bytes = wire::encodeItem({42, start});
    push.send(zmq::buffer(start_bytes.data(), start_bytes.size()), zmq::send_flags::none);
    const wire::Bytes table = largeModuleTable(42, 40'000'000);
    constexpr int kTables = 24;
    size_t handled = 0, most_queued = 0;
    for (int t = 0; t < kTables; ++t) {
      push.send(zmq::buffer(table.data(), table.size()), zmq::send_flags::none);
      // One at a time: the test's own queue towards the collector holds one table at most.
      for (int i = 0; i < 3000 && handled < size_t(t) + 2; ++i)
        handled += collector.poll(20ms);
      while (reader.receive(0ms)) {
      }
      EXPECT_LE(collector.publishQueuedBytes(), options.publish_max_queued_bytes);
      most_queued = std::max(most_queued, collector.publishQueuedBytes());
    }
    ASSERT_EQ(handled, size_t{kTables} + 1);
    EXPECT_GE(most_queued, table.size()) << "the stalled subscriber's queue held a table";
    ASSERT_TRUE(collector.finish());
    for (int i = 0; i < 100 && !reader.ended(); ++i)
      reader.receive(100ms);
    ASSERT_TRUE(reader.ended());
    const CollectorStats stats = collector.stats();
    EXPECT_GE(stats.published, size_t{kTables} + 1); // the start and the tables, numbered
    EXPECT_GT(stats.not_published, 0u);
    EXPECT_EQ(stats.not_published_bytes, stats.not_published * table.size());
    EXPECT_EQ(reader.missed(), stats.not_published);
    EXPECT_EQ(reader.received() + reader.missed(), stats.published - *reader.firstSequence());
  }
  // The test's own table and its copies in flight (the push socket's, the collector's received
  // one, the reader's) and the queues' 64 MiB: about 250 MB, where 24 tables held are 960 MB.
  if (shapetrace::testing::kPeakRssMeasuresTheCode) {
    EXPECT_LT(shapetrace::testing::peakRssMib() - before, 400);
  }
  ::kill(stalled, SIGKILL);
  ::waitpid(stalled, nullptr, 0);
}

// A 2 MiB tmpfs fills up during the recording: the error is reported, recording stops, the
// senders are not blocked, and everything written reads back intact.
TEST(Collector, DiskFullStopsRecordingCleanlyAndKeepsWhatWasWritten) {
  TempDir tmp;
  const std::string mount_point = tmp.sub("small");
  fs::create_directory(mount_point);
  if (::mount("tmpfs", mount_point.c_str(), "tmpfs", 0, "size=2m") != 0)
    GTEST_SKIP() << "cannot mount a 2 MiB tmpfs (needs root or CAP_SYS_ADMIN): "
                 << std::strerror(errno);
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{mount_point};

  zmq::context_t context;
  CollectorOptions options;
  options.listen = {"ipc://" + tmp.sub("c.sock")};
  options.out_dir = mount_point + "/rec";
  options.recording.segment_bytes = 512 << 10;
  Collector collector(options, context);
  constexpr uint64_t kBatches = 3000; // about 3000 * 1.3 KB: more than fits
  std::vector<std::unique_ptr<Child>> children;
  children.push_back(sender(options.listen[0], {"--threads", "2", "--batches",
                                                std::to_string(kBatches), "--events", "300",
                                                "--process", "4"}));
  collectUntilDone(collector, children, 1);
  EXPECT_EQ(children[0]->exitCode(), 0); // the sender was never blocked
  EXPECT_FALSE(collector.finish());

  const CollectorStats stats = collector.stats();
  EXPECT_NE(stats.recording_error.find("No space left on device"), std::string::npos)
      << stats.recording_error;
  EXPECT_EQ(stats.senders.at(4).events, 2 * kBatches * 300); // all received
  EXPECT_GT(stats.senders.at(4).unrecorded, 0u);
  const Recorded r = readRecording(options.out_dir, 300);
  EXPECT_TRUE(r.damage.empty()); // cut back to whole frames
  EXPECT_EQ(r.items, stats.recording.items_written);
  for (uint32_t thread : {1u, 2u}) {
    const RecordedThread& t = r.threads.at({4, thread});
    EXPECT_GT(t.sequences.size(), 10u);
    EXPECT_EQ(t.sequences, iota(t.sequences.size())); // a prefix, no holes
    EXPECT_TRUE(t.events_match);
  }
}

} // namespace
} // namespace shapetrace::collector

namespace shapetrace::collector {
namespace {

// A hostile or broken sender: thousands of one-event batches, each for a new thread and starting
// at a high sequence number, then more processes than the limit. The collector's state stays within
// the documented bound (CollectorLimits) and every refusal is counted.
TEST(Collector, ManyThreadsAndHighSequencesStayWithinTheStateBound) {
  TempDir tmp;
  zmq::context_t context;
  CollectorOptions options;
  options.listen = {"tcp://127.0.0.1:*"}; // ZeroMQ, as a forwarding collector sends
  options.limits.max_processes = 8;
  options.limits.max_threads = 2000;
  options.limits.max_threads_per_process = 1500;
  Collector collector(options, context);

  zmq::socket_t push(context, zmq::socket_type::push);
  push.set(zmq::sockopt::sndhwm, 0);
  push.connect(collector.boundEndpoints().at(0));
  uint64_t sent = 0;
  auto send = [&](const wire::Bytes& bytes) {
    push.send(zmq::buffer(bytes.data(), bytes.size()), zmq::send_flags::none);
    ++sent;
  };
  // Process 1: 3,000 threads (1,500 accepted), each batch at sequence 4096 then 2 and 9000: one
  // missing range, split by the late batch, then another.
  for (uint32_t t = 1; t <= 3000; ++t) {
    send(wire::encodeEventBatch(1, t, 4096, testing::senderBatchEvents(t, 0, 1)));
    send(wire::encodeEventBatch(1, t, 2, testing::senderBatchEvents(t, 0, 1)));
    send(wire::encodeEventBatch(1, t, 9000, testing::senderBatchEvents(t, 0, 1)));
  }
  // Processes 2..20: one batch each at a huge sequence (8 processes tracked, 500 more threads).
  for (uint64_t p = 2; p <= 20; ++p)
    for (uint32_t t = 1; t <= 100; ++t)
      send(wire::encodeEventBatch(p, t, uint64_t(1) << 40, testing::senderBatchEvents(t, 0, 1)));
  size_t handled = 0;
  while (handled < sent)
    handled += collector.poll(200ms);
  ASSERT_EQ(handled, sent);

  const CollectorStats stats = collector.stats();
  const SenderCounters& first = stats.senders.at(1);
  EXPECT_EQ(first.refused, 3 * 1500u);                 // threads past the per-process limit
  EXPECT_EQ(first.out_of_order, 1500u);                // sequence 2 arrived late, once per thread
  EXPECT_EQ(first.missing_batches, 1500u * (4096 - 1 + 9000 - 4097));
  EXPECT_EQ(stats.senders.size(), 8u);                 // process limit
  EXPECT_EQ(stats.refused_processes, 12u * 100);       // processes 9..20
  uint64_t refused = 0;
  for (const auto& [process, c] : stats.senders)
    refused += process == 1 ? 0 : c.refused;
  EXPECT_EQ(refused, 7u * 100 - 500);                  // past the total thread limit
  // The bound of CollectorLimits' comment, with these limits.
  const size_t bound =
      (options.limits.max_processes + Collector::kMaxEndedKept + Collector::kMaxPeers) *
          Collector::kProcessStateBytes +
      options.limits.max_threads *
          (Collector::kThreadStateBytes +
           options.limits.max_missing_ranges * Collector::kMissingRangeBytes);
  EXPECT_LE(collector.stateBytes(), bound);
  // What the sender made the collector hold: a few hundred bytes per thread, not one entry per
  // missing number (before: 4096 set nodes, ~200 KB, per thread).
  EXPECT_LE(collector.stateBytes(), 8 * Collector::kProcessStateBytes +
                                        2000 * (Collector::kThreadStateBytes +
                                                3 * Collector::kMissingRangeBytes));
}

} // namespace
} // namespace shapetrace::collector
