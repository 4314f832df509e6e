#!/bin/sh
# The analyzer's benchmark: a synthetic multi-threaded recording (100 million events by default,
# 4 threads, 300 functions) analysed from disk. Prints events/s (wall and per core of CPU time)
# for reading alone, the per-thread core, the whole analysis, and the whole `shapetrace analyze`
# command with its peak memory; then the same command with each extension of the model, so that an
# extension's cost is measured against the analysis in the same run. Figures in
# docs/BENCHMARKS.md ("Analyzer").
#
#   tests/bench/analyzer_bench.sh [BUILD_DIR] [EVENTS]
set -eu
build=${1:-build}
events=${2:-100000000}
dir=${TMPDIR:-/tmp}/shapetrace-analyzer-bench-$events
if [ ! -d "$dir" ]; then
  "$build/tests/bench/analyzer_bench" generate "$dir" --events "$events" --threads 4
fi
du -sh "$dir"
cores=$(nproc)
for jobs in 1 "$cores"; do
  echo "== in-process, jobs $jobs"
  "$build/tests/bench/analyzer_bench" measure "$dir" --jobs "$jobs"
done
for jobs in 1 "$cores"; do
  echo "== shapetrace analyze -j $jobs"
  /usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KiB peak RSS" \
    "$build/bin/shapetrace" analyze "$dir" -j "$jobs" --json "$dir.json" | head -1
done
ls -l "$dir.json"
# The known extensions, as the command's own error lists them.
extensions=$("$build/bin/shapetrace" analyze "$dir" --extensions '?' 2>&1 |
  sed -n 's/.*known: \([^;]*\);.*/\1/p' | tr -d ',')
for extension in $extensions; do
  echo "== shapetrace analyze -j 1 --extensions $extension"
  /usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KiB peak RSS" \
    "$build/bin/shapetrace" analyze "$dir" -j 1 --extensions "$extension" --json "$dir.json" | head -1
done
