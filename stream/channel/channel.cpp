#include "channel/channel.h"

#include "channel/futex.h"

#include <cstring>
#include <time.h>

namespace shapetrace::channel {
namespace {

constexpr uint64_t kRecordHeaderBytes = sizeof(RecordHeader);
static_assert(kRecordHeaderBytes == 8);

uint64_t padded(uint64_t bytes) { return (bytes + 7) & ~uint64_t{7}; }

} // namespace

uint64_t monotonicNs() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return uint64_t(now.tv_sec) * 1000000000u + uint64_t(now.tv_nsec);
}

uint64_t dataBytesFor(uint64_t requested) {
  uint64_t bytes = kMinDataBytes;
  while (bytes < requested && bytes < kMaxDataBytes)
    bytes <<= 1;
  return bytes;
}

// --- Writer ---------------------------------------------------------------------------------

void Writer::initialise(void* base, uint64_t data_bytes, uint32_t pid) {
  auto* header = new (base) Header{};
  header->magic = kMagic;
  header->version = kVersion;
  header->pid = pid;
  header->data_bytes = data_bytes;
}

Writer::Writer(void* base)
    : header_(static_cast<Header*>(base)),
      data_(static_cast<std::byte*>(base) + kHeaderBytes), data_bytes_(header_->data_bytes),
      head_(header_->head.load(std::memory_order_relaxed)) {}

bool Writer::makeRoom(size_t payload) {
  const uint64_t needed = kRecordHeaderBytes + padded(payload);
  const uint64_t unread_bytes = head_ - header_->tail.load(std::memory_order_acquire);
  if (unread_bytes > data_bytes_)
    return false; // a consumer that wrote nonsense gets nothing more
  const uint64_t free_bytes = data_bytes_ - unread_bytes;
  const uint64_t to_end = data_bytes_ - (head_ & (data_bytes_ - 1));
  if (needed <= to_end)
    return free_bytes >= needed;
  // The record would cross the ring's end: pad to the end, then write it at the start.
  if (free_bytes < to_end + needed)
    return false;
  const RecordHeader padding{0, kWrapPadding};
  std::memcpy(data_ + (head_ & (data_bytes_ - 1)), &padding, sizeof padding);
  head_ += to_end;
  header_->head.store(head_, std::memory_order_release);
  return true;
}

void Writer::put(std::span<const std::byte> payload, uint32_t flags) {
  const RecordHeader record{uint32_t(payload.size()), flags};
  std::byte* at = data_ + (head_ & (data_bytes_ - 1));
  std::memcpy(at, &record, sizeof record);
  if (!payload.empty())
    std::memcpy(at + kRecordHeaderBytes, payload.data(), payload.size());
  head_ += kRecordHeaderBytes + padded(payload.size());
  header_->head.store(head_, std::memory_order_release);
}

bool Writer::tryWrite(std::span<const std::byte> message) {
  if (message.size() > maxRecordBytes() || !makeRoom(message.size()))
    return false;
  put(message, 0);
  return true;
}

size_t Writer::writeFragments(std::span<const std::byte> message, size_t offset) {
  while (offset < message.size()) {
    const size_t length = std::min(maxRecordBytes(), message.size() - offset);
    if (!makeRoom(length))
      break;
    const bool last = offset + length == message.size();
    put(message.subspan(offset, length), last ? 0 : kMoreFragments);
    offset += length;
  }
  return offset;
}

uint64_t Writer::unread() const { return head_ - header_->tail.load(std::memory_order_acquire); }

bool Writer::consumerAlive(uint64_t now_ns) const {
  if (header_->consumer_state.load(std::memory_order_acquire) != kConsumerAttached)
    return false;
  const uint64_t beat = header_->heartbeat_ns.load(std::memory_order_relaxed);
  return beat + uint64_t{kConsumerSilentMs} * 1000000 >= now_ns;
}

void Writer::markClosed() {
  header_->producer_state.store(kProducerClosed, std::memory_order_release);
}

void Writer::waitForRoom(long timeout_ns) {
  header_->producer_waiting.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // A take between the failed write and the flag changed the tail already: no sleep then.
  waitWhileAt(header_->tail, header_->tail.load(std::memory_order_acquire), timeout_ns);
  header_->producer_waiting.store(0, std::memory_order_relaxed);
}

void Writer::markExecuting(bool executing) {
  header_->producer_state.store(executing ? kProducerExecuting : kProducerWriting,
                                std::memory_order_release);
}

