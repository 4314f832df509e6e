// A process's side of the local channel (stream/channel) for tests and benchmarks: connects to a
// collector's control socket, hands the channel over, and sends messages waiting for room, so
// that nothing is dropped (as a runtime in lossless mode). Long messages go as fragments.
#pragma once

#include "channel/control.h"

#include <chrono>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

namespace shapetrace::testing {

class ChannelProducer {
public:
  // Throws when no collector takes the channel.
  ChannelProducer(const std::string& endpoint, uint64_t data_bytes) {
    std::string error;
    if (channel::connectControl(channel::controlPath(endpoint), 0, fd_, error) !=
            channel::ConnectResult::Connected ||
        !channel::createAndHandOver(fd_, data_bytes, -1, 0, 5000, memory_, error))
      throw std::runtime_error("cannot open a channel to " + endpoint + ": " + error);
    writer_.emplace(memory_.base);
  }
  // Gives the collector up to 30 s to read everything, then closes the channel.
  ~ChannelProducer() {
    for (int waited = 0; writer_->unread() > 0 && waited < 30000; ++waited)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    writer_->markClosed();
    ::munmap(memory_.base, memory_.bytes);
    ::close(fd_);
  }
  ChannelProducer(const ChannelProducer&) = delete;
  ChannelProducer& operator=(const ChannelProducer&) = delete;

  // Waits for room (throws after 30 s without the collector taking anything).
  void send(std::span<const std::byte> bytes) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    size_t offset = 0;
    while (bytes.size() <= writer_->maxRecordBytes()
               ? !writer_->tryWrite(bytes)
               : (offset = writer_->writeFragments(bytes, offset)) < bytes.size()) {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("the collector took nothing for 30 s");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  channel::Writer& writer() { return *writer_; }
  // The channel's memory, for tests that write into it what a hostile process would.
  const channel::Memory& memory() const { return memory_; }

private:
  int fd_ = -1;
  channel::Memory memory_;
  std::optional<channel::Writer> writer_;
};

} // namespace shapetrace::testing
