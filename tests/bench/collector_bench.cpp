// The collector's recording rate against its two limits, measured in one run on this machine:
//
//   1. raw sequential disk write: 4 MiB write(2)s into a file in DIR, as many bytes as one
//      recording of the collector run, fdatasync at the end
//   2. raw ZeroMQ ipc: one process PUSHes batch-sized messages, this one PULLs them
//   3. the collector (the real shapetrace::collector::Collector, recording into DIR with its
//      default options) fed by 1 and by 4 producer processes that encode real event batches
//      (4096 events, depth-first enter/exit pairs 20-200 ns apart, 300 functions) and write them
//      into their local channels (shared memory), as runtimes do;
//      and once more from 1 producer without recording, the collector's own ceiling
//
// Every figure is bytes and events per second of wall time from starting the producer(s) to the end,
// the recording closed (fdatasync) included, as in (1). Zero loss is checked, not assumed: the
// run fails unless every event sent was received and every message recorded.
//
//   collector_bench [--dir DIR] [--events-per-producer N] [--repetitions R]
//
// Producers are this binary re-executed with --produce (a fresh process, as a runtime would be).
#include "collector.h"
#include "support/channel_producer.h"
#include "wire/codec.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <random>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>
#include <zmq.hpp>

namespace {

using namespace shapetrace;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr uint32_t kBatchEvents = 4096;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// A depth-first call pattern like a real trace's (the same shape as wire_encoding_bench's).
std::vector<Event> makeEvents(uint64_t seed, uint64_t start_ns) {
  std::mt19937_64 random(seed);
  std::vector<Event> events;
  std::vector<uint32_t> stack;
  uint64_t t = start_ns;
  while (events.size() < kBatchEvents) {
    t += 20 + random() % 181;
    const bool enter = stack.empty() || (stack.size() < 12 && random() % 2 == 0);
    if (enter && events.size() + stack.size() + 1 < kBatchEvents) {
      stack.push_back(static_cast<uint32_t>(random() % 300));
      events.push_back({t, stack.back(), EventKind::Enter});
    } else if (!stack.empty()) {
      events.push_back({t, stack.back(), EventKind::Exit});
      stack.pop_back();
    } else {
      break;
    }
  }
  while (events.size() < kBatchEvents) { // pad with leaf calls
    t += 50;
    events.push_back({t, 1, events.size() % 2 ? EventKind::Exit : EventKind::Enter});
  }
  return events;
}

// --produce: sends `batches` encoded batches of one thread, then a ProcessEnd.
// Over the local channel, as a runtime sends (lossless: it waits for room).
int produce(const std::string& endpoint, uint64_t process, uint64_t batches) {
  testing::ChannelProducer producer(endpoint, uint64_t{8} << 20);
  auto send = [&](const wire::Bytes& bytes) { producer.send(bytes); };
  wire::ProcessStart start;
  start.pid = static_cast<uint32_t>(::getpid());
  start.executable = "collector_bench producer";
  send(wire::encodeItem({process, start}));
  std::vector<Event> events = makeEvents(process, 1000);
  uint64_t sent = 0;
  for (uint64_t s = 0; s < batches; ++s) {
    // Shift the same pattern forward in time: each batch is encoded afresh, as a runtime does.
    const uint64_t shift = events.back().timestamp - events.front().timestamp + 100;
    send(wire::encodeEventBatch(process, 1, s, events));
    for (Event& e : events)
      e.timestamp += shift;
    sent += events.size();
  }
  send(wire::encodeItem({process, wire::ProcessEnd{0, sent, 0, 0, wire::EndReason::Exit, ""}}));
  return 0;
}

pid_t spawnSelf(const std::vector<std::string>& args) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    static std::string self = fs::read_symlink("/proc/self/exe");
    argv.push_back(self.data());
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::_Exit(127);
  }
  return pid;
}

void waitAll(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "collector_bench: a producer failed (status %d)\n", status);
      std::exit(1);
    }
  }
}

struct Rate {
  double mb_per_s = 0, events_per_s = 0, messages_per_s = 0;
};

