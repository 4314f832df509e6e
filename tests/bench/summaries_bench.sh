#!/bin/sh
# The structure summaries' cost (docs/BENCHMARKS.md, "Structure summaries"): a 20-second recording
# of the example service (made once, or given), then
#   1. in one process, its thread with the most events replayed from memory through the shape
#      builder and through each encoding of `shapetrace summarize`: ns per event and the ratio;
#   2. the commands end to end on that thread: `shapetrace analyze` (every thread) beside
#      `shapetrace summarize --thread T -e E` for each encoding, and `shapetrace compare` of two
#      workers, each with wall and CPU time and peak memory (RSS counts the recording's mapped
#      pages);
#   3. `shapetrace analyze` with and without the summaries extension.
# Run it on a quiet machine (load < 1); it prints the load before and after.
#
#   tests/bench/summaries_bench.sh [BUILD_DIR] [RECORDING] [REPEATS]
set -eu
build=${1:-build}
rec=${2:-${TMPDIR:-/tmp}/shapetrace-summaries-bench-kvstore}
repeats=${3:-3}
shapetrace=$build/bin/shapetrace
if [ ! -d "$rec" ]; then
  "$shapetrace" record -o "$rec" -- "$build/examples/kvstore-traced/bin/kvstore" --seconds 20 \
    --threads 4 --data-dir "$rec.data" >/dev/null
  rm -rf "$rec.data"
fi
du -sh "$rec"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
out=$("$build/tests/bench/summaries_bench" "$rec" --repeats "$repeats")
echo "$out"
thread=$(echo "$out" | sed -n 's/^thread .* (\([0-9]*\)): .*/\1/p')
timed() {
  label=$1
  shift
  /usr/bin/time -f "$label: %e s wall, %U s user, %S s sys, %M KiB peak RSS" "$@" >/dev/null
}
timed "analyze -j 1 (every thread)" "$shapetrace" analyze "$rec" -j 1
for encoding in rle sequitur summary fsa nlevel intervals; do
  timed "summarize --thread $thread -e $encoding" "$shapetrace" summarize "$rec" --thread "$thread" -e "$encoding"
done
timed "compare worker-0 worker-1 --depth 2" "$shapetrace" compare "$rec" worker-0 worker-1 --depth 2
timed "analyze -j 1 --extensions summaries" "$shapetrace" analyze "$rec" -j 1 --extensions summaries
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
