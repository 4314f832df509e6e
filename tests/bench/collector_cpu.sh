#!/bin/bash
# The collector's CPU per event: a separate `shapetrace collect` records the traced kvstore (1,000,000
# requests, lossless); its utime + stime from /proc/PID/stat, divided by the events it received.
# With --publish, the collector also publishes everything (no subscriber: the publish path alone).
#   tests/bench/collector_cpu.sh [BUILD_DIR] [--publish] [KVSTORE_BUILD_DIR]
set -e
B=${1:-build}
W=$(mktemp -d)
PUBLISH=()
[ "${2:-}" = "--publish" ] && PUBLISH=(--publish ipc://$W/pub.sock)
K=${3:-$B}
$B/bin/shapetrace collect --listen ipc://$W/c.sock -o $W/rec "${PUBLISH[@]}" 2>$W/collect.log &
C=$!
sleep 0.5
SHAPETRACE_ENDPOINT=ipc://$W/c.sock SHAPETRACE_ENABLED=1 SHAPETRACE_BLOCKING=1 \
  $K/examples/kvstore-traced/bin/kvstore --requests 1000000 --threads 2 --seed 1 --max-unflushed-mib 0 --flush-ms 3600000 --data-dir $W/data >/dev/null 2>&1 || true
sleep 0.5
T=$(getconf CLK_TCK)
cpu=$(awk '{print $14+$15}' /proc/$C/stat)
kill -INT $C; wait $C || true
events=$(grep -o "[0-9]* events," $W/collect.log | tail -1 | cut -d' ' -f1)
python3 -c "print(f'collector CPU {$cpu/$T:.2f} s for {$events/1e6:.1f} M events: {$cpu/$T/$events*1e9:.1f} ns/event')"
rm -rf $W
