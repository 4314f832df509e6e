// Serving one request: what a worker does between taking a request off its queue and answering it.
// Kept apart from the worker threads (service.cpp) so that serving a request is one call, the unit
// a trace of the service is made of: every request is one RequestHandler::serve instance whose
// call shape says which operation it was and which slow path (split, eviction, flush wait) it took.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "store.h"
#include "workload.h"

namespace kv {

// Why a put took the time it took: the slowest path it went through.
enum class PutPath : std::uint8_t { kPlain, kSplit, kInlineEviction, kFlushWait };
inline constexpr std::size_t kPutPaths = 4;
const char* putPathName(PutPath path);
PutPath classifyPut(const PutOutcome& outcome);

struct Response {
  bool hit = false;              // get: the key was present; delete: it was removed
  std::size_t value_bytes = 0;   // get, scan: bytes a client would receive
  std::size_t entries = 0;       // scan: entries returned
  std::optional<PutPath> put_path; // put: its slow path
};

class RequestHandler {
public:
  // worker_index makes the values a worker writes distinct from other workers'.
  RequestHandler(Store& store, unsigned worker_index) : store_(store), index_(worker_index) {}
  Response serve(const Request& request);

private:
  Response handleGet(const Request& request);
  Response handlePut(const Request& request);
  Response handleDelete(const Request& request);
  Response handleScan(const Request& request);

  Store& store_;
  unsigned index_;
  std::uint64_t puts_ = 0;
};

} // namespace kv
