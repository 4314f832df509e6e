// Publishes the service trace fixture (service_trace.h) through the collector's Publisher (the
// sequence-numbered publish format of stream/fanout/fanout.h, heartbeats and end marker included), as a
// collector's publish endpoint does, spread over a few seconds so a live view sees it grow:
//
//   report_service_publisher ENDPOINT [--seconds S] [--requests N] [--process KEY]
//                            [--short-threads N]
//
// --short-threads N publishes a thread-per-request service instead: process 1's threads 1..N in
// turn, each started, one call of serve() under main() (4 events) and ended.
//
// Waits a moment after binding so that subscribers that are already retrying can connect (PUB
// drops what is sent before a subscriber is attached), then sends one item per message.
#include "fanout/fanout.h"
#include "service_trace.h"

#include <zmq.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

using namespace shapetrace;

std::vector<wire::StreamItem> shortThreads(uint32_t count) {
  std::vector<wire::StreamItem> items;
  items.push_back({1, wire::ModuleTable{"service", 0,
                                        {{1, "_Z4mainv", "main()", "", 0},
                                         {2, "_Z5servev", "serve()", "", 0}}}});
  for (uint32_t thread = 1; thread <= count; ++thread) {
    const uint64_t start = uint64_t{thread} * 1000;
    items.push_back({1, wire::ThreadStart{thread, start, "request"}});
    wire::EventBatch batch{thread, 0, {}, {}, {}};
    batch.events = {Event{start + 10, 1, EventKind::Enter}, Event{start + 20, 2, EventKind::Enter},
                    Event{start + 30, 2, EventKind::Exit}, Event{start + 40, 1, EventKind::Exit}};
    items.push_back({1, batch});
    items.push_back({1, wire::ThreadEnd{thread, start + 50, 4, 0, 1}});
  }
  return items;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s ENDPOINT [--seconds S] [--requests N] [--process KEY]\n",
                 argv[0]);
    return 2;
  }
  double seconds = 3;
  uint32_t short_threads = 0;
  shapetrace::report_testing::ServiceTraceOptions options;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
      seconds = std::atof(argv[++i]);
    else if (std::strcmp(argv[i], "--requests") == 0 && i + 1 < argc)
      options.requests_per_worker = static_cast<uint32_t>(std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--short-threads") == 0 && i + 1 < argc)
      short_threads = static_cast<uint32_t>(std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--process") == 0 && i + 1 < argc)
      options.process = std::strtoull(argv[++i], nullptr, 10);
    else {
      std::fprintf(stderr, "%s: unknown argument %s\n", argv[0], argv[i]);
      return 2;
    }
  }
  try {
    zmq::context_t context;
    shapetrace::fanout::Publisher publisher(context, argv[1], /*send_hwm=*/0, "");
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    const auto items = short_threads > 0
                           ? shortThreads(short_threads)
                           : shapetrace::report_testing::ServiceTrace(options).items();
    const size_t steps = 10;
    for (size_t i = 0; i < items.size(); ++i) {
      const auto bytes = shapetrace::wire::encodeItem(items[i]);
      publisher.publish(bytes);
      if ((i + 1) % (items.size() / steps + 1) == 0)
        std::this_thread::sleep_for(std::chrono::duration<double>(seconds / steps));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    publisher.end();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  return 0;
}
