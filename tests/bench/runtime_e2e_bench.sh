#!/usr/bin/env bash
# End to end: wall time of `shapetrace record -- hooks_workload fib 32` (plugin-built program, runtime,
# ZeroMQ, collector, recording on disk) against `uftrace record` of a -pg build, in the same run,
# and the events shapetrace lost (from the recording's ProcessEnd, cross-checked).
#
#   tests/bench/runtime_e2e_bench.sh [BUILD_DIR] [RUNS]
set -euo pipefail
build="$(cd "${1:-build}" && pwd)"
runs="${2:-3}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d /tmp/shapetrace-e2e-bench-XXXXXX)"
trap 'rm -rf "$work"' EXIT

"$build/bin/shapetrace-cc" -O2 "$here/hooks_workload.c" -o "$work/traced"
clang-19 -O2 -pg "$here/hooks_workload.c" -o "$work/pg"

seconds() { # runs "$@", prints its wall time in seconds
  local start end
  start=$(date +%s.%N)
  "$@" > /dev/null
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

: > "$work/times"
lost_total=0
for i in $(seq "$runs"); do
  s=$(seconds "$build/bin/shapetrace" record -o "$work/rec$i" -- "$work/traced" fib 32)
  totals=$("$build/tests/bench/recording_totals" "$work/rec$i")
  u=$(seconds uftrace record -d "$work/uftrace$i" "$work/pg" fib 32)
  echo "run $i: shapetrace record ${s}s ($totals)  uftrace record ${u}s"
  echo "$s $u" >> "$work/times"
  lost_total=$((lost_total + $(echo "$totals" | sed 's/.*lost=//')))
  rm -rf "$work/rec$i" "$work/uftrace$i"
done
s_median=$(cut -d' ' -f1 "$work/times" | median)
u_median=$(cut -d' ' -f2 "$work/times" | median)
echo "median of $runs: shapetrace record ${s_median}s, uftrace record ${u_median}s," \
  "ratio $(echo "scale=2; $s_median / $u_median" | bc); events lost in all runs: $lost_total"
