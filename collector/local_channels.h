// The collector's side of the local channel (stream/channel/channel.h): listens on the control
// sockets of its ipc:// endpoints, maps each traced process's channel, reads the messages it
// wrote, and notices when a process is gone.
//
// A process ends its channel by closing it (its runtime's last act), by exec (told in the header,
// then the socket hangs up), or by dying: the socket hangs up while nothing said so. In every case
// everything the process wrote before is read first. A process that died also has what its
// threads' rings (channel/rings.h) still held finished here, by the drain's own code, so that the
// recording holds every event to its last one. A hang-up while the process lives (the program
// closed the socket under its runtime) changes nothing: the channel is read on until the process
// is gone. A process that dies unannounced is reported to the caller with its wait status when
// the kernel still has it (a zombie's, /proc/PID/stat), so that `collect` records how it ended
// even though it is not its parent.
//
// Trust: only the collector's own user (or anyone, for a collector running as root) is accepted
// (SO_PEERCRED); the memfd must be sealed against shrinking (so reading it can never fault) and
// its size must match its header; a channel that breaks a rule is closed and counted.
#pragma once

#include "channel/channel.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace shapetrace::collector {

struct LocalChannelCounters {
  uint64_t accepted = 0;      // channels taken
  uint64_t refused = 0;       // connections refused (another user, a limit, a bad hello)
  uint64_t broken = 0;        // channels closed because their process broke the ring's rules
  uint64_t vanished = 0;      // processes that died without closing their channel
  uint64_t rings_finished = 0; // rings of such processes finished by the collector
  uint64_t rings_broken = 0;   // rings left unfinished: their indices broke the rules
  uint64_t rings_refused = 0;  // processes whose rings could not be taken (their channel was)
};

class LocalChannels {
public:
  // Binds each ipc:// endpoint's control socket. Throws std::runtime_error naming the path.
  LocalChannels(const std::vector<std::string>& endpoints, size_t max_channels);
  ~LocalChannels();
  LocalChannels(const LocalChannels&) = delete;
  LocalChannels& operator=(const LocalChannels&) = delete;

  // A message, or (empty `message`, `oversized` true) one longer than wire::kMaxMessageBytes
  // that was skipped.
  using OnMessage =
      std::function<void(std::span<const std::byte> message, bool oversized, uint32_t pid)>;
  // What the collector finished of a process that died without closing its channel.
  struct RingsFinished {
    // Whether the recording holds everything the process recorded: every thread it ever ran had
    // its ring in the shared arena (the arena counts those that did not), every ring was
    // finished, and the channel was read to its end. Then the process's end can be written on its
    // behalf; else what it had not sent is lost, in an unknown amount.
    bool complete = false;
    uint64_t last_event_ns = 0; // the latest event finished from its rings; 0 when they held none
  };
  // `wait_status` is waitpid's, when the kernel still had it.
  using OnVanished = std::function<void(uint32_t pid, std::optional<int> wait_status,
                                        const RingsFinished& rings)>;

  // Descriptors to wait on (listening and control sockets) before the next service().
  void descriptors(std::vector<int>& fds) const;
  // Accepts new processes, reads what every channel holds (at most `max_messages` in all), beats,
  // and closes the channels whose process is gone. Returns the number of messages read.
  size_t service(const OnMessage& on_message, const OnVanished& on_vanished, size_t max_messages);
  // Whether some channel is open (the caller then comes back within a few milliseconds: the ring
  // has no descriptor to wake it).
  bool active() const { return !channels_.empty(); }
  const LocalChannelCounters& counters() const { return counters_; }
  // Channels taken (mapped and read).
  size_t open() const { return mapped(); }

private:
  struct Channel;
  size_t mapped() const;
  void accept(int listen_fd);
  void greet(Channel& channel);
  bool take(Channel& channel, int memfd, std::string& error);
  size_t read(Channel& channel, const OnMessage& on_message, size_t max_messages);
  // Whether the channel is done with (and how its process ended, for on_vanished); a process that
  // died without warning has its rings finished first.
  bool finished(Channel& channel, const OnMessage& on_message, const OnVanished& on_vanished);
  RingsFinished finishRings(Channel& channel, const OnMessage& on_message);
  void takeRings(Channel& channel, int rings_fd);
  void closeOlderOf(uint32_t pid, const Channel& newest, const OnMessage& on_message);

  std::vector<std::string> paths_;
  std::vector<int> listen_fds_;
  size_t max_channels_;
  std::vector<std::unique_ptr<Channel>> channels_;
  size_t partial_bytes_ = 0; // of fragmented messages being reassembled, over all channels
  LocalChannelCounters counters_;
};

} // namespace shapetrace::collector
