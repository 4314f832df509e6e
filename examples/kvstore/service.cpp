// The service's threads and the driver that runs them for a given time (see service.h).
#include "service.h"

#include "request_queue.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace kv {

namespace {

using Clock = std::chrono::steady_clock;
using Queue = RequestQueue<Request>;

// A worker thread: takes requests off its queue, has its handler serve them, and records each
// request's service time by operation (and, for puts, by slow path).
class Worker {
public:
  Worker(unsigned index, Store& store, Queue& queue)
      : index_(index), handler_(store, index), queue_(queue) {}

  void run() {
    std::string name = "worker-" + std::to_string(index_);
    nameThread(name.c_str());
    while (std::optional<Request> request = queue_.pop()) {
      Clock::time_point start = Clock::now();
      Response response = handler_.serve(*request);
      auto nanoseconds = static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
      by_op_[static_cast<std::size_t>(request->op)].record(nanoseconds);
      if (response.put_path)
        by_put_path_[static_cast<std::size_t>(*response.put_path)].record(nanoseconds);
      if (request->op == Op::kGet && response.hit)
        ++get_hits_;
    }
  }

  void addTo(RunReport* report) const {
    for (std::size_t i = 0; i < by_op_.size(); ++i) {
      report->by_op[i].merge(by_op_[i]);
      report->all.merge(by_op_[i]);
    }
    for (std::size_t i = 0; i < by_put_path_.size(); ++i)
      report->by_put_path[i].merge(by_put_path_[i]);
    report->get_hits += get_hits_;
    report->failed_requests += handler_.failures();
  }

private:
  unsigned index_;
  RequestHandler handler_;
  Queue& queue_;
  std::array<LatencyHistogram, 4> by_op_;
  std::array<LatencyHistogram, kPutPaths> by_put_path_;
  std::uint64_t get_hits_ = 0;
};

// Warms the cache with the most popular keys first, until it reaches the high watermark.
std::uint64_t preload(Store& store, const ServiceOptions& options) {
  std::mt19937_64 rng(options.seed ^ 0x5EED5EED5EED5EEDull);
  WorkloadMix mix;
  std::uint64_t loaded = 0;
  for (std::uint64_t rank = 0; rank < options.keys; ++rank) {
    if (store.memoryBytes() >= store.highWatermarkBytes())
      break;
    auto size =
        mix.min_value + static_cast<std::uint32_t>(rng() % (mix.max_value - mix.min_value + 1));
    Key key = scrambleKey(rank);
    store.put(key, RequestGenerator::makeValue(key, size, 0));
    ++loaded;
  }
  return loaded;
}

// The client: deals requests round-robin to the workers until the deadline, then closes the
// queues so that the workers finish what is queued and stop.
std::uint64_t runClient(const ServiceOptions& options, std::vector<std::unique_ptr<Queue>>& queues,
                        Clock::time_point deadline) {
  nameThread("client");
  RequestGenerator generator(options.keys, options.zipf_theta, options.seed);
  std::uint64_t sent = 0;
  std::size_t next_queue = 0;
  const auto more = [&] {
    return options.requests ? sent < options.requests
                            : sent % 64 != 0 || Clock::now() < deadline;
  };
  while (more()) {
    queues[next_queue]->push(generator.next());
    next_queue = (next_queue + 1) % queues.size();
    ++sent;
  }
  for (auto& queue : queues)
    queue->close();
  return sent;
}

std::filesystem::path prepareDataDir(const std::filesystem::path& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error)
    throw std::runtime_error("cannot create the data directory '" + dir.string() +
                             "': " + error.message());
  // Each run starts from an empty store, so its checkpoint starts empty too.
  std::filesystem::path log = dir / "checkpoint.log";
  std::filesystem::remove(log, error);
  if (error)
    throw std::runtime_error("cannot remove the old checkpoint '" + log.string() +
                             "': " + error.message());
  return log;
}

} // namespace

RunReport runService(const ServiceOptions& options) {
  RunReport report;
  report.checkpoint_path = prepareDataDir(options.data_dir);

  StoreOptions store_options;
  store_options.memory_budget_bytes = options.memory_budget_bytes;
  store_options.max_unflushed_bytes = options.max_unflushed_bytes;
  Store store(store_options);
  CheckpointLog log(report.checkpoint_path);
  Flusher flusher(store, log, options.flush_interval);
  Evictor evictor(store, options.evictor_period);
  // The flusher runs during the warm-up already: the loading puts are throttled on dirty pages too.
  flusher.start();
  evictor.start();
  report.preloaded = preload(store, options);

  std::vector<std::unique_ptr<Queue>> queues;
  std::vector<std::unique_ptr<Worker>> workers;
  for (unsigned i = 0; i < options.workers; ++i) {
    queues.push_back(std::make_unique<Queue>(options.queue_depth));
    workers.push_back(std::make_unique<Worker>(i, store, *queues.back()));
  }
  Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (auto& worker : workers)
    threads.emplace_back([&worker] { worker->run(); });
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(options.seconds));
  std::thread client([&] { report.requests = runClient(options, queues, deadline); });
  client.join();
  for (std::thread& thread : threads)
    thread.join();
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();

  evictor.stop();
  flusher.stop();
  if (std::string error = flusher.error(); !error.empty())
    throw std::runtime_error("the checkpoint failed: " + error);

  for (auto& worker : workers)
    worker->addTo(&report);
  report.entries = store.size();
  report.memory_bytes = store.memoryBytes();
  report.leaves = store.leafCount();
  report.height = store.height();
  report.tree = store.treeCounters();
  report.store = store.counters();
  report.flusher = flusher.counters();
  report.checkpoint_bytes = log.sizeBytes();
  return report;
}

} // namespace kv
