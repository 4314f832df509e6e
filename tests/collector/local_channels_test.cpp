// The local channel (stream/channel) and the collector's side of it (collector/local_channels.h)
// against well-behaved and hostile processes: the test plays the process, with the real control
// socket and real shared memory, and crafts what a hostile one would send.
#include "support/channel_producer.h"
#include "local_channels.h"
#include "process.h"
#include "wire/codec.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace shapetrace {
namespace {

using testing::TempDir;

// What the collector's side handed on.
struct Received {
  std::vector<std::vector<std::byte>> messages;
  size_t oversized = 0;
  std::vector<uint32_t> vanished;
};

size_t serve(collector::LocalChannels& channels, Received& received) {
  return channels.service(
      [&](std::span<const std::byte> message, bool oversized, uint32_t) {
        if (oversized)
          ++received.oversized;
        else
          received.messages.emplace_back(message.begin(), message.end());
      },
      [&](uint32_t pid, std::optional<int>, const collector::LocalChannels::RingsFinished&) {
        received.vanished.push_back(pid);
      }, 1000000);
}

// A process's side (tests/support/channel_producer.h), made while the collector's side is served
// on another thread, as the collector's own loop would.
std::unique_ptr<testing::ChannelProducer> connect(const std::string& endpoint, uint64_t data_bytes,
                                                  collector::LocalChannels& channels,
                                                  Received& received) {
  std::atomic<bool> done{false};
  std::thread collector([&] {
    while (!done.load()) {
      serve(channels, received);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::unique_ptr<testing::ChannelProducer> producer;
  try {
    producer = std::make_unique<testing::ChannelProducer>(endpoint, data_bytes);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
  done = true;
  collector.join();
  return producer;
}

std::vector<std::byte> bytesOf(size_t size, unsigned seed) {
  std::vector<std::byte> bytes(size);
  for (size_t i = 0; i < size; ++i)
    bytes[i] = std::byte((i * 131 + seed) & 0xff);
  return bytes;
}

TEST(LocalChannels, MessagesOfEverySizeArriveExactlyAndInOrder) {
  TempDir tmp;
  const std::string endpoint = "ipc://" + tmp.sub("c.sock");
  collector::LocalChannels channels({endpoint}, 16);
  Received received;
  auto producer = connect(endpoint, channel::kMinDataBytes, channels, received);
  ASSERT_TRUE(producer);
  channel::Writer& writer = producer->writer();
  // Small ones, one exactly a record's limit, and two that must be fragmented (one many times
  // the ring's size): the producer writes as the ring empties, as the runtime's sink does.
  const size_t record = writer.maxRecordBytes();
  const std::vector<size_t> sizes = {0, 1, 8, 13, record, record + 1, 5 << 20, 24};
  std::vector<std::vector<std::byte>> sent;
  for (size_t i = 0; i < sizes.size(); ++i) {
    sent.push_back(bytesOf(sizes[i], unsigned(i)));
    size_t offset = 0;
    if (sizes[i] <= record) {
      while (!writer.tryWrite(sent.back()))
        serve(channels, received);
    } else {
      while ((offset = writer.writeFragments(sent.back(), offset)) < sizes[i])
        serve(channels, received);
    }
  }
  while (serve(channels, received) > 0) {
  }
  EXPECT_EQ(received.messages, sent);
  EXPECT_EQ(received.oversized, 0u);
  EXPECT_EQ(channels.counters().accepted, 1u);
}

TEST(LocalChannels, AMessageOverTheFormatsLimitIsSkippedAndTheNextArrives) {
  TempDir tmp;
  const std::string endpoint = "ipc://" + tmp.sub("c.sock");
  collector::LocalChannels channels({endpoint}, 16);
  Received received;
  auto producer = connect(endpoint, uint64_t{1} << 20, channels, received);
  ASSERT_TRUE(producer);
  channel::Writer& writer = producer->writer();
  const std::vector<std::byte> huge(wire::kMaxMessageBytes + 8);
  for (size_t offset = 0; (offset = writer.writeFragments(huge, offset)) < huge.size();)
    serve(channels, received);
  const auto next = bytesOf(100, 7);
  while (!writer.tryWrite(next))
    serve(channels, received);
  while (serve(channels, received) > 0) {
  }
  EXPECT_EQ(received.oversized, 1u);
  ASSERT_EQ(received.messages.size(), 1u);
  EXPECT_EQ(received.messages[0], next);
}

// A process that writes a record claiming more bytes than the ring holds: the channel is closed
// and counted, nothing past it is read, and the collector goes on serving another process.
TEST(LocalChannels, ARecordThatOverrunsTheRingClosesItsChannelOnly) {
  TempDir tmp;
  const std::string endpoint = "ipc://" + tmp.sub("c.sock");
  collector::LocalChannels channels({endpoint}, 16);
  Received received;
  auto hostile = connect(endpoint, channel::kMinDataBytes, channels, received);
  ASSERT_TRUE(hostile);
  auto* header = static_cast<channel::Header*>(hostile->memory().base);
  auto* ring = static_cast<std::byte*>(hostile->memory().base) + channel::kHeaderBytes;
  const channel::RecordHeader lie{uint32_t(channel::kMinDataBytes), 0};
  std::memcpy(ring, &lie, sizeof lie);
  header->head.store(64, std::memory_order_release);
  serve(channels, received);
  EXPECT_EQ(channels.counters().broken, 1u);
  EXPECT_EQ(channels.open(), 0u);
  header->head.store(~uint64_t{0} - 7, std::memory_order_release); // nobody reads it any more
  serve(channels, received);
  EXPECT_EQ(channels.counters().broken, 1u);

  // Another process (a child: one process has one channel at a time) is served as ever.
  const pid_t child = fork();
  if (child == 0) {
    testing::ChannelProducer honest(endpoint, channel::kMinDataBytes);
    honest.send(bytesOf(40, 1));
    _exit(0); // the producer's destructor waited until the message was read
  }
  for (int i = 0; i < 5000 && received.messages.empty(); ++i) {
    serve(channels, received);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_EQ(status, 0);
  ASSERT_EQ(received.messages.size(), 1u);
  EXPECT_EQ(received.messages[0], bytesOf(40, 1));
  EXPECT_EQ(channels.counters().broken, 1u);
}

// Hellos that must be refused: memory that can shrink under the collector (reading it would fault),
// a header whose size disagrees with its memory, no descriptor at all.
TEST(LocalChannels, ChannelMemoryThatCouldFaultOrLiesIsRefused) {
  TempDir tmp;
  const std::string endpoint = "ipc://" + tmp.sub("c.sock");
  collector::LocalChannels channels({endpoint}, 16);
  Received received;
  auto hello = [&](int memfd) {
    int fd = -1;
    std::string error;
    EXPECT_EQ(channel::connectControl(tmp.sub("c.sock"), 0, fd, error),
              channel::ConnectResult::Connected);
    channel::Hello h;
    h.pid = uint32_t(getpid());
    h.data_bytes = channel::kMinDataBytes;
    EXPECT_TRUE(channel::sendHello(fd, h, memfd, -1, error)) << error;
    serve(channels, received);
    channel::Reply reply;
    EXPECT_EQ(recv(fd, &reply, sizeof reply, 0), ssize_t(sizeof reply));
    close(fd);
    serve(channels, received);
    return std::string(reply.accepted ? "accepted" : reply.reason);
  };
  const size_t bytes = channel::kHeaderBytes + channel::kMinDataBytes;
  const int unsealed = memfd_create("unsealed", MFD_CLOEXEC);
  ASSERT_EQ(ftruncate(unsealed, off_t(bytes)), 0);
  EXPECT_EQ(hello(unsealed), "its channel memory is not a memfd sealed against shrinking");
  close(unsealed);

  const int lying = memfd_create("lying", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_EQ(ftruncate(lying, off_t(bytes)), 0);
  ASSERT_EQ(fcntl(lying, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, lying, 0);
  channel::Writer::initialise(base, channel::kMinDataBytes * 2, 1);
  EXPECT_EQ(hello(lying), "channel ring size 131072 does not match its memory (69632 bytes)");
  munmap(base, bytes);
  close(lying);

  EXPECT_EQ(hello(-1), "sent no valid hello with channel memory");
  EXPECT_EQ(channels.counters().refused, 3u);
  EXPECT_EQ(channels.counters().accepted, 0u);
  EXPECT_EQ(channels.open(), 0u);
}

TEST(LocalChannels, PastItsLimitAProcessIsRefusedWithTheReason) {
  TempDir tmp;
  const std::string endpoint = "ipc://" + tmp.sub("c.sock");
  collector::LocalChannels channels({endpoint}, 1);
  Received received;
  auto first = connect(endpoint, channel::kMinDataBytes, channels, received);
  ASSERT_TRUE(first);
  int fd = -1;
  std::string error;
  ASSERT_EQ(channel::connectControl(tmp.sub("c.sock"), 0, fd, error),
            channel::ConnectResult::Connected);
  std::thread collector([&] {
    for (int i = 0; i < 20; ++i) {
      serve(channels, received);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  channel::Memory memory;
  EXPECT_FALSE(channel::createAndHandOver(fd, channel::kMinDataBytes, -1, 0, 5000, memory, error));
  collector.join();
  close(fd);
  EXPECT_EQ(error, "the collector refused this process: too many processes connected");
  EXPECT_EQ(channels.counters().refused, 1u);
}

// The collector's heartbeat and departure are what a process goes by.
TEST(LocalChannels, AProcessSeesTheCollectorBeatAndLeave) {
  TempDir tmp;
  const std::string endpoint = "ipc://" + tmp.sub("c.sock");
  auto channels = std::make_unique<collector::LocalChannels>(std::vector<std::string>{endpoint}, 4);
  Received received;
  auto producer = connect(endpoint, channel::kMinDataBytes, *channels, received);
  ASSERT_TRUE(producer);
  channel::Writer& writer = producer->writer();
  EXPECT_TRUE(writer.consumerAlive(channel::monotonicNs()));
  EXPECT_FALSE(writer.consumerAlive(channel::monotonicNs() +
                                    uint64_t{channel::kConsumerSilentMs + 1} * 1000000))
      << "a collector silent for longer is gone";
  channels.reset();
  EXPECT_FALSE(writer.consumerAlive(channel::monotonicNs()));
  std::string error;
  int fd = -1;
  EXPECT_EQ(channel::connectControl(tmp.sub("c.sock"), 0, fd, error),
            channel::ConnectResult::NoCollector)
      << "its socket went with it";
}

} // namespace
} // namespace shapetrace
