// StreamItem dispatch to per-thread analyzers, optionally on worker threads.
#include "analyzer.h"

#include "thread_analyzer.h"
#include "thread_fold.h"

#include <malloc.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <tuple>
#include <thread>

namespace shapetrace::analyzer {

struct Analyzer::Task {
  enum class Kind : uint8_t { Batch, Gap, End } kind = Kind::Batch;
  ThreadSlot* slot = nullptr;
  uint64_t sequence = wire::kNoSequence;
  uint64_t dropped = 0;
  std::vector<Event> events;
  std::vector<wire::TracerWait> waits;

  void run();
};

struct Analyzer::ThreadSlot {
  explicit ThreadSlot(const ThreadAnalyzerSettings& settings) : analyzer(settings) {}
  // Touched only by its worker (or the caller when jobs == 1).
  ThreadAnalyzer analyzer;
  std::vector<std::unique_ptr<ThreadConsumer>> consumers; // of the extensions that run
  std::string name;
  bool ended = false;
  bool foldable = true; // every extension that gave it a consumer folds threads
  bool process_foldable = true; // ... and processes
  size_t worker = 0;
  std::vector<Task> held; // jobs == 1: tasks waiting to run in one go, see Analyzer::hold
};

void Analyzer::Task::run() {
  switch (kind) {
  case Kind::Batch:
    slot->analyzer.onBatch(sequence, events, waits);
    for (auto& consumer : slot->consumers)
      consumer->onBatch(sequence, events, waits);
    break;
  case Kind::Gap:
    slot->analyzer.onGapMarker(dropped, sequence);
    for (auto& consumer : slot->consumers)
      consumer->onGapMarker(dropped);
    break;
  case Kind::End:
    slot->analyzer.onEnd(sequence);
    for (auto& consumer : slot->consumers)
      consumer->onEnd();
    break;
  }
}

// A thread running the tasks of the threads pinned to it, in order. Tasks are handed over in
// chunks to keep locking off the per-batch path; the queue is bounded so a fast reader cannot
// buffer the whole recording in memory.
class Analyzer::Worker {
public:
  Worker() : thread_([this] { loop(); }) {}
  ~Worker() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    work_ready_.notify_all();
    thread_.join();
  }

  void add(Task task) {
    pending_.push_back(std::move(task));
    if (pending_.size() >= kChunkTasks) flush();
  }
  void flush() {
    if (pending_.empty()) return;
    std::unique_lock lock(mutex_);
    space_ready_.wait(lock, [this] { return chunks_.size() < kMaxChunks; });
    chunks_.push_back(std::move(pending_));
    pending_.clear();
    lock.unlock();
    work_ready_.notify_one();
  }
  // Returns when every task handed over has run.
  void waitIdle() {
    flush();
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return chunks_.empty() && !running_; });
  }

private:
  static constexpr size_t kChunkTasks = 16;
  static constexpr size_t kMaxChunks = 64;

  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      work_ready_.wait(lock, [this] { return stop_ || !chunks_.empty(); });
      if (chunks_.empty()) return; // stopping and nothing left
      std::vector<Task> chunk = std::move(chunks_.front());
      chunks_.pop_front();
      running_ = true;
      lock.unlock();
      space_ready_.notify_one();
      for (Task& task : chunk)
        task.run();
      lock.lock();
      running_ = false;
      if (chunks_.empty()) idle_.notify_all();
    }
  }

  std::vector<Task> pending_; // caller side only
  std::mutex mutex_;
  std::condition_variable work_ready_, space_ready_, idle_;
  std::deque<std::vector<Task>> chunks_;
  bool running_ = false;
  bool stop_ = false;
  std::thread thread_;
};

void keepFreedMemory() {
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_TOP_PAD, 16 << 20);
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
}

Analyzer::Analyzer(const AnalysisSettings& settings, unsigned jobs,
                   std::vector<NamedExtension> extensions)
    : settings_(settings), extensions_(std::move(extensions)) {
  if (jobs > 1)
    for (unsigned i = 0; i < jobs; ++i)
      workers_.push_back(std::make_unique<Worker>());
}

Analyzer::~Analyzer() = default;

Analyzer::ThreadSlot& Analyzer::slotFor(uint64_t process, uint32_t thread) {
  auto& slot = threads_[ThreadKey{process, thread}];
  if (!slot) {
    slot = std::make_unique<ThreadSlot>(settings_.thread);
    if (const auto main = main_function_.find(process); main != main_function_.end())
      slot->analyzer.setMainFunction(main->second);
    for (const NamedExtension& named : extensions_)
      if (auto consumer = named.extension->consumerFor(ThreadKey{process, thread})) {
        slot->consumers.push_back(std::move(consumer));
        slot->foldable = slot->foldable && named.extension->foldsThreads();
        slot->process_foldable = slot->process_foldable && named.extension->foldsProcesses();
      }
    // Round-robin in order of appearance spreads threads evenly over the workers.
    if (!workers_.empty()) slot->worker = (threads_.size() - 1) % workers_.size();
    if (const auto planned = planned_worker_.find(ThreadKey{process, thread});
        planned != planned_worker_.end())
      slot->worker = planned->second;
  }
  return *slot;
}

