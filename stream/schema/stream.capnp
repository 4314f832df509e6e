# The shapetrace stream: what a runtime sends, what the collector records, what the analyzer reads.
#
# Every message, on a ZeroMQ socket or in a recording frame, is one StreamItem. A process is named by
# `process`, a random 64-bit key drawn at process start (and again in a forked child), so pid reuse
# and fork never mix two streams. Items of one thread are sent in order; EventBatch.sequence counts
# that thread's batches from 0, so a missing or repeated batch is detectable, and a Gap says how many
# events the runtime dropped between two batches.
#
# Compatibility: `version` is formatVersion of the writer. Readers reject items from a newer major
# format; new fields are only ever appended (Cap'n Proto keeps old readers working).
@0xfbf6d23bba2056b4;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("shapetrace::wire::schema");

const formatVersion :UInt16 = 1;

struct StreamItem {
  version @0 :UInt16;
  process @1 :UInt64;
  union {
    processStart @2 :ProcessStart;
    moduleTable @3 :ModuleTable;
    threadStart @4 :ThreadStart;
    threadName @5 :ThreadName;
    threadEnd @6 :ThreadEnd;
    eventBatch @7 :EventBatch;
    gap @8 :Gap;
    annotation @9 :Annotation;
    processEnd @10 :ProcessEnd;
    execFailed @11 :ExecFailed;
    exitStatus @12 :ExitStatus;
  }
}

enum ClockSource {
  tsc @0;        # invariant rdtsc, calibrated by the runtime against CLOCK_MONOTONIC
  monotonic @1;  # clock_gettime(CLOCK_MONOTONIC) read on every event
  genericTimer @2; # AArch64 CNTVCT_EL0 (rate from CNTFRQ_EL0), calibrated as the TSC is; readers
                   # older than it see an enum value they do not know and read it as monotonic
}

# How the runtime turned ticks into nanoseconds: ns = refNs + (ticks - refTicks) / ticksPerNs.
# Timestamps on the wire are already nanoseconds on CLOCK_MONOTONIC; this is for the record.
struct ClockCalibration {
  source @0 :ClockSource;
  ticksPerNs @1 :Float64;
  refTicks @2 :UInt64;
  refNs @3 :UInt64;
}

struct ConfigEntry {
  name @0 :Text;   # a SHAPETRACE_* variable
  value @1 :Text;  # the value in force (default or from the environment)
}

# How the process (one program image run by one pid) began.
enum ProcessOrigin {
  started @0;  # a program started (or exec'd by a process that was not traced)
  forked @1;   # a fork() of the traced process `parentProcess`
  exec @2;     # an exec() by the traced image `previousImage` (same pid): it replaced that image
  execFailed @3; # the image `previousImage` ended for an exec that failed, and goes on under this
                 # key (an ExecFailed follows): its calls open until then are that key's, their
                 # exits are not sent here
}

struct ProcessStart {
  pid @0 :UInt32;
  parentPid @1 :UInt32;
  parentProcess @2 :UInt64;    # the key of the traced process that forked this pid, 0 if none
  executable @3 :Text;
  arguments @4 :List(Text);
  hostname @5 :Text;
  startNs @6 :UInt64;          # CLOCK_MONOTONIC
  startRealtimeNs @7 :Int64;   # CLOCK_REALTIME at the same moment, to show wall-clock times
  clock @8 :ClockCalibration;
  config @9 :List(ConfigEntry);
  origin @10 :ProcessOrigin;
  previousImage @11 :UInt64;   # origin exec: the key of the image this one replaced, else 0
}

struct Function {
  id @0 :UInt32;               # global id within the process
  mangledName @1 :Text;
  demangledName @2 :Text;
  sourceFile @3 :Text;
  line @4 :UInt32;
  # Not instrumented: the user's filters left it out at build (docs/pass.md, "Filters"), so the
  # recording holds none of its calls; its id is never in an event. Added after format version 1's
  # first release: older readers see such a function as one never called, and so do readers of an
  # Exclusion newer than they know.
  excluded @5 :Exclusion;
}

enum Exclusion {
  none @0;      # instrumented
  byRule @1;    # an exclude rule, or no include rule, of the rule file (SHAPETRACE_PASS_FILTER)
  bySize @2;    # a loop-free leaf under the minimum size (SHAPETRACE_PASS_MIN_SIZE)
}