// --- Reader ---------------------------------------------------------------------------------

bool Reader::validate(const void* base, size_t mapped_bytes, std::string& error) {
  if (mapped_bytes < kHeaderBytes) {
    error = "channel memory smaller than its header";
    return false;
  }
  const auto* header = static_cast<const Header*>(base);
  // One read of each field: the producer may change them under us.
  const uint64_t magic = header->magic;
  const uint32_t version = header->version;
  const uint64_t data_bytes = header->data_bytes;
  if (magic != kMagic) {
    error = "channel memory does not start with the channel's magic number";
    return false;
  }
  if (version != kVersion) {
    error = "channel version " + std::to_string(version) + " (this collector reads " +
            std::to_string(kVersion) + ")";
    return false;
  }
  if (data_bytes < kMinDataBytes || data_bytes > kMaxDataBytes ||
      (data_bytes & (data_bytes - 1)) != 0 || kHeaderBytes + data_bytes != mapped_bytes) {
    error = "channel ring size " + std::to_string(data_bytes) + " does not match its memory (" +
            std::to_string(mapped_bytes) + " bytes)";
    return false;
  }
  return true;
}

Reader::Reader(void* base)
    : header_(static_cast<Header*>(base)),
      data_(static_cast<const std::byte*>(base) + kHeaderBytes), data_bytes_(header_->data_bytes),
      tail_(header_->tail.load(std::memory_order_relaxed) & ~uint64_t{7}) {
  // The size was validated; a producer rewriting it later changes nothing here. The read index is
  // the consumer's from now on: a producer may have left any value there, and records start at
  // multiples of 8 (so a record header never crosses the ring's end).
  header_->tail.store(tail_, std::memory_order_release);
}

Reader::Next Reader::next(size_t max_message_bytes, std::string& error) {
  for (;;) {
    const uint64_t head = header_->head.load(std::memory_order_acquire);
    const uint64_t available = head - tail_;
    if (available == 0)
      return Next::Nothing;
    if (available > data_bytes_ || available % 8 != 0) {
      error = "the ring's write index is not within the ring";
      return Next::Broken;
    }
    const uint64_t offset = tail_ & (data_bytes_ - 1);
    const uint64_t to_end = data_bytes_ - offset;
    RecordHeader record;
    std::memcpy(&record, data_ + offset, sizeof record);
    uint64_t length = kRecordHeaderBytes + padded(record.size);
    if (record.flags & kWrapPadding)
      length = to_end;
    if (length > to_end || length > available) {
      error = "a record of " + std::to_string(record.size) + " bytes overruns the ring";
      return Next::Broken;
    }
    if (!(record.flags & kWrapPadding)) {
      if (!skipping_ && message_.size() + record.size > max_message_bytes) {
        skipping_ = true;
        std::vector<std::byte>().swap(message_);
      }
      if (!skipping_) {
        const std::byte* payload = data_ + offset + kRecordHeaderBytes;
        message_.insert(message_.end(), payload, payload + record.size);
      }
    }
    tail_ += length;
    header_->tail.store(tail_, std::memory_order_release);
    if (record.flags & (kWrapPadding | kMoreFragments))
      continue;
    if (skipping_) {
      skipping_ = false;
      return Next::Oversized;
    }
    return Next::Message;
  }
}

void Reader::beat(uint64_t now_ns) {
  header_->heartbeat_ns.store(now_ns, std::memory_order_relaxed);
  header_->consumer_state.store(kConsumerAttached, std::memory_order_release);
}

void Reader::wakeProducer() {
  // Read with the fence's order against the tail's stores: a producer that set the flag and then
  // saw the old tail is asleep on it and woken here.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (header_->producer_waiting.load(std::memory_order_relaxed) != 0)
    wakeWaiters(header_->tail);
}

void Reader::markLeft() {
  header_->consumer_state.store(kConsumerLeft, std::memory_order_release);
  wakeWaiters(header_->tail); // a producer asleep for room sees we left
}

bool Reader::producerClosed() const {
  return header_->producer_state.load(std::memory_order_acquire) == kProducerClosed;
}

bool Reader::producerExecuting() const {
  return header_->producer_state.load(std::memory_order_acquire) == kProducerExecuting;
}

bool Reader::empty() const { return header_->head.load(std::memory_order_acquire) == tail_; }

} // namespace shapetrace::channel