void Analyzer::planWorkers(const std::map<ThreadKey, uint64_t>& work) {
  if (!workers_.empty()) planned_worker_ = largestFirstPlan(work, workers_.size());
}

std::map<ThreadKey, size_t> largestFirstPlan(const std::map<ThreadKey, uint64_t>& work,
                                             size_t workers) {
  std::map<ThreadKey, size_t> plan;
  std::vector<std::pair<uint64_t, ThreadKey>> largest_first;
  for (const auto& [thread, amount] : work)
    largest_first.push_back({amount, thread});
  std::sort(largest_first.begin(), largest_first.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<uint64_t> load(std::max<size_t>(workers, 1), 0);
  for (const auto& [amount, thread] : largest_first) {
    const auto least = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[least] += amount;
    plan[thread] = least;
  }
  return plan;
}

void Analyzer::dispatch(ThreadSlot& slot, Task task) {
  task.slot = &slot;
  if (workers_.empty())
    hold(slot, std::move(task));
  else
    workers_[slot.worker]->add(std::move(task));
}

// With jobs == 1, running each batch as it arrives switches between the threads' analyzers every
// few thousand events (a recording interleaves its threads' batches), and each switch finds the
// caches full of another thread's tables. Holding a thread's tasks and running them in one go
// makes the runs longer; the total held is bounded so memory stays small.
void Analyzer::hold(ThreadSlot& slot, Task task) {
  if (slot.held.empty()) holding_.push_back(&slot);
  slot.held.push_back(std::move(task));
  if (++held_tasks_ >= kMaxHeldTasks) runHeld();
}

void Analyzer::runHeld() {
  for (ThreadSlot* slot : holding_) {
    for (Task& task : slot->held)
      task.run();
    slot->held.clear();
  }
  holding_.clear();
  held_tasks_ = 0;
}

Extension* Analyzer::extension(std::string_view name) const {
  for (const NamedExtension& named : extensions_)
    if (named.name == name) return named.extension.get();
  return nullptr;
}

void Analyzer::consume(wire::StreamItem item) {
  ++items_;
  for (const NamedExtension& named : extensions_)
    named.extension->observe(item);
  const uint64_t process = item.process;
  // An ExitStatus of a process that never connected (key 0) names no process of the stream.
  if (process != 0 || item.kind() != wire::ItemKind::ExitStatus) {
    bool& ended = process_ended_[process];
    if (item.kind() == wire::ItemKind::ProcessEnd && !ended) {
      ended = true;
      ended_processes_.push_back(process);
      if (ended_processes_.size() >= settings_.kept_ended_processes + kFoldBatch)
        foldEndedProcesses();
    }
  }
  if (auto* end = std::get_if<wire::ProcessEnd>(&item.body))
    for (const auto& [function, calls] : end->throttled_calls) {
      ThrottledFunction& throttled = throttles_[{process, function}];
      throttled.calls_not_recorded = calls;
      throttled.count_known = true;
    }
  if (auto* batch = std::get_if<wire::EventBatch>(&item.body)) {
    for (const wire::Throttle& mark : batch->throttles) {
      ThrottledFunction& throttled = throttles_[{process, mark.function}];
      if (throttled.short_calls != 0) continue; // the first mark stands
      throttled.process = process;
      throttled.thread = batch->thread;
      throttled.at_ns = mark.timestamp_ns;
      throttled.short_calls = mark.short_calls;
    }
    Task task;
    task.sequence = batch->sequence;
    task.events = std::move(batch->events);
    task.waits = std::move(batch->tracer_waits);
    dispatch(slotFor(process, batch->thread), std::move(task));
  } else if (auto* gap = std::get_if<wire::Gap>(&item.body)) {
    Task task;
    task.kind = Task::Kind::Gap;
    task.dropped = gap->dropped;
    task.sequence = gap->after_sequence;
    ThreadSlot& slot = slotFor(process, gap->thread);
    dispatch(slot, std::move(task));
  } else if (auto* table = std::get_if<wire::ModuleTable>(&item.body)) {
    for (const wire::FunctionInfo& f : table->functions) {
      if (f.excluded != wire::Exclusion::kNone && !functions_.contains({process, f.id}))
        excluded_.emplace_back(process, f.id);
      functions_[{process, f.id}] = f;
      if (f.mangled_name == "main") main_function_.try_emplace(process, f.id);
    }
  } else if (auto* start = std::get_if<wire::ThreadStart>(&item.body)) {
    slotFor(process, start->thread).name = start->name;
  } else if (auto* name = std::get_if<wire::ThreadName>(&item.body)) {
    slotFor(process, name->thread).name = name->name;
  } else if (auto* end = std::get_if<wire::ThreadEnd>(&item.body)) {
    ThreadSlot& slot = slotFor(process, end->thread);
    if (!slot.ended && slot.foldable) ended_.push_back(ThreadKey{process, end->thread});
    slot.ended = true;
    Task task;
    task.kind = Task::Kind::End;
    task.sequence = end->batches; // what the runtime sent: a lost tail shows
    dispatch(slot, std::move(task));
    if (ended_.size() >= settings_.kept_ended_threads + kFoldBatch) foldEnded();
  }
  // ProcessStart, ProcessEnd, ExecFailed, ExitStatus and annotations (items of their own or a
  // batch's) carry nothing the shape analysis uses; extensions see them in observe().
}

void Analyzer::drain() {
  runHeld();
  for (auto& worker : workers_)
    worker->waitIdle();
}

// The threads that ended first, past the ones kept whole, go into their process' folded threads
// and their slots are freed. A thread's items after its end (its id used again) start a new slot.
void Analyzer::foldEnded() {
  drain();
  while (ended_.size() > settings_.kept_ended_threads) {
    const ThreadKey key = ended_.front();
    ended_.pop_front();
    const auto it = threads_.find(key);
    if (it == threads_.end()) continue;
    auto folded = folded_.find(key.process);
    if (folded == folded_.end())
      folded = folded_.emplace(key.process, foldedThreads(settings_.thread)).first;
    foldThread(folded->second, it->second->analyzer.result(), key, settings_.thread);
    for (const NamedExtension& named : extensions_)
      named.extension->foldThread(key);
    threads_.erase(it);
  }
}

// The processes that ended first, past the ones kept whole, go into the folded processes: their
// threads folded, then their folded threads and the extensions' state added to the folded
// processes' with function ids by identity, and what was kept per process freed. A process with a
// thread that has not ended, or that an extension which cannot fold processes follows, is kept.
void Analyzer::foldEndedProcesses() {
  drain();
  while (ended_processes_.size() > settings_.kept_ended_processes) {
    const uint64_t process = ended_processes_.front();
    ended_processes_.pop_front();
    foldProcess(process);
  }
}

bool Analyzer::foldProcess(uint64_t process) {
  if (process == kFoldedProcessesKey) return false;
  const auto first = threads_.lower_bound(ThreadKey{process, 0});
  const auto last = threads_.upper_bound(ThreadKey{process, UINT32_MAX});
  for (auto it = first; it != last; ++it)
    if (!it->second->ended || !it->second->foldable || !it->second->process_foldable)
      return false;
  auto folded = folded_.find(process);
  if (folded == folded_.end())
    folded = folded_.emplace(process, foldedThreads(settings_.thread)).first;
  for (auto it = first; it != last; ++it) {
    foldThread(folded->second, it->second->analyzer.result(), it->first, settings_.thread);
    for (const NamedExtension& named : extensions_)
      named.extension->foldThread(it->first);
  }
  threads_.erase(first, last);

  const std::function<uint32_t(uint32_t)> function_of = [this, process](uint32_t id) {
    return foldedFunctionId(process, id);
  };
  if (folded_processes_.shape_states.empty()) folded_processes_ = foldedThreads(settings_.thread);
  analyzer::foldProcess(folded_processes_, folded->second, function_of, settings_.thread);
  folded_.erase(folded);
  for (const NamedExtension& named : extensions_)
    named.extension->foldProcess(process, function_of);

  // The throttles and exclusions name the folded processes' functions from now on.
  const auto throttles_first = throttles_.lower_bound({process, 0});
  const auto throttles_last = throttles_.upper_bound({process, UINT32_MAX});
  for (auto it = throttles_first; it != throttles_last; ++it) {
    auto [into, added] =
        throttles_.try_emplace({kFoldedProcessesKey, function_of(it->first.second)}, it->second);
    if (!added) into->second.calls_not_recorded += it->second.calls_not_recorded;
  }
  throttles_.erase(throttles_first, throttles_last);
  for (auto& excluded : excluded_)
    if (excluded.first == process) excluded = {kFoldedProcessesKey, function_of(excluded.second)};
  // Exclusions of the same function by two folded processes: keep the first.
  std::set<std::pair<uint64_t, uint32_t>> seen;
  std::erase_if(excluded_, [&seen](const auto& key) {
    return key.first == kFoldedProcessesKey && !seen.insert(key).second;
  });

  functions_.erase(functions_.lower_bound({process, 0}),
                   functions_.upper_bound({process, UINT32_MAX}));
  main_function_.erase(process);
  // process_ended_ keeps the key as ended: an ExitStatus `record` writes when it reaps an orphan
  // late must not make a folded process one without its end.
  return true;
}

// The folded processes' function id of a process's function: one per identity (nameFunction), so
// processes of the same binary share one function table. A known function gets an id counted down
// from the top; an id no module table named keeps its id, so that it is still "fn#<id>", unless a
// known function took that id (a crafted stream), then it is named by a table entry of its own.
uint32_t Analyzer::foldedFunctionId(uint64_t process, uint32_t id) {
  const auto info = functions_.find({process, id});
  const wire::FunctionInfo* known = info == functions_.end() ? nullptr : &info->second;
  const FunctionName name = nameFunction(known, id);
  if (const auto it = folded_function_ids_.find(name.identity); it != folded_function_ids_.end())
    return it->second;
  uint32_t folded_id = id;
  if (known != nullptr || functions_.contains({kFoldedProcessesKey, id})) {
    folded_id = next_folded_function_id_--;
    wire::FunctionInfo entry = known != nullptr ? *known : wire::FunctionInfo{};
    if (known == nullptr) entry.mangled_name = name.identity;
    entry.id = folded_id;
    functions_[{kFoldedProcessesKey, folded_id}] = std::move(entry);
  }
  folded_function_ids_.emplace(name.identity, folded_id);
  return folded_id;
}

void Analyzer::finish() {
  if (!finished_) {
    finished_ = true;
    for (const auto& [process, ended] : process_ended_)
      if (!ended) input_diagnostics_.add(Stat::processes_without_end);
  }
  for (auto& [key, slot] : threads_) {
    if (slot->ended) continue;
    Task task;
    task.kind = Task::Kind::End;
    dispatch(*slot, std::move(task));
  }
  drain();
}

Analyzer::MergeInputs Analyzer::mergeInputs() {
  drain();
  MergeInputs inputs{{}, &functions_, input_diagnostics_};
  for (const auto& [key, slot] : threads_)
    inputs.threads.push_back(ThreadInput{key, slot->name, slot->ended, &slot->analyzer.result()});
  for (const auto& [process, folded] : folded_)
    inputs.threads.push_back(ThreadInput{ThreadKey{process, kFoldedThreadsId},
                                         std::to_string(folded.folded_threads) +
                                             " threads folded",
                                         true, &folded});
  if (folded_processes_.folded_processes > 0)
    inputs.threads.push_back(ThreadInput{ThreadKey{kFoldedProcessesKey, kFoldedThreadsId},
                                         std::to_string(folded_processes_.folded_processes) +
                                             " processes folded, " +
                                             std::to_string(folded_processes_.folded_threads) +
                                             " threads",
                                         true, &folded_processes_});
  return inputs;
}

Analysis Analyzer::snapshot() {
  std::vector<ThreadInput> inputs = mergeInputs().threads;
  auto resolve = [this](uint64_t process, uint32_t id) -> const wire::FunctionInfo* {
    auto it = functions_.find({process, id});
    return it == functions_.end() ? nullptr : &it->second;
  };
  Analysis analysis = analyze(std::move(inputs), resolve, settings_);
  analysis.diagnostics.merge(input_diagnostics_);
  FunctionIndex functions(analysis, resolve);
  for (const auto& [key, throttle] : throttles_) {
    if (throttle.short_calls == 0) continue; // a count without its mark: nothing says when
    ThrottledFunction named = throttle;
    named.function = functions.indexOf(key.first, key.second);
    analysis.throttled.push_back(named);
  }
  std::sort(analysis.throttled.begin(), analysis.throttled.end(),
            [](const ThrottledFunction& a, const ThrottledFunction& b) {
              return std::tie(a.at_ns, a.process, a.function) <
                     std::tie(b.at_ns, b.process, b.function);
            });
  // One entry per function (its processes share it), by the first exclusion seen.
  std::set<uint32_t> listed;
  for (const auto& [process, id] : excluded_) {
    const uint32_t index = functions.indexOf(process, id);
    if (listed.insert(index).second)
      analysis.excluded.push_back({index, functions_.at({process, id}).excluded});
  }
  std::sort(analysis.excluded.begin(), analysis.excluded.end(),
            [](const ExcludedFunction& a, const ExcludedFunction& b) {
              return a.function < b.function;
            });
  for (const NamedExtension& named : extensions_)
    analysis.extensions.emplace_back(named.name, named.extension->result(analysis, functions));
  return analysis;
}

} // namespace shapetrace::analyzer
