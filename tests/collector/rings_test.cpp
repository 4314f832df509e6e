// The rings a traced process shares with the collector (stream/channel/rings.h) and the collector's
// finish of a dead process's rings (collector/local_channels.h), against what a hostile process
// could write: the test crafts the arena as such a process would, with real shared memory and,
// for the finish, a real process that hands it over and dies.
#include "channel/control.h"
#include "channel/rings.h"
#include "local_channels.h"
#include "process.h"
#include "wire/codec.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace shapetrace {
namespace {

using testing::TempDir;

constexpr uint32_t kSlots = 8;
constexpr uint64_t kEvents = 16;

struct Arena {
  channel::RingsMemory memory;
  Arena() {
    std::string error;
    if (!channel::createRings(kSlots, kEvents, 0x1234, memory, error))
      throw std::runtime_error(error);
  }
  ~Arena() {
    munmap(memory.base, memory.bytes);
    close(memory.fd);
  }
  channel::RingsHeader& header() { return *channel::ringsHeader(memory.base); }
  channel::RingControl& control(uint32_t slot) {
    return *channel::ringControl(memory.base, kEvents, slot);
  }
  // Marks `slot` used and writes `events` so that they sit between `tail` and tail + size.
  void fill(uint32_t slot, uint64_t tail, const std::vector<Event>& events) {
    header().slot_state[slot].store(channel::kSlotUsed);
    auto* slots = static_cast<Event*>(channel::ringEvents(memory.base, kEvents, slot));
    for (size_t i = 0; i < events.size(); ++i)
      slots[(tail + i) % kEvents] = events[i];
    control(slot).tail.store(tail);
    control(slot).head.store(tail + events.size());
  }
};

std::vector<Event> eventsOf(const channel::RingRemains& ring) {
  std::vector<Event> events(ring.events.size() / sizeof(Event));
  std::memcpy(events.data(), ring.events.data(), ring.events.size());
  return events;
}

TEST(Rings, AHeaderThatDoesNotFitItsMemoryIsRefusedWithTheReason) {
  Arena arena;
  std::string error;
  EXPECT_TRUE(channel::RingsReader::open(arena.memory.base, arena.memory.bytes, error)) << error;
  EXPECT_FALSE(channel::RingsReader::open(arena.memory.base, arena.memory.bytes - 16, error));
  EXPECT_EQ(error, "its rings' header (8 rings of 16 events) does not match their 38896 bytes");
  arena.header().ring_events = 24; // not a power of two
  EXPECT_FALSE(channel::RingsReader::open(arena.memory.base, arena.memory.bytes, error));
  EXPECT_EQ(error, "its rings' header (8 rings of 24 events) does not match their 38912 bytes");
  arena.header().ring_events = kEvents;
  arena.header().slot_count = channel::kMaxRingSlots + 1;
  EXPECT_FALSE(channel::RingsReader::open(arena.memory.base, arena.memory.bytes, error));
  arena.header().slot_count = 0;
  EXPECT_FALSE(channel::RingsReader::open(arena.memory.base, arena.memory.bytes, error));
  arena.header().slot_count = kSlots;
  arena.header().magic = 0;
  EXPECT_FALSE(channel::RingsReader::open(arena.memory.base, arena.memory.bytes, error));
  EXPECT_EQ(error, "its rings' memory has no valid header");
  EXPECT_FALSE(channel::RingsReader::open(arena.memory.base, 100, error));
  EXPECT_EQ(error, "its rings' memory has 100 bytes");
}

// Only used rings not ended yet are read, each within its slot (a run across the ring's end comes
// out in order); indices that say more than a ring holds leave it out, counted.
TEST(Rings, EveryRingIsReadWithinItsSlotAndLyingIndicesAreCounted) {
  Arena arena;
  const std::vector<Event> wrapped{{1, 1, EventKind::Enter}, {2, 2, EventKind::Enter},
                                   {3, 2, EventKind::Exit}, {4, 1, EventKind::Exit}};
  arena.fill(0, kEvents - 2, wrapped);
  arena.control(0).tid.store(77);
  std::memcpy(arena.control(0).name, "a name too long to fit", 16);
  arena.fill(1, 0, {});
  arena.control(1).head.store(kEvents + 1); // more than it holds
  arena.fill(2, 10, {});
  arena.control(2).head.store(5); // head behind tail
  arena.fill(3, 0, wrapped);
  arena.header().slot_state[3].store(channel::kSlotFree); // free: not read
  arena.fill(4, 0, wrapped);
  arena.control(4).drain_flags.store(channel::kThreadEndSent); // ended: nothing to finish
  arena.fill(5, 0, wrapped);
  arena.header().slot_state[5].store(77); // not a state at all

  std::string error;
  auto reader = channel::RingsReader::open(arena.memory.base, arena.memory.bytes, error);
  ASSERT_TRUE(reader) << error;
  std::vector<channel::RingRemains> rings;
  const uint64_t broken =
      reader->forEachRing([&](channel::RingRemains& ring) { rings.push_back(ring); }, 100);
  EXPECT_EQ(broken, 2u);
  ASSERT_EQ(rings.size(), 1u);
  EXPECT_EQ(rings[0].slot, 0u);
  EXPECT_EQ(rings[0].tid, 77u);
  EXPECT_EQ(std::string(rings[0].name), "a name too long"); // 15 bytes and the NUL we add
  EXPECT_EQ(eventsOf(rings[0]), wrapped);
  // Past the caller's bound, a ring is left out too.
  rings.clear();
  EXPECT_EQ(reader->forEachRing([&](channel::RingRemains& ring) { rings.push_back(ring); }, 3), 3u);
  EXPECT_TRUE(rings.empty());
}

// A real process that writes its arena with `write`, hands its channel and rings over to a
// collector's local channels and dies without a word (no close, no end): what the collector then
// sent on its behalf and told of it.
struct DeadProcess {
  std::vector<wire::StreamItem> items;
  std::vector<uint32_t> vanished;
  collector::LocalChannels::RingsFinished finished;
  collector::LocalChannelCounters counters;
};

DeadProcess runDeadProcess(const std::function<void(Arena&)>& write) {
  TempDir tmp;
  const std::string endpoint = "ipc://" + tmp.sub("c.sock");
  collector::LocalChannels channels({endpoint}, 4);
  const pid_t child = fork();
  if (child == 0) {
    Arena arena;
    arena.header().clock_ref_ticks.store(1000);
    arena.header().clock_ref_ns.store(5000);
    arena.header().clock_ns_per_tick_q32.store(int64_t{2} << 32); // 2 ns a tick
    write(arena);
    int fd = -1;
    std::string error;
    channel::Memory memory;
    if (channel::connectControl(tmp.sub("c.sock"), 0, fd, error) !=
            channel::ConnectResult::Connected ||
        !channel::createAndHandOver(fd, channel::kMinDataBytes, arena.memory.fd,
                                    arena.memory.bytes, 5000, memory, error))
      _exit(2);
    _exit(0);
  }
  DeadProcess dead;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (dead.vanished.empty() && std::chrono::steady_clock::now() < deadline) {
    channels.service(
        [&](std::span<const std::byte> message, bool, uint32_t) {
          dead.items.push_back(wire::decodeItem(message));
        },
        [&](uint32_t pid, std::optional<int>,
            const collector::LocalChannels::RingsFinished& finished) {
          dead.vanished.push_back(pid);
          dead.finished = finished;
        },
        100000);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(dead.vanished, std::vector<uint32_t>{uint32_t(child)});
  dead.counters = channels.counters();
  return dead;
}

// One thread's ring whose drain sent 3 batches (10 events) before the process died, with 2
// events after them, across the ring's end.
void writeRingOfThread42(Arena& arena) {
  arena.fill(0, kEvents - 1, {{1000, 1, EventKind::Enter}, {1001, 1, EventKind::Exit}});
  arena.control(0).tid.store(42);
  arena.control(0).drain_flags.store(channel::kThreadStartSent);
  arena.control(0).next_sequence.store(3);
  arena.control(0).events_sent.store(10);
}

// What its rings held after its drain's last item arrives as that drain would have sent it (the
// batch after the last one sent, in nanoseconds by the arena's clock, and the thread's end with
// its totals); a ring with lying indices is left out and counted, and one full of markers of no
// meaning ends like any. With a ring left out, the recording is not complete.
TEST(Rings, ADeadProcesssRingsAreFinishedAndItsLiesCostNothing) {
  const DeadProcess dead = runDeadProcess([](Arena& arena) {
    writeRingOfThread42(arena);
    arena.fill(1, 0, {});
    arena.control(1).head.store(1u << 30);
    arena.fill(2, 0,
               {{0, 7, EventKind(0x9999)},
                {0, 1000000, EventKind(0x105)},    // an abandon marker of a million frames
                {0, UINT32_MAX, EventKind(0x100)}, // lost events
                {0, 3, EventKind(0x101)}});        // an annotation marker, its value missing
    arena.control(2).tid.store(43);
  });
  EXPECT_EQ(dead.counters.rings_finished, 2u);
  EXPECT_EQ(dead.counters.rings_broken, 1u);
  EXPECT_FALSE(dead.finished.complete);

  std::vector<wire::StreamItem> of42;
  for (const auto& item : dead.items) {
    EXPECT_EQ(item.process, 0x1234u);
    if (const auto* batch = std::get_if<wire::EventBatch>(&item.body); batch && batch->thread == 42)
      of42.push_back(item);
    if (const auto* end = std::get_if<wire::ThreadEnd>(&item.body); end && end->thread == 42)
      of42.push_back(item);
  }
  ASSERT_EQ(of42.size(), 2u);
  const auto& batch = std::get<wire::EventBatch>(of42[0].body);
  EXPECT_EQ(batch.sequence, 3u);
  EXPECT_EQ(batch.events, (std::vector<Event>{{5000, 1, EventKind::Enter},
                                              {5002, 1, EventKind::Exit}}));
  const auto& end = std::get<wire::ThreadEnd>(of42[1].body);
  EXPECT_EQ(end.events_recorded, 12u);
  EXPECT_EQ(end.events_dropped, 0u);
  EXPECT_EQ(end.batches, 4u);
  // The ring of meaningless markers: its lost events announced, and its thread ended.
  bool gap = false, ended = false;
  for (const auto& item : dead.items) {
    if (const auto* g = std::get_if<wire::Gap>(&item.body); g && g->thread == 43)
      gap = g->dropped == UINT32_MAX;
    if (const auto* e = std::get_if<wire::ThreadEnd>(&item.body); e && e->thread == 43)
      ended = true;
  }
  EXPECT_TRUE(gap);
  EXPECT_TRUE(ended);
}

// Every ring finished and no thread with a ring of its own: complete, at its last event's time.
TEST(Rings, ADeadProcessWhoseRingsAllFinishIsComplete) {
  const DeadProcess dead = runDeadProcess(writeRingOfThread42);
  EXPECT_EQ(dead.counters.rings_finished, 1u);
  EXPECT_TRUE(dead.finished.complete);
  EXPECT_EQ(dead.finished.last_event_ns, 5002u);
}

// The arena says a thread had a ring of its own (lost with the process): not complete, however
// well its shared rings finish.
TEST(Rings, APrivateRingLeavesADeadProcessIncomplete) {
  const DeadProcess dead = runDeadProcess([](Arena& arena) {
    writeRingOfThread42(arena);
    arena.header().private_rings.store(1);
  });
  EXPECT_EQ(dead.counters.rings_finished, 1u);
  EXPECT_FALSE(dead.finished.complete);
  EXPECT_EQ(dead.finished.last_event_ns, 5002u);
}

} // namespace
} // namespace shapetrace