# A module's functions, sent when the module registers (at start, or later for dlopen).
struct ModuleTable {
  moduleId @0 :Text;
  baseId @1 :UInt32;
  functions @2 :List(Function);
}

struct ThreadStart {
  thread @0 :UInt32;           # kernel thread id
  timestampNs @1 :UInt64;
  name @2 :Text;
}

struct ThreadName {
  thread @0 :UInt32;
  timestampNs @1 :UInt64;
  name @2 :Text;
}

struct ThreadEnd {
  thread @0 :UInt32;
  timestampNs @1 :UInt64;
  eventsRecorded @2 :UInt64;   # events this thread wrote into its ring
  eventsDropped @3 :UInt64;    # events lost because the ring was full or sending failed
  batches @4 :UInt64;          # batches sent for this thread (next sequence number)
}

enum EventEncoding {
  # Per event: varint(zigzag(timestamp - previous) << 2 | kind), then varint(functionId), where
  # kind is 0 enter, 1 exit, 2 unwind exit (an exception left the function), 3 abandoned exit (a
  # longjmp jumped over the frame; sent at the time of the jump, innermost frame first). Kind 3
  # came after format version 1's first release: older readers reject such batches as malformed.
  # The first event's delta is taken from EventBatch.baseNs. Chosen by measurement: see
  # docs/BENCHMARKS.md, "Event encoding".
  deltaVarint @0;
}

struct EventBatch {
  thread @0 :UInt32;
  sequence @1 :UInt64;
  count @2 :UInt32;            # number of events in `events`
  baseNs @3 :UInt64;
  encoding @4 :EventEncoding;
  events @5 :Data;
  # What else happened on the thread while these events were recorded, in order, each placed
  # exactly by its `beforeEvent` (the index in `events` of the first event recorded after it;
  # `count` when none was). Added after format version 1's first release: older readers ignore
  # them. The runtime sends annotations here rather than as items of their own, which would cut a
  # batch at every annotation (a service that annotates each request would send batches of a few
  # dozen events).
  annotations @6 :List(Annotation);
  tracerWaits @7 :List(TracerWait);
  throttles @8 :List(Throttle);
  callValues @9 :List(CallValues);
}

# The runtime stopped recording `function` (SHAPETRACE_THROTTLE, docs/runtime.md): this thread's
# call of it that ended at `timestampNs`, the event before the mark, was the `shortCalls`-th call
# of it, over all threads, shorter than the throttle's limit. From then on its calls are not
# recorded (those already open keep their exits), counted instead (ProcessEnd.throttledCalls).
# Added after format version 1's first release: older readers ignore it.
struct Throttle {
  beforeEvent @0 :UInt32;
  timestampNs @1 :UInt64;
  function @2 :UInt32;
  shortCalls @3 :UInt64;
}

# Calls of a throttled function that were not recorded, in all.
struct ThrottledCalls {
  function @0 :UInt32;
  calls @1 :UInt64;
}

# Arguments or the return value of one call of a function chosen at compile time (docs/pass.md,
# "Arguments and return values"), placed by `beforeEvent` as annotations are: the arguments right
# after the call's enter event, the return value right before its exit event (none when an
# exception or a longjmp left the call). The call is the innermost one open at that place, whose
# function is `functionId`; a batch cut between the enter and its arguments puts them at the
# start of the next batch (beforeEvent 0), which may then carry no event (its baseNs is then the
# time of the thread's last event). Added after format version 1's first release: older
# readers ignore them.
struct CallValues {
  beforeEvent @0 :UInt32;
  functionId @1 :UInt32;
  values @2 :List(CallValue);
}

struct CallValue {
  position @0 :UInt8;          # N of argN (`this` is arg1, an sret pointer is not counted); 0: the
                               # return value
  type @1 :ValueType;
  bits @2 :UInt64;             # the value widened to 64 bits, as the type says (a string's:
                               # its address)
  text @3 :Data;               # type string: the bytes read at the address, at most the cap
                               # (SHAPETRACE_VALUE_TEXT_MAX, readers refuse more than 4096)
  textState @4 :TextState;     # type string: what `text` holds. Both added after format
                               # version 1's first release: older readers ignore them
}

enum TextState {
  complete @0;                 # the whole string, up to its terminating NUL (not included), or
                               # a std::string_view's bytes, all of them (NULs included)
  truncated @1;                # the first `cap` bytes of a longer string or view
  unreadable @2;               # the address (or a page after the bytes read) is not mapped
  redacted @3;                 # SHAPETRACE_REDACT_ARGS: the text was not read
}

