// Lifecycle of the runtime (start, thread attach and exit, fork, process exit), module
// registration and the public C API of shapetrace.h.
#include "runtime.h"

#include "drain.h"
#include "fd_guard.h"
#include "ring_arena.h"
#include "throttle.h"
#include "flags.h"
#include "shapetrace/abi.h"
#include "shapetrace/shapetrace.h"
#include "wire/endpoint.h"

#include <cerrno>
#include <csignal>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <link.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

// Exported (abi.h): the hooks read it, and code instrumented for ABI version 2 inline; only
// setRecordingEnabled writes it. Such code built without -fPIC may hold a copy of it in the
// executable (a copy relocation): this library reaches it through its GOT (default visibility,
// interposable), as it does.
SHAPETRACE_EXPORT constinit uint8_t __shapetrace_enabled = 0;

namespace shapetrace::rt {

constinit HotState g_hot;

Runtime& runtime() {
  static Runtime* instance = new Runtime; // never destroyed: hooks may run during exit
  return *instance;
}

uint32_t StringTable::intern(const char* text) {
  std::lock_guard lock(mutex_);
  if (auto found = ids_.find(text); found != ids_.end())
    return found->second;
  if (strings_.size() >= kMaxStrings)
    return kFull;
  const uint32_t id = uint32_t(strings_.size());
  strings_.emplace_back(text);
  ids_.emplace(text, id);
  return id;
}

std::string StringTable::lookup(uint32_t id) {
  std::lock_guard lock(mutex_);
  return id < strings_.size() ? strings_[id] : std::string();
}

namespace {

// Holding modules_mutex: an image's flag takes __shapetrace_enabled's value, read under the lock,
// so that of two switches the one that takes it last writes the newest value.
void copyFlagTo(uint8_t* flag) {
  std::atomic_ref<uint8_t>(*flag).store(std::atomic_ref<uint8_t>(__shapetrace_enabled).load(),
                                        std::memory_order_release);
}

void copyFlagToImages(Runtime& rt) {
  for (const Runtime::ImageFlag& image : rt.image_flags)
    copyFlagTo(image.flag);
}

// Holding modules_mutex: one more registered module reads `flag`, which follows recording from now.
void addImageFlag(Runtime& rt, uint8_t* flag) {
  for (Runtime::ImageFlag& image : rt.image_flags)
    if (image.flag == flag) {
      ++image.modules;
      return;
    }
  rt.image_flags.push_back({flag, 1});
  copyFlagTo(flag);
}

// Registers one module's table (abi.h): its ids are the next free range. A module already
// registered (its base id set) is left alone; one of an ABI version this runtime does not know, or
// past the id space, is refused once, with a message: its events keep ids at or above
// SHAPETRACE_UNREGISTERED_BASE, which the drain never sends (they are counted as lost).
// A table entry's flags (abi.h) as the stream says them; flags of a newer pass read as none.
wire::Exclusion exclusionOf(uint32_t flags) {
  switch (flags) {
  case SHAPETRACE_FUNCTION_EXCLUDED_BY_RULE: return wire::Exclusion::kByRule;
  case SHAPETRACE_FUNCTION_EXCLUDED_BY_SIZE: return wire::Exclusion::kBySize;
  default: return wire::Exclusion::kNone;
  }
}

void registerModule(__shapetrace_module* module) {
  Runtime& rt = runtime();
  std::lock_guard lock(rt.modules_mutex);
  if (*module->base_id != SHAPETRACE_UNREGISTERED_BASE || rt.refused_modules.count(module))
    return;
  const char* name = module->module_id ? module->module_id : "?";
  // Version 1 modules call the hooks unconditionally, which this runtime still handles.
  if (module->abi_version == 0 || module->abi_version > SHAPETRACE_ABI_VERSION) {
    rt.refused_modules.insert(module);
    std::fprintf(stderr,
                 "shapetrace: module '%s' was instrumented for ABI version %u, this runtime "
                 "implements %u; its events are not recorded (counted as lost)\n",
                 name, module->abi_version, SHAPETRACE_ABI_VERSION);
    return;
  }
  if (uint64_t(rt.next_function_id) + module->function_count > SHAPETRACE_UNREGISTERED_BASE) {
    rt.refused_modules.insert(module);
    std::fprintf(stderr, "shapetrace: too many instrumented functions; module '%s' not registered\n",
                 name);
    return;
  }
  wire::ModuleTable table;
  table.module_id = module->module_id ? module->module_id : "";
  table.base_id = rt.next_function_id;
  table.functions.reserve(module->function_count);
  for (uint32_t i = 0; i < module->function_count; ++i) {
    const __shapetrace_function& function = module->functions[i];
    auto text = [](const char* s) { return s ? std::string(s) : std::string(); };
    table.functions.push_back({table.base_id + i, text(function.mangled_name),
                               text(function.demangled_name), text(function.source_file),
                               function.line, exclusionOf(function.flags)});
  }
  rt.next_function_id += module->function_count;
  *module->base_id = table.base_id;
  if (module->abi_version >= 3 && module->image_enabled)
    addImageFlag(rt, module->image_enabled);
  rt.control_queue.push_back({0, table});
  rt.modules.push_back(std::move(table));
}

size_t noteAligned(size_t n, size_t alignment) { return (n + alignment - 1) & ~(alignment - 1); }

// Whether [address, address + size) lies in one of the object's loaded segments.
bool inObject(const dl_phdr_info& object, const void* address, size_t size) {
  const auto at = reinterpret_cast<uintptr_t>(address);
  for (int i = 0; i < object.dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = object.dlpi_phdr[i];
    const uintptr_t start = object.dlpi_addr + segment.p_vaddr;
    if (segment.p_type == PT_LOAD && at >= start && at + size <= start + segment.p_memsz)
      return true;
  }
  return false;
}

// The modules the pass's notes (abi.h) name in every loaded object, in load order. No other
// dlopen can be under way meanwhile: the runtime's constructor and the modules' run inside the
// dynamic loader's lock, so every object seen here is relocated.
std::vector<__shapetrace_module*> notedModules() {
  std::vector<__shapetrace_module*> found;
  dl_iterate_phdr(
      [](dl_phdr_info* object, size_t, void* data) -> int {
        auto& modules = *static_cast<std::vector<__shapetrace_module*>*>(data);
        for (int i = 0; i < object->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = object->dlpi_phdr[i];
          if (segment.p_type != PT_NOTE)
            continue;
          const size_t alignment = segment.p_align == 8 ? 8 : 4;
          const char* at = reinterpret_cast<const char*>(object->dlpi_addr + segment.p_vaddr);
          const char* const end = at + segment.p_memsz;
          while (size_t(end - at) >= sizeof(ElfW(Nhdr))) {
            ElfW(Nhdr) header;
            std::memcpy(&header, at, sizeof header);
            const char* name = at + sizeof header;
            const char* desc = name + noteAligned(header.n_namesz, alignment);
            const char* next = desc + noteAligned(header.n_descsz, alignment);
            if (next > end || next <= at)
              break;
            if (header.n_type == SHAPETRACE_MODULE_NOTE_TYPE && header.n_descsz == 4 &&
                header.n_namesz == sizeof SHAPETRACE_MODULE_NOTE_NAME &&
                std::memcmp(name, SHAPETRACE_MODULE_NOTE_NAME, header.n_namesz) == 0) {
              int32_t offset;
              std::memcpy(&offset, desc, sizeof offset);
              auto* module = reinterpret_cast<__shapetrace_module*>(const_cast<char*>(desc) + offset);
              if (inObject(*object, module, sizeof *module))
                modules.push_back(module);
            }
            at = next;
          }
        }
        return 0;
      },
      &found);
  return found;
}

void registerNotedModules() {
  for (__shapetrace_module* module : notedModules())
    if (module->base_id)
      registerModule(module);
}

pthread_once_t g_start_once = PTHREAD_ONCE_INIT;
pthread_key_t g_thread_key;
// Created when recording is first on (at start, or by shapetrace_set_enabled): a process that
// records nothing has no drain thread and no transport. Leaked on purpose in a forked child (its
// thread is gone).
std::atomic<Drain*> g_drain{nullptr};
std::mutex g_lifecycle_mutex;
std::atomic<pid_t> g_pid{0}; // this process's, set at start and in a fork child

void warn(const std::string& message) { std::fprintf(stderr, "shapetrace: %s\n", message.c_str()); }

uint64_t randomKey() {
  uint64_t key = 0;
  while (key == 0)
    if (getrandom(&key, sizeof key, 0) != sizeof key)
      key = monotonicNs() * 0x9E3779B97F4A7C15ull ^ uint64_t(getpid());
  return key;
}

std::string readFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

wire::ProcessStart describeProcess(uint64_t start_ns) {
  wire::ProcessStart start;
  start.pid = uint32_t(getpid());
  start.parent_pid = uint32_t(getppid());
  start.parent_process = runtime().parent_process_key;
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  start.executable = n > 0 ? std::string(exe, size_t(n)) : std::string();
  const std::string cmdline = readFile("/proc/self/cmdline");
  for (size_t at = 0; at < cmdline.size();) {
    const size_t end = cmdline.find('\0', at);
    start.arguments.push_back(cmdline.substr(at, end - at));
    at = end == std::string::npos ? cmdline.size() : end + 1;
    // SHAPETRACE_REDACT_ARGS: the program's name only (its arguments may hold secrets).
    if (flags().redact_args) break;
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  start.hostname = host;
  start.start_ns = start_ns;
  if (runtime().previous_image) {
    start.origin = wire::ProcessOrigin::Exec;
    start.previous_image = runtime().previous_image;
  } else if (start.parent_process) {
    start.origin = wire::ProcessOrigin::Forked;
  }
  timespec real;
  clock_gettime(CLOCK_REALTIME, &real);
  start.start_realtime_ns = int64_t(real.tv_sec) * 1000000000 + real.tv_nsec;
  for (auto& [name, value] : describeFlags(flags()))
    start.config.push_back({name, value});
  return start;
}

// A forked child writes its own recording next to its parent's (DIR-<pid>), an exec'd image next
// to the one it replaced (DIR-exec-<that image's key>).
std::string g_output_for_child;
// exit()'s status, learnt by an on_exit handler (exit_hooks.cpp) before the library destructor.
std::atomic<int32_t> g_exit_status{0};

// Why the default socket's directory may not be used (empty: it may). An explicit
// SHAPETRACE_ENDPOINT is the user's choice and used as given; the default one is checked as the
// collector checks it (wire::claimPrivateDirectory), and claimed when missing, so that no other
// user can put a socket there later.
std::string defaultSocketProblem(const Flags& config) {
  if (!config.endpoint.empty()) return {};
  return wire::claimPrivateDirectory(wire::defaultEndpointDirectory());
}

std::unique_ptr<Sink> makeSink() {
  const Flags& config = flags();
  std::string error;
  std::unique_ptr<Sink> sink;
  // The recording sink starts a thread (its writer): with a full signal mask,
  // so the program's signals never reach (and its instrumented handlers never run on) them.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  if (!config.output.empty()) {
    const std::string directory = g_output_for_child.empty() ? config.output : g_output_for_child;
    TransportScope runtime_threads; // the recording writer's thread is the runtime's
    sink = makeRecordingSink(directory, error);
  } else if (const std::string problem = defaultSocketProblem(config); !problem.empty()) {
    // Another user may have made the directory to receive our stream: send nothing. Said only
    // when asked, as a program that was never meant to be traced must print nothing of ours.
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    if (config.verbose)
      warn(problem + "; not connecting to the default collector socket, tracing is off");
    return nullptr;
  } else {
    const std::string endpoint =
        config.endpoint.empty() ? wire::defaultEndpoint() : config.endpoint;
    sink = makeChannelSink(endpoint, config.channel_bytes, error);
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (!sink)
    warn(error + "; tracing is off");
  return sink;
}

// The rings shared with the collector (ring_arena.h), when the stream goes to one and anything
// may be recorded: at start and in a forked child, before any thread takes a ring.
void makeRings() {
  Runtime& rt = runtime();
  if (flags().output.empty() && (flags().enabled || rt.on_demand.load()))
    ringArena().create(ringCapacityFor(rt.ring_bytes), rt.process_key.load());
}

// Creates the drain for this process (at start and in a forked child). False: tracing stays off.
bool startDrain() {
  Runtime& rt = runtime();
  std::unique_ptr<Sink> sink = makeSink();
  if (!sink)
    return false;
  const ClockPair start = readClockPair(rt.tick_source);
  // Until the first measurement, assume the counter's nominal rate (never used for a sent
  // timestamp: the first ProcessStart waits for a measured calibration).
  const double nominal = nominalTicksPerNs(rt.tick_source);
  Drain* drain = new Drain(rt, std::move(sink), Calibration(start, nominal), describeProcess(start.ns));
  g_drain.store(drain);
  // Attach on demand: recording starts as the drain found the collector, before its thread can
  // switch it.
  if (rt.on_demand.load())
    setRecordingEnabled(drain->attached());
  if (!drain->start()) {
    warn("cannot start the drain thread; tracing is off");
    return false;
  }
  return true;
}

void onThreadExit(void* value) {
  auto* state = static_cast<ThreadState*>(value);
  ThreadLocal& local = t_local;
  local.busy = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  local.state = nullptr;
  local.exited = true;
  local.resetCalls();
  state->finished.store(true, std::memory_order_release);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  local.busy = false;
}

void lockAllForFork() {
  Runtime& rt = runtime();
  g_lifecycle_mutex.lock();
  rt.recording_switch.lock();
  rt.modules_mutex.lock();
  rt.strings.mutex().lock();
}

void unlockAllAfterFork() {
  Runtime& rt = runtime();
  rt.strings.mutex().unlock();
  rt.modules_mutex.unlock();
  rt.recording_switch.unlock();
  g_lifecycle_mutex.unlock();
}

// Fork child: a new process in the stream (fresh key, parent recorded), with only the forking
// thread's ring, emptied, and a fresh drain and connection.
void onForkChild() {
  unlockAllAfterFork();
  g_pid.store(getpid());
  Runtime& rt = runtime();
  if (rt.phase.load() != Phase::Running)
    return;
  ThreadLocal& local = t_local;
  ThreadState* mine = local.state;
  // The parent's rings are not ours to write or free: its arena goes first (unmapped here, its
  // pages untouched), then the states of its other threads.
  ringArena().abandonAfterFork();
  rt.registry.resetToOnly(mine);
  // Calls open in the parent are not this process's: their exits are not recorded here.
  local.resetCalls();
  forgetJumpPointsAfterFork();
  g_hot.late_events.store(0);
  if (Drain* drain = g_drain.load())
    drain->abandonAfterFork();
  g_drain.store(nullptr);
  // The parent's descriptors (and its transport's) stay open here until exec, but are not ours.
  forgetRuntimeDescriptors();
  if (!flags().output.empty())
    g_output_for_child = flags().output + "-" + std::to_string(getpid());
  rt.parent_process_key = rt.process_key.load();
  rt.previous_image = 0;
  rt.process_key = randomKey();
  // The child's own rings; the forking thread's ring moves there, empty.
  makeRings();
  if (mine && !giveOwnRingAfterFork(mine)) {
    // No memory for a ring: the thread records nothing more here.
    pthread_setspecific(g_thread_key, nullptr);
    rt.registry.resetToOnly(nullptr);
    local.state = nullptr;
    local.exited = true;
    mine = nullptr;
  }
  if (mine) {
    mine->ring.pending_drops.store(0);
    mine->nested_drops.store(0);
    mine->drain = DrainCursor{};
    mine->frames_tracked = false;
    mine->tid = uint32_t(gettid());
    mine->start_ticks = readTicks();
    mine->describeRing();
  }
  clearThrottleTable();
  rt.control_queue.clear();
  for (const wire::ModuleTable& module : rt.modules)
    rt.control_queue.push_back({0, module});
  // Recording off: the drain starts when it is switched on (or, on demand, to watch for a
  // collector: the child connects on its own).
  if ((recordingEnabled() || rt.on_demand.load()) && !startDrain()) {
    setRecordingEnabled(false);
    rt.phase.store(Phase::ShutDown);
    return;
  }
  // The child's start leaves at once, as a new thread's first event makes it (attachThread): a
  // child killed a moment later is in the stream, and its rings with it.
  if (Drain* drain = g_drain.load(); drain && mine)
    drain->wake();
}

// SHAPETRACE_EXEC_FROM, set by the image that exec'd this one (execLinkEntry): this image continues
// that process. Ignored when its pid is not ours (it leaked into another process's environment),
// and removed, so that the program sees the environment it was given.
void linkToPreviousImage() {
  const char* link = getenv(kExecFromVariable);
  if (!link)
    return;
  unsigned long pid = 0;
  unsigned long long previous = 0, parent = 0;
  if (std::sscanf(link, "%lu:%llx:%llx", &pid, &previous, &parent) == 3 &&
      pid == unsigned(getpid())) {
    runtime().previous_image = previous;
    runtime().parent_process_key = parent;
    if (!flags().output.empty()) {
      char key[17];
      std::snprintf(key, sizeof key, "%016llx", previous);
      g_output_for_child = flags().output + "-exec-" + key;
    }
  }
  unsetenv(kExecFromVariable);
}

void startOnce() {
  Runtime& rt = runtime();
  const Flags& config = flags();
  linkToPreviousImage();
  resolveJumpFunctions();
  // exit()'s status: for a runtime dlopen'ed after main started (its __libc_start_main never runs
  // again), a handler registered now runs before the library destructors. At program start this one
  // runs too late and exit_hooks.cpp's, registered just before main, tells the status in time.
  on_exit([](int status, void*) { noteExitStatus(status); }, nullptr);
  // Every module of the objects loaded so far, before any of their constructors (which run after
  // ours: they depend on the runtime) or another library's can call into one.
  registerNotedModules();
  const char* why = "";
  rt.tick_source = selectTickSource(config.clock.c_str(), &why);
  if (config.clock != "auto" && config.clock != "monotonic" && rt.tick_source != TickSource::Counter)
    warn("SHAPETRACE_CLOCK=" + config.clock + ": " + why + "; using CLOCK_MONOTONIC");
  g_tick_source = rt.tick_source;
  rt.ring_bytes = config.ring_bytes;
  rt.enabled_at_start = config.enabled;
  // Attach on demand (docs/runtime.md): with a collector as destination and SHAPETRACE_ENABLED
  // not given, recording follows the collector's connection.
  rt.on_demand.store(config.output.empty() && !getenv("SHAPETRACE_ENABLED"));
  g_hot.blocking = config.blocking;
  g_hot.blocking_wait.store(config.blocking);
  if (ThrottleLimits limits; parseThrottle(config.throttle, limits)) {
    if (makeThrottleTable())
      g_hot.throttled = throttleTable();
    else
      warn("SHAPETRACE_THROTTLE: no memory for the table of throttled functions; not throttling");
  }
  rt.process_key = randomKey();
  g_pid.store(getpid());
  pthread_key_create(&g_thread_key, onThreadExit);
  pthread_atfork(lockAllForFork, unlockAllAfterFork, onForkChild);
  makeRings();
  // Recording off at start: no drain, no transport, no thread until shapetrace_set_enabled(1).
  // On demand, the drain starts (recording or not) to watch for a collector.
  rt.phase.store(Phase::Running, std::memory_order_release);
  if ((config.enabled || rt.on_demand.load()) && !startDrain()) {
    rt.phase.store(Phase::ShutDown);
    setRecordingEnabled(false);
    return;
  }
  if (!rt.on_demand.load())
    setRecordingEnabled(config.enabled);
  if (config.flush_on_signal)
    flushOnTerminatingSignals();
}

} // namespace

void ensureStarted() {
  // The drain thread and the fork handlers must not see their own hooks.
  const int saved_errno = errno;
  pthread_once(&g_start_once, startOnce);
  errno = saved_errno;
}

ThreadState* attachThread(ThreadLocal& local) {
  Runtime& rt = runtime();
  // The runtime's own threads and the transport's record nothing: instrumented code reaches them
  // only through the program's symbols (an executable's copy of a std::string member interposes
  // libstdc++'s, and a runtime thread may call it), and those calls are not the program's.
  if (local.runtime_thread || isRuntimeThread()) {
    local.runtime_thread = true;
    return nullptr;
  }
  if (local.exited || rt.phase.load(std::memory_order_acquire) != Phase::Running) {
    g_hot.late_events.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  ThreadState* state = createThreadState(rt.ring_bytes);
  if (!state) {
    g_hot.late_events.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  state->tid = uint32_t(gettid());
  state->start_ticks = readTicks();
  prctl(PR_GET_NAME, state->name);
  state->describeRing();
  pthread_setspecific(g_thread_key, state);
  local.state = state;
  rt.registry.push(state);
  // The process's (or this thread's) first event: announced now, not at the next interval, so
  // that a process that lives a millisecond is in the stream.
  if (Drain* drain = g_drain.load())
    drain->wake();
  return state;
}

namespace {

// Whether the image's end at a process boundary is ours to announce: not in a vfork child (it runs
// in its parent's memory), not on a runtime thread, only while recording runs.
Drain* drainForBoundary() {
  if (getpid() != g_pid.load() || t_local.runtime_thread ||
      runtime().phase.load() != Phase::Running)
    return nullptr;
  return g_drain.load();
}

} // namespace

bool endImageForExec(const char* path) {
  Drain* drain = drainForBoundary();
  if (!drain)
    return false;
  const int saved_errno = errno;
  const bool ended = drain->endImage(wire::EndReason::Exec, 0, path,
                                     uint32_t(flags().exit_timeout_ms)); // at most 3600000
  errno = saved_errno;
  return ended;
}

void setRecordingEnabled(bool on) {
  std::atomic_ref<uint8_t>(__shapetrace_enabled).store(on ? 1 : 0, std::memory_order_release);
  g_hot.record_every_call.store(on && g_hot.throttled == nullptr, std::memory_order_release);
  Runtime& rt = runtime();
  std::lock_guard lock(rt.modules_mutex);
  copyFlagToImages(rt);
}

void setRecordingOffAtImageEnd() {
  std::atomic_ref<uint8_t>(__shapetrace_enabled).store(0, std::memory_order_release);
  g_hot.record_every_call.store(0, std::memory_order_release);
  Runtime& rt = runtime();
  std::unique_lock lock(rt.modules_mutex, std::try_to_lock);
  if (lock.owns_lock())
    copyFlagToImages(rt);
}

void execFailed(int error) {
  if (Drain* drain = drainForBoundary())
    drain->resumeAfterFailedExec(error);
}

namespace {
// The image ends now, said `reason`: everything is sent; nothing of ours runs after this, and the
// hooks of whatever code still runs record nothing.
void endImageNow(wire::EndReason reason, int status) {
  Drain* drain = drainForBoundary();
  if (!drain)
    return;
  drain->endImage(reason, status, nullptr, uint32_t(flags().exit_timeout_ms));
  runtime().phase.store(Phase::ShutDown);
  setRecordingOffAtImageEnd();
}
} // namespace

void endImageForExit(int status) { endImageNow(wire::EndReason::ExitImmediately, status); }

void endImageForSignal(int signal) { endImageNow(wire::EndReason::Signal, signal); }

void noteExitStatus(int status) { g_exit_status.store(status); }

uint64_t newProcessKey() { return randomKey(); }

bool execLinkEntry(char* buffer, size_t size) {
  if (getpid() != g_pid.load() || runtime().phase.load() != Phase::Running)
    return false;
  const Runtime& rt = runtime();
  const int n = std::snprintf(buffer, size, "%s=%u:%llx:%llx", kExecFromVariable,
                              unsigned(getpid()), (unsigned long long)rt.process_key.load(),
                              (unsigned long long)rt.parent_process_key);
  return n > 0 && size_t(n) < size;
}

bool flushFor(uint32_t timeout_ms) {
  // No lifecycle lock here: process exit must not wait for a flush's timeout (stop() wakes it).
  if (runtime().phase.load() != Phase::Running)
    return false;
  Drain* drain = g_drain.load();
  return !drain || drain->flush(timeout_ms); // no drain: nothing was ever recorded
}

namespace {

// Process exit. A destructor of the runtime library runs after the program's own exit-time code
// (atexit handlers, static destructors, and the .fini of every library that depends on us), so
// events up to that point are recorded.
__attribute__((destructor)) void onProcessExit() {
  Runtime& rt = runtime();
  if (rt.phase.load() != Phase::Running)
    return;
  ThreadLocal& local = t_local;
  local.busy = true; // this thread plays the drain from here on
  rt.phase.store(Phase::ShutDown);
  std::lock_guard lock(g_lifecycle_mutex);
  if (Drain* drain = g_drain.load())
    drain->stop(g_exit_status.load());
  setRecordingEnabled(false);
  local.busy = false;
}

__attribute__((constructor)) void onLoad() { ensureStarted(); }

// Appends a thread-scoped marker (annotation, thread name) to the calling thread's ring.
shapetrace_status pushMarker(const Event& first, const Event* second) {
  ThreadLocal& local = t_local;
  if (local.busy)
    return SHAPETRACE_DROPPED;
  local.busy = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  ThreadState* state = local.state ? local.state : attachThread(local);
  shapetrace_status status = SHAPETRACE_NOT_RUNNING;
  if (state) {
    const bool pushed = second ? state->ring.tryPushPair(first, *second) : state->ring.tryPush(first);
    status = pushed ? SHAPETRACE_OK : SHAPETRACE_DROPPED;
  }
  std::atomic_signal_fence(std::memory_order_seq_cst);
  local.busy = false;
  return status;
}

bool running() { return runtime().phase.load(std::memory_order_acquire) == Phase::Running; }

} // namespace
} // namespace shapetrace::rt

using namespace shapetrace;
using namespace shapetrace::rt;

SHAPETRACE_EXPORT void __shapetrace_register_module(struct __shapetrace_module* module) {
  if (!module || !module->base_id)
    return;
  ensureStarted();
  // A module loaded with the runtime was registered at start through its note; a dlopen'ed one is
  // registered here, with every other module of its object.
  if (*module->base_id == SHAPETRACE_UNREGISTERED_BASE)
    registerNotedModules();
  registerModule(module);
}

SHAPETRACE_EXPORT void __shapetrace_unregister_module(struct __shapetrace_module* module) {
  if (!module || !module->base_id)
    return;
  Runtime& rt = runtime();
  std::lock_guard lock(rt.modules_mutex);
  // Another module may be loaded at this one's address later.
  rt.refused_modules.erase(module);
  if (*module->base_id == SHAPETRACE_UNREGISTERED_BASE || module->abi_version < 3 ||
      !module->image_enabled)
    return;
  auto& images = rt.image_flags;
  for (auto image = images.begin(); image != images.end(); ++image)
    if (image->flag == module->image_enabled) {
      if (--image->modules == 0)
        images.erase(image);
      return;
    }
}

SHAPETRACE_EXPORT shapetrace_status shapetrace_annotate(const char* key, int64_t value) {
  if (!key || !*key)
    return SHAPETRACE_INVALID_ARGUMENT;
  if (!running())
    return SHAPETRACE_NOT_RUNNING;
  // While recording is off (no collector attached, or switched off) there is no recorded call to
  // annotate, and nothing empties the ring: a service annotating every request would fill it
  // with annotations that the next collector then receives one by one.
  if (!recordingEnabled())
    return SHAPETRACE_OK;
  const uint32_t id = runtime().strings.intern(key);
  if (id == StringTable::kFull)
    return SHAPETRACE_DROPPED;
  const Event marker{readTicks(), id, EventKind(kAnnotationMarker)};
  const Event payload{uint64_t(value), 0, EventKind(kAnnotationValue)};
  return pushMarker(marker, &payload);
}

SHAPETRACE_EXPORT shapetrace_status shapetrace_set_thread_name(const char* name) {
  if (!name || !*name)
    return SHAPETRACE_INVALID_ARGUMENT;
  if (!running())
    return SHAPETRACE_NOT_RUNNING;
  const uint32_t id = runtime().strings.intern(name);
  if (id == StringTable::kFull)
    return SHAPETRACE_DROPPED;
  return pushMarker(Event{readTicks(), id, EventKind(kThreadNameMarker)}, nullptr);
}

SHAPETRACE_EXPORT void shapetrace_set_enabled(int enabled) {
  if (!running())
    return;
  {
    // The program decides from now on: recording no longer follows the collector's connection.
    std::lock_guard lock(runtime().recording_switch);
    runtime().on_demand.store(false);
  }
  if (enabled && !g_drain.load()) {
    std::lock_guard lock(g_lifecycle_mutex);
    if (!g_drain.load() && running() && !startDrain())
      return;
  }
  setRecordingEnabled(enabled != 0);
}

SHAPETRACE_EXPORT int shapetrace_is_enabled(void) {
  return recordingEnabled() ? 1 : 0;
}

SHAPETRACE_EXPORT shapetrace_status shapetrace_flush(uint32_t timeout_ms) {
  if (!running())
    return SHAPETRACE_NOT_RUNNING;
  if (t_local.runtime_thread)
    return SHAPETRACE_INVALID_ARGUMENT;
  return flushFor(timeout_ms) ? SHAPETRACE_OK : SHAPETRACE_TIMEOUT;
}
