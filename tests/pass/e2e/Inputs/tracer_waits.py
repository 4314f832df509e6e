"""Checks a recording's tracer waits against the analysis of it.

Usage: tracer_waits.py INFO.json MODEL.json DUMP.json
Prints, per thread in tid order, whether the runtime recorded waits, and whether the analyzer's
per-thread counts (tracer_waits, tracer_wait_ns) equal the sums over the recording's batches
(`shapetrace dump --format json`) and what `info --json` says.
"""
import json
import sys

info = json.load(open(sys.argv[1]))
model = json.load(open(sys.argv[2]))
from_dump = {}
for line in open(sys.argv[3]):
    item = json.loads(line)
    if item.get("kind") != "event_batch":
        continue
    count, total = from_dump.get(item["thread"], (0, 0))
    for wait in item.get("tracer_waits", []):
        count, total = count + 1, total + wait["duration_ns"]
    from_dump[item["thread"]] = (count, total)

from_info = {t["tid"]: (t["tracer_waits"], t["tracer_wait_ns"])
             for p in info["processes"] for t in p["threads"]}
from_model = {t["thread"]: (t["diagnostics"].get("tracer_waits", 0),
                            t["diagnostics"].get("tracer_wait_ns", 0)) for t in model["threads"]}
for index, tid in enumerate(sorted(from_info)):
    waits, total = from_info[tid]
    print(f"thread {index}: waited {'yes' if waits > 0 and total > 0 else 'no'}, "
          f"analysis {'agrees' if from_model.get(tid) == (waits, total) else 'differs'}, "
          f"dump {'agrees' if from_dump.get(tid) == (waits, total) else 'differs'}")
