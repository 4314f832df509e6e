#!/usr/bin/env bash
# The fleet's figures (docs/BENCHMARKS.md, "Fleet"): records the example service for SECONDS, then
# replays the recording as one host's live analysis through a local nats-server with JetStream,
# a summary every WINDOW seconds of the recording's time (tests/bench/fleet_bench.cpp).
#
#   tests/bench/fleet_bench.sh [SECONDS=60] [WINDOW=10]
#
# Run on a quiet machine after building (ninja -C build shapetrace kvstore fleet_bench).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
window=${2:-10}
work=$(mktemp -d /tmp/shapetrace-fleet-bench.XXXXXX)
nats_pid=
cleanup() {
  if [ -n "$nats_pid" ]; then kill "$nats_pid" 2>/dev/null; wait "$nats_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
build/bin/shapetrace record -o "$work/recording" -- \
  build/examples/kvstore-traced/bin/kvstore --seconds "$seconds" --data-dir "$work/kv" > /dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/nats"
# A summary of a long run is about 1 MiB compressed: NATS's default max_payload (1 MiB) is raised
# to 8 MiB, as scripts/fleet-demo does (docs/fleet.md, "Size").
cat > "$work/nats/nats.conf" <<CONF
listen: 127.0.0.1:$port
max_payload: 8MB
jetstream { store_dir: "$work/nats" }
CONF
nats-server -c "$work/nats/nats.conf" -l "$work/nats/log" &
nats_pid=$!
for _ in $(seq 50); do (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
build/tests/bench/fleet_bench "$work/recording" "$window" "nats://127.0.0.1:$port"