enum ValueType {
  signed @0;                   # a two's complement integer, sign-extended
  unsigned @1;                 # an integer, zero-extended
  pointer @2;                  # an address
  float @3;                    # the bits of an IEEE 754 double (a float is widened to one)
  string @4;                   # a `const char*` or `std::string_view` chosen as
                               # `FUNCTION@argN/s`: bits is its address (0: null), the text in
                               # `text`; older readers show the address
}

# The runtime made the thread wait `durationNs` for room in its ring (lossless recording,
# SHAPETRACE_BLOCKING): time the tracer caused, not the program. It began at `startNs`, after the
# event before it; the calls open then were open through it.
struct TracerWait {
  beforeEvent @0 :UInt32;
  startNs @1 :UInt64;
  durationNs @2 :UInt64;
}

# The runtime dropped `dropped` events of `thread` between batch afterSequence and the next batch.
struct Gap {
  thread @0 :UInt32;
  dropped @1 :UInt64;
  afterSequence @2 :UInt64;    # the last batch sent before the drop; UInt64 max if none was
  fromNs @3 :UInt64;           # time of the first and last dropped event
  toNs @4 :UInt64;
}

struct Annotation {
  thread @0 :UInt32;
  timestampNs @1 :UInt64;
  key @2 :Text;
  value @3 :Int64;
  beforeEvent @4 :UInt32;      # in EventBatch.annotations (above); 0 in an item of its own
}

# How the runtime saw its process image end. Every thread ends with it (a ThreadEnd is sent for
# each thread still alive). A process that never sends one was killed, crashed, or ran when the
# stream stopped: what it had not sent is lost, in an unknown amount.
enum EndReason {
  exit @0;            # exit() or a return from main: exitStatus is exit's argument
  exec @1;            # the image is being replaced by execPath (if that fails, the image goes on
                      # under a new key: a ProcessStart with origin execFailed)
  exitImmediately @2; # _exit() or _Exit() (the parent of daemon() too): exitStatus is its argument
  signal @3;          # a signal whose default action ends the process (SIGTERM, SIGINT, SIGHUP)
                      # arrived: everything was sent, then the signal ended it; exitStatus is the
                      # signal's number
}

struct ProcessEnd {
  timestampNs @0 :UInt64;
  eventsRecorded @1 :UInt64;
  eventsDropped @2 :UInt64;    # every event lost, including those still unsent at the end
  exitStatus @3 :Int32;        # reason exit or exitImmediately: the status passed; signal: its number
  reason @4 :EndReason;
  execPath @5 :Text;           # reason exec: the program being executed
  # Written by the collector on behalf of a process that died without warning (SIGKILL, a crash no
  # handler saw), once it finished the process's rings and could tell nothing else was lost
  # (docs/collector.md). Then reason is signal, exitStatus the signal's number as the kernel kept
  # it (0: not known, the process was reaped before the collector looked), or reason
  # exitImmediately with the status of a process that exited without its runtime seeing it;
  # timestampNs is the last event's the collector knows; eventsDropped counts the drops the
  # stream reported (drops the process had counted but not reported died with it). Added after
  # format version 1's first release: older readers ignore it.
  writtenByCollector @6 :Bool;
  # SHAPETRACE_THROTTLE: per function throttled (EventBatch.throttles), its calls not recorded.
  # Added after format version 1's first release: older readers ignore it.
  throttledCalls @7 :List(ThrottledCalls);
}

# Why a process whose ProcessStart says origin execFailed exists: the exec of `path` by the image
# it continues failed with `error`. Sent right after that ProcessStart.
struct ExecFailed {
  timestampNs @0 :UInt64;
  path @1 :Text;
  error @2 :Int32;             # the errno exec returned
}

# How a process ended, as its parent saw it with waitpid(): written by `shapetrace record` (not by
# the runtime) for every process it reaped. `process` is the key of the last image that pid ran,
# 0 when no traced process had that pid (a program not built with the plugin).
struct ExitStatus {
  pid @0 :UInt32;
  timestampNs @1 :UInt64;      # CLOCK_MONOTONIC when it was reaped
  exitCode @2 :Int32;          # the exit status when it exited, -1 when a signal killed it
  signal @3 :Int32;            # the signal that killed it, 0 when it exited
  coreDumped @4 :Bool;
}