Rate diskWrite(const std::string& dir, uint64_t bytes) {
  const std::string path = dir + "/disk-write-test";
  std::vector<char> chunk(4 << 20, 'x');
  const auto t0 = Clock::now();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  for (uint64_t done = 0; done < bytes; done += chunk.size())
    if (::write(fd, chunk.data(), chunk.size()) != static_cast<ssize_t>(chunk.size())) {
      std::perror("collector_bench: disk write");
      std::exit(1);
    }
  ::fdatasync(fd);
  ::close(fd);
  const double s = seconds(Clock::now() - t0);
  fs::remove(path);
  return {static_cast<double>(bytes) / s / 1e6, 0, 0};
}

// Raw PUSH->PULL over ipc with messages as large as an encoded batch.
Rate zmqIpc(const std::string& dir, size_t message_bytes, uint64_t messages) {
  const std::string endpoint = "ipc://" + dir + "/raw.sock";
  zmq::context_t context(1);
  zmq::socket_t pull(context, zmq::socket_type::pull);
  pull.set(zmq::sockopt::rcvhwm, 10000);
  pull.bind(endpoint);
  // The clock starts when the producer is started (its start-up counts against both).
  const auto t0 = Clock::now();
  const pid_t pid = spawnSelf({"--raw-push", endpoint, std::to_string(message_bytes),
                               std::to_string(messages)});
  zmq::message_t message;
  uint64_t bytes = 0;
  for (uint64_t i = 0; i < messages; ++i) {
    (void)pull.recv(message);
    bytes += message.size();
  }
  const double s = seconds(Clock::now() - t0);
  waitAll({pid});
  return {static_cast<double>(bytes) / s / 1e6, 0, static_cast<double>(messages) / s};
}

int rawPush(const std::string& endpoint, size_t message_bytes, uint64_t messages) {
  zmq::context_t context(1);
  zmq::socket_t push(context, zmq::socket_type::push);
  push.set(zmq::sockopt::sndhwm, 1000);
  push.set(zmq::sockopt::linger, -1);
  push.connect(endpoint);
  std::vector<std::byte> payload(message_bytes, std::byte{0x5a});
  for (uint64_t i = 0; i < messages; ++i)
    push.send(zmq::buffer(payload.data(), payload.size()), zmq::send_flags::none);
  return 0;
}

