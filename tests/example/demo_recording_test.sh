#!/bin/sh
# The demo's recording tells the whole story and nothing else (issue #14): the example service
# recorded through `shapetrace record` for two seconds, as scripts/demo does, holds only the
# program's own threads (none of ZeroMQ's or the runtime's: they record nothing), every event
# names a function of a module table (no id out of range, no unknown id), and every process ended
# with its ProcessEnd.
#   demo_recording_test.sh SHAPETRACE KVSTORE WORK_DIR
set -eu
shapetrace=$1 kvstore=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
"$shapetrace" record -o "$work/rec" -- "$kvstore" --seconds 2 --threads 2 \
  --data-dir "$work/data" > "$work/record.out" 2>&1
"$shapetrace" info "$work/rec" --json > "$work/info.json"
"$shapetrace" analyze "$work/rec" --json "$work/analysis.json" > "$work/analysis.txt"
python3 - "$work/info.json" "$work/analysis.json" "$(dirname "$0")" <<'CHECK'
import sys
sys.path.insert(0, sys.argv[3])
from recording_checks import common_problems, load, report
info, analysis = load(sys.argv[1], sys.argv[2])
problems = common_problems(info, analysis)
names = sorted(t["name"] for p in info["processes"] for t in p["threads"])
for name in names:
    if name.startswith("ZMQ") or name.startswith("shapetrace"):
        problems.append("thread %r of the transport or the runtime recorded events" % name)
if names != sorted(["kvstore", "flusher", "evictor", "worker-0", "worker-1", "client"]):
    problems.append("threads %s" % names)
for p in info["processes"]:
    if not p["ended"]:
        problems.append("process %x has no process end" % p["process"])
report(problems, "clean: threads %s" % ", ".join(names))
CHECK
