# A host's summary for the fleet view (docs/fleet.md): what `shapetrace live --nats` publishes to a
# NATS JetStream stream every window, and what `shapetrace fleet` merges.
#
# A summary is cumulative: it holds the host's whole analysis so far as per-thread results (the
# analyzer's ThreadResult, analyzer/thread_result.h), with the function tables of the processes
# those threads belong to. The latest summary of a host supersedes every earlier one, so a summary
# that was never delivered loses nothing once a later one is. The fleet merges the latest summary
# of every host with the analyzer's own merge, in (process, thread) order: the merged model is the
# one a single analyzer computes over the union of the hosts' recordings.
#
# Not carried: the exact-sequence DAG (it grows with every distinct call sequence, millions of nodes
# on a long run, where shapes stay in the hundreds) and the extensions' results.
#
# Compatibility: `version` is summaryVersion of the writer; readers reject other versions. New
# fields are only ever appended.
@0xf7f5e0b7801f2335;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("shapetrace::wire::summary_schema");

const summaryVersion :UInt16 = 1;

struct HostSummary {
  version @0 :UInt16;
  host @1 :Text;          # the host's name (--host), unique in the fleet
  sequence @2 :UInt64;    # the run's summaries counted from 1; a re-sent one repeats its number
  windowEndNs @3 :Int64;  # wall-clock (CLOCK_REALTIME) time the summary was taken
  recording @4 :Text;     # where the host records, for links back to its events ("" if unknown)
  functions @5 :List(Function);
  threads @6 :List(Thread);
  diagnostics @7 :List(Counter); # counted before the threads (bad input, losses), by name
  run @8 :UInt64;         # drawn when the host's publisher starts; `sequence` counts within a run
  progress @9 :Progress;  # how far the host's analysis was when the summary was taken
}

# "Analysed X of Y events received" on the host (analyzer/live_progress.h): what the fleet view
# shows as its own lag, summed over hosts. Absent (all zero) from hosts that predate it.
struct Progress {
  receivedEvents @0 :UInt64;
  analysedEvents @1 :UInt64;
  waitingEvents @2 :UInt64;
  missedItems @3 :UInt64;
  final @4 :Bool;         # the host's last summary: its analysis stopped after it
}

struct Function {
  process @0 :UInt64;
  id @1 :UInt32;
  mangledName @2 :Text;
  demangledName @3 :Text;
  sourceFile @4 :Text;
  line @5 :UInt32;
}

struct Counter {
  name @0 :Text;           # the analyzer's statistic name (analyzer/stats.inc)
  count @1 :UInt64;
}

struct Moments {
  count @0 :UInt64;
  mean @1 :Float64;
  m2 @2 :Float64;
  min @3 :UInt64;
  max @4 :UInt64;
  sumLow @5 :UInt64;       # the exact sum of durations, 128 bits
  sumHigh @6 :UInt64;
}

struct Bucket {
  index @0 :UInt32;        # LogHistogram bucket index (analyzer/running_stats.h)
  count @1 :UInt64;
}

struct Stats {
  moments @0 :Moments;
  histogram @1 :List(Bucket);
  calls @2 :UInt64;        # measured and unmeasured
  outliers @3 :UInt64;
}

# A shape (Def. 5.2): base function (the process's function id) and the set of its children's
# shapes, as ids of this thread's shapes (each smaller than the shape's own id, 1 for the first).
struct Shape {
  function @0 :UInt32;
  children @1 :List(UInt32);
  stats @2 :Stats;
  timeline @3 :List(Cell);
}

struct Cell {
  bin @0 :UInt64;
  count @1 :UInt64;
  busyNs @2 :UInt64;
}

struct FunctionStats {
  id @0 :UInt32;
  stats @1 :Stats;
  # Its measured outermost calls' time (a recursive chain counted once); 0 in summaries written
  # before it existed.
  inclusiveNs @2 :UInt64;
  # The largest of one thread's inclusive times, and the threads that called it: the thread's
  # own and 1, or for folded threads their largest and their count; 0 in older summaries (taken
  # as inclusiveNs and 1).
  busiestThreadNs @3 :UInt64;
  threads @4 :UInt64;
}

struct Outlier {
  startNs @0 :UInt64;
  durationNs @1 :UInt64;
  function @2 :UInt32;
  shape @3 :UInt32;
  functionOutlier @4 :Bool;
  shapeOutlier @5 :Bool;
  functionMean @6 :Float64;
  functionSd @7 :Float64;
  functionCount @8 :UInt64;
  shapeMean @9 :Float64;
  shapeSd @10 :Float64;
  shapeCount @11 :UInt64;
  score @12 :Float64;
  atExit @13 :Bool;                # started after its thread's call of main returned
}

struct Thread {
  process @0 :UInt64;
  thread @1 :UInt32;
  name @2 :Text;
  ended @3 :Bool;
  events @4 :UInt64;
  calls @5 :UInt64;
  openCalls @6 :UInt64;
  shapes @7 :List(Shape);          # in id order, from id 1
  functions @8 :List(FunctionStats);
  outliers @9 :List(Outlier);
  diagnostics @10 :List(Counter);
  timelineShift @11 :UInt8;
  timelineMaxBins @12 :UInt32;
  timelineStarted @13 :Bool;
  timelineFirstBin @14 :UInt64;
  outliersFound @15 :UInt64;       # every call judged an outlier; `outliers` keeps the most extreme
}