// `record` false: the collector validates and counts but does not record (its own ceiling).
Rate collectorRate(const std::string& dir, int producers, uint64_t batches_per_producer,
                   bool record = true) {
  const std::string out = dir + "/recording-" + std::to_string(producers);
  fs::remove_all(out);
  zmq::context_t context(1);
  collector::CollectorOptions options;
  options.listen = {"ipc://" + dir + "/collector.sock"};
  if (record)
    options.out_dir = out;
  collector::Collector collector(options, context);
  const auto t0 = Clock::now();
  std::vector<pid_t> pids;
  for (int p = 0; p < producers; ++p)
    pids.push_back(spawnSelf({"--produce", options.listen[0], std::to_string(1000 + p),
                              std::to_string(batches_per_producer)}));
  auto ended = [&] {
    const auto s = collector.stats();
    return s.senders.size() == static_cast<size_t>(producers) &&
           std::all_of(s.senders.begin(), s.senders.end(),
                       [](const auto& kv) { return kv.second.ended; });
  };
  while (!ended())
    collector.poll(std::chrono::milliseconds(10));
  if (!collector.finish()) {
    std::fprintf(stderr, "collector_bench: recording failed: %s\n",
                 collector.stats().recording_error.c_str());
    std::exit(1);
  }
  const double s = seconds(Clock::now() - t0);
  waitAll(pids);
  const auto stats = collector.stats();
  const auto total = stats.total();
  const uint64_t expected_events = producers * batches_per_producer * kBatchEvents;
  const uint64_t expected_messages = producers * (batches_per_producer + 2);
  if (total.events != expected_events || total.messages != expected_messages ||
      (record && stats.recording.items_written != expected_messages) ||
      total.missing_batches != 0) {
    std::fprintf(stderr,
                 "collector_bench: LOSS: %llu of %llu events, %llu of %llu messages recorded\n",
                 (unsigned long long)total.events, (unsigned long long)expected_events,
                 (unsigned long long)stats.recording.items_written,
                 (unsigned long long)expected_messages);
    std::exit(1);
  }
  fs::remove_all(out);
  return {static_cast<double>(total.bytes) / s / 1e6,
          static_cast<double>(total.events) / s, static_cast<double>(total.messages) / s};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 4 && args[0] == "--produce")
    return produce(args[1], std::stoull(args[2]), std::stoull(args[3]));
  if (args.size() == 4 && args[0] == "--raw-push")
    return rawPush(args[1], std::stoull(args[2]), std::stoull(args[3]));

  std::string dir = fs::temp_directory_path() / "shapetrace-collector-bench";
  uint64_t events_per_producer = 200'000'000;
  int repetitions = 3;
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    if (args[i] == "--dir")
      dir = args[i + 1];
    else if (args[i] == "--events-per-producer")
      events_per_producer = std::stoull(args[i + 1]);
    else if (args[i] == "--repetitions")
      repetitions = std::stoi(args[i + 1]);
    else {
      std::fprintf(stderr, "usage: collector_bench [--dir DIR] [--events-per-producer N] "
                           "[--repetitions R]\n");
      return 2;
    }
  }
  fs::create_directories(dir);
  const uint64_t batches = std::max<uint64_t>(1, events_per_producer / kBatchEvents);
  const size_t batch_bytes = wire::encodeEventBatch(1, 1, 0, makeEvents(1, 1000)).size();
  const double bytes_per_event = static_cast<double>(batch_bytes) / kBatchEvents;
  std::printf("batch: %u events, %zu bytes (%.2f bytes/event); %llu batches per producer; "
              "median of %d runs; dir %s\n",
              kBatchEvents, batch_bytes, bytes_per_event, (unsigned long long)batches,
              repetitions, dir.c_str());

  std::vector<double> disk, zmq_mb, zmq_msgs, c1_mb, c1_ev, c4_mb, c4_ev, c0_mb, c0_ev;
  for (int r = 0; r < repetitions; ++r) {
    // As many bytes as the collector records in one run, so that both meet the same page cache.
    disk.push_back(diskWrite(dir, batches * batch_bytes).mb_per_s);
    const Rate raw = zmqIpc(dir, batch_bytes, batches);
    zmq_mb.push_back(raw.mb_per_s);
    zmq_msgs.push_back(raw.messages_per_s);
    const Rate one = collectorRate(dir, 1, batches);
    c1_mb.push_back(one.mb_per_s);
    c1_ev.push_back(one.events_per_s);
    const Rate four = collectorRate(dir, 4, batches / 4);
    c4_mb.push_back(four.mb_per_s);
    c4_ev.push_back(four.events_per_s);
    const Rate unrecorded = collectorRate(dir, 1, batches, false);
    c0_mb.push_back(unrecorded.mb_per_s);
    c0_ev.push_back(unrecorded.events_per_s);
  }
  const double limit = std::min(median(disk), median(zmq_mb));
  std::printf("| measurement | MB/s | events/s | of min(disk, ZeroMQ) |\n|---|---:|---:|---:|\n");
  std::printf("| raw sequential disk write (4 MiB writes + fdatasync, same size) | %.0f | %.1f M "
              "(at %.2f B/event) | |\n",
              median(disk), median(disk) * 1e6 / bytes_per_event / 1e6, bytes_per_event);
  std::printf("| raw ZeroMQ ipc PUSH->PULL, %zu-byte messages | %.0f | %.1f M | |\n", batch_bytes,
              median(zmq_mb), median(zmq_msgs) * kBatchEvents / 1e6);
  std::printf("| collector, 1 producer | %.0f | %.1f M | %.0f%% |\n", median(c1_mb),
              median(c1_ev) / 1e6, 100 * median(c1_mb) / limit);
  std::printf("| collector, 4 producers | %.0f | %.1f M | %.0f%% |\n", median(c4_mb),
              median(c4_ev) / 1e6, 100 * median(c4_mb) / limit);
  std::printf("| collector, 1 producer, not recording (validation and counting only) | %.0f | "
              "%.1f M | |\n",
              median(c0_mb), median(c0_ev) / 1e6);
  std::printf("zero loss: every event of every run was received and every message recorded\n");
  fs::remove_all(dir);
  return 0;
}
