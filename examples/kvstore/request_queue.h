// A bounded blocking queue of requests between the client thread and one worker: the client
// blocks when the worker falls behind (back-pressure instead of unbounded memory), the worker
// blocks when it has nothing to do. close() lets the worker drain what is queued and then stop.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>

namespace kv {

template <typename T> class RequestQueue {
public:
  explicit RequestQueue(std::size_t capacity) : capacity_(capacity) {}

  // Returns false when the queue is closed.
  bool push(T item) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return items_.size() < capacity_ || closed_; });
    if (closed_)
      return false;
    items_.push_back(std::move(item));
    not_empty_.notify_one();
    return true;
  }

  // Returns nothing once the queue is closed and empty.
  std::optional<T> pop() {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return !items_.empty() || closed_; });
    if (items_.empty())
      return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

private:
  std::size_t capacity_;
  std::mutex mutex_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<T> items_;
  bool closed_ = false;
};

} // namespace kv
