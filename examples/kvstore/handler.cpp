// RequestHandler: one request against the store (see handler.h).
#include "handler.h"

#include "shapetrace/shapetrace.h"

#include <exception>

// Weak: the program links and runs without the shapetrace runtime, and annotates its requests'
// sizes in the trace when the runtime is linked in (`shapetrace explain --input value_size`).
#pragma weak shapetrace_annotate

namespace kv {

namespace {
void annotate(const char* key, std::int64_t value) {
  if (&shapetrace_annotate != nullptr) shapetrace_annotate(key, value);
}
} // namespace

const char* putPathName(PutPath path) {
  switch (path) {
  case PutPath::kPlain:
    return "plain";
  case PutPath::kSplit:
    return "page split";
  case PutPath::kInlineEviction:
    return "inline eviction";
  case PutPath::kFlushWait:
    return "flush wait";
  }
  return "?";
}

// A flush wait (milliseconds) outweighs an eviction sweep, which outweighs a split (microseconds).
PutPath classifyPut(const PutOutcome& outcome) {
  if (outcome.waited_for_flush)
    return PutPath::kFlushWait;
  if (outcome.evicted_inline)
    return PutPath::kInlineEviction;
  if (outcome.split)
    return PutPath::kSplit;
  return PutPath::kPlain;
}

// The handlers run inside the try block, which also means they are never tail calls: in a trace
// each one is a child of the request's serve call, not a sibling that follows it.
Response RequestHandler::serve(const Request& request) {
  try {
    switch (request.op) {
    case Op::kGet:
      return handleGet(request);
    case Op::kPut:
      return handlePut(request);
    case Op::kDelete:
      return handleDelete(request);
    case Op::kScan:
      return handleScan(request);
    }
  } catch (const std::exception&) {
    ++failures_;
    Response response;
    response.failed = true;
    return response;
  }
  return {};
}

Response RequestHandler::handleGet(const Request& request) {
  Response response;
  if (std::optional<std::string> value = store_.get(request.key)) {
    response.hit = true;
    response.value_bytes = value->size();
  }
  return response;
}

Response RequestHandler::handlePut(const Request& request) {
  // The request's input: what explains a put's time besides the paths it takes.
  annotate("value_size", request.value_size);
  // Versions are unique per worker so that a rewritten value differs from the one it replaces.
  std::uint64_t version = (++puts_ << 8) | index_;
  std::string value = RequestGenerator::makeValue(request.key, request.value_size, version);
  Response response;
  response.put_path = classifyPut(store_.put(request.key, std::move(value)));
  return response;
}

Response RequestHandler::handleDelete(const Request& request) {
  Response response;
  response.hit = store_.erase(request.key);
  return response;
}

Response RequestHandler::handleScan(const Request& request) {
  annotate("scan_length", request.scan_length);
  ScanOutcome outcome = store_.scan(request.key, request.scan_length);
  Response response;
  response.entries = outcome.entries;
  response.value_bytes = outcome.value_bytes;
  return response;
}

} // namespace kv
