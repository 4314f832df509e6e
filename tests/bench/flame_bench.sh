#!/bin/sh
# The flame extension's cost (docs/BENCHMARKS.md, "Flame model"): the analyzer benchmark's
# synthetic recording (tests/bench/analyzer_bench.sh; 100 million events by default) analysed by
# `shapetrace analyze` without extensions and with --extensions flame, alternately in the same run,
# and the folded export; each with wall and CPU time and peak memory. Run it on a quiet machine
# (load < 1); it prints the load before and after.
#
#   tests/bench/flame_bench.sh [BUILD_DIR] [EVENTS] [REPEATS]
set -eu
build=${1:-build}
events=${2:-100000000}
repeats=${3:-3}
dir=${TMPDIR:-/tmp}/shapetrace-analyzer-bench-$events
if [ ! -d "$dir" ]; then
  "$build/tests/bench/analyzer_bench" generate "$dir" --events "$events" --threads 4
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
timed() {
  label=$1
  shift
  /usr/bin/time -f "$label: %e s wall, %U s user, %S s sys, %M KiB peak RSS" "$@" >/dev/null
}
for jobs in 1 "$(nproc)"; do
  i=0
  while [ "$i" -lt "$repeats" ]; do
    timed "analyze -j $jobs, no extension" "$build/bin/shapetrace" analyze "$dir" -j "$jobs"
    timed "analyze -j $jobs, flame       " "$build/bin/shapetrace" analyze "$dir" -j "$jobs" --extensions flame
    i=$((i + 1))
  done
  timed "export -j $jobs --format folded" "$build/bin/shapetrace" export "$dir" -j "$jobs" --format folded -o "$dir.folded"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$(wc -l < "$dir.folded") distinct stacks with self time"
