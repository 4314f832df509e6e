#!/bin/sh
# Attach on demand with the real pieces (issue #19): the example service, built with the plugin,
# starts with no collector listening; `shapetrace collect` started a second later records it
# without a restart. The service's output and exit status are its own; the recording holds its
# process from ProcessStart to ProcessEnd (exit status 0), events of its worker threads, nothing
# dropped, and the analysis finds no exit it could not match and no unknown id.
#   late_attach_test.sh SHAPETRACE KVSTORE WORK_DIR
set -eu
shapetrace=$1 kvstore=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
endpoint="ipc://$work/collector.sock"
# Lossless (SHAPETRACE_BLOCKING=1): a loaded machine must not make the check of "nothing dropped"
# depend on how fast the collector keeps up.
SHAPETRACE_BLOCKING=1 SHAPETRACE_ENDPOINT="$endpoint" "$kvstore" --seconds 3 --threads 2 --data-dir "$work/data" \
  > "$work/service.out" 2>&1 &
service=$!
sleep 1
"$shapetrace" collect --listen "$endpoint" -o "$work/rec" > "$work/collect.out" 2>&1 &
collect=$!
status=0
wait $service || status=$?
kill -TERM $collect
wait $collect
if [ $status -ne 0 ] || ! grep -q '^requests: ' "$work/service.out"; then
  echo "the service failed (status $status):"; cat "$work/service.out"; exit 1
fi
"$shapetrace" info "$work/rec" --json > "$work/info.json"
"$shapetrace" analyze "$work/rec" --json "$work/analysis.json" > "$work/analysis.txt"
python3 - "$work/info.json" "$work/analysis.json" <<'CHECK'
import json, sys
info = json.load(open(sys.argv[1]))
analysis = json.load(open(sys.argv[2]))
problems = []
if len(info["processes"]) != 1:
    problems.append("%d processes" % len(info["processes"]))
for p in info["processes"]:
    if not p["ended"] or p["end"]["exit_status"] != 0:
        problems.append("process %x: end %s" % (p["process"], p.get("end")))
    names = {t["name"] for t in p["threads"] if t["events"]}
    if not {"worker-0", "worker-1"} <= names:
        problems.append("threads with events: %s" % sorted(names))
    for t in p["threads"]:
        if t["dropped"]:
            problems.append("thread %s dropped %d events" % (t["name"], t["dropped"]))
counts = {d["name"]: d["count"] for d in analysis["diagnostics"]}
for stat in ("function_ids_out_of_range", "unknown_function_ids", "processes_without_end",
             "unmatched_exits", "events_dropped"):
    if counts.get(stat, 0):
        problems.append("%s: %d" % (stat, counts[stat]))
if problems:
    print("\n".join(problems))
    sys.exit(1)
print("attached late: %d events" % sum(t["events"] for p in info["processes"] for t in p["threads"]))
CHECK
