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
python3 - "$work/info.json" "$work/analysis.json" "$(dirname "$0")" <<'CHECK'
import sys
sys.path.insert(0, sys.argv[3])
from recording_checks import common_problems, load, report
info, analysis = load(sys.argv[1], sys.argv[2])
problems = common_problems(info, analysis)
if len(info["processes"]) != 1:
    problems.append("%d processes" % len(info["processes"]))
for p in info["processes"]:
    if not p["ended"] or p["end"]["exit_status"] != 0:
        problems.append("process %x: end %s" % (p["process"], p.get("end")))
    names = {t["name"] for t in p["threads"] if t["events"]}
    if not {"worker-0", "worker-1"} <= names:
        problems.append("threads with events: %s" % sorted(names))
report(problems, "attached late: %d events" % sum(t["events"] for p in info["processes"] for t in p["threads"]))
CHECK
