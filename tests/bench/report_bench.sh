#!/usr/bin/env bash
# The report's cost on recordings of growing size (the service fixture of tests/report): time of
# `shapetrace report` against `shapetrace analyze` on the same recording (the report's own cost is
# the difference: instance look-ups through the index, the scoped flame graphs' replay, writing the
# page; the report without the scoped flame graphs, --flame-scope-events 0, is timed too), the page's size, and
# in headless Chromium the time to open the page and to redraw the timeline.
#
#   tests/bench/report_bench.sh [BUILD_DIR] [REQUESTS_PER_WORKER...]
set -euo pipefail
build=${1:-build}
shift || true
sizes=("${@:-20000 200000}")
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$build" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median3() { sort -n | sed -n 2p; }
seconds() { local s; s=$(date +%s.%N); "$@" >/dev/null 2>&1; echo "$(date +%s.%N) - $s" | bc; }

pages=()
for n in ${sizes[@]}; do
  rec="$work/rec-$n"
  "$build/tests/report/report_service_recording" "$rec" --requests "$n"
  analyze=$(for i in 1 2 3; do seconds "$build/bin/shapetrace" analyze "$rec" -j 2; done | median3)
  report=$(for i in 1 2 3; do seconds "$build/bin/shapetrace" report "$rec" -j 2 -o "$work/report-$n.html"; done | median3)
  # The scoped flame graphs' replay (report/scope_trees.h): the report without it.
  unscoped=$(for i in 1 2 3; do seconds "$build/bin/shapetrace" report "$rec" -j 2 --flame-scope-events 0 -o "$work/unscoped-$n.html"; done | median3)
  events=$("$build/bin/shapetrace" report "$rec" -j 2 -o "$work/report-$n.html" | sed -n '1s/.* \([0-9]*\) events.*/\1/p')
  size=$(stat -c %s "$work/report-$n.html")
  unscoped_size=$(stat -c %s "$work/unscoped-$n.html")
  printf '%s events: analyze %.2f s, report %.2f s (x%.2f), page %.2f MB; without the scoped flame graphs %.2f s, %.2f MB\n' \
    "$events" "$analyze" "$report" "$(echo "$report / $analyze" | bc -l)" "$(echo "$size / 1000000" | bc -l)" \
    "$unscoped" "$(echo "$unscoped_size / 1000000" | bc -l)"
  pages+=("$work/report-$n.html")
done
(cd "$root/tests/browser" && node bench_report.mjs "${pages[@]}")
