#!/usr/bin/env python3
"""Prints a recording's processes and their threads' call trees, in a form the end-to-end tests
check with FileCheck: reads `shapetrace dump --format json DIR` on stdin.

    process 1 exec_test (started), ended by exec of .../exec_test
      thread main
        enter main
          enter before_exec
          exit before_exec
        (1 call still open)
    process 2 exec_test (exec by process 1), exit status 3
    ...
    reaped process 2: exit status 3

Processes are numbered in the order they started (their ProcessStart's time: items of different
processes may arrive in any order), executables shown by their base name, the main thread
(tid == pid) first, then the others by name. Indentation follows the call depth."""
import json
import os
import sys

processes = {}  # key -> {"number", "start", "end", "threads": {tid: {"name", "events"}}, ...}
order = []
reaped = []


def process(key):
    if key not in processes:
        processes[key] = {"number": 0, "start": None, "end": None, "threads": {}, "failed": None}
        order.append(key)
    return processes[key]


for line in sys.stdin:
    item = json.loads(line)
    kind, key = item["kind"], item["process"]
    if kind == "exit_status":
        reaped.append(item)
        if key == 0:
            continue
    p = process(key)
    if kind == "process_start":
        p["start"] = item
    elif kind == "process_end":
        p["end"] = item
    elif kind == "exec_failed":
        p["failed"] = item
    elif kind in ("thread_start", "thread_name"):
        p["threads"].setdefault(item["thread"], {"name": "", "events": []})["name"] = item["name"]
    elif kind == "event_batch":
        p["threads"].setdefault(item["thread"], {"name": "", "events": []})["events"] += item["events"]
    elif kind == "gap":
        thread = p["threads"].setdefault(item["thread"], {"name": "", "events": []})
        thread["events"].append({"kind": "gap", "dropped": item["dropped"]})


# In the order they started; processes whose start was not recorded last, as they appeared.
order.sort(key=lambda k: (processes[k]["start"] is None,
                          processes[k]["start"]["start_ns"] if processes[k]["start"] else 0))
for n, key in enumerate(order):
    processes[key]["number"] = n + 1


def number(key):
    return processes[key]["number"] if key in processes else "?"


def describe(key, p):
    start = p["start"]
    if not start:
        return "process %d (no process start)" % p["number"]
    origin = start["origin"]
    how = {"started": "started", "forked": "forked by process %s" % number(start["parent_process"]),
           "exec": "exec by process %s" % number(start["previous_image"]),
           "exec_failed": "continues process %s" % number(start["previous_image"])}[origin]
    text = "process %d %s (%s)" % (p["number"], os.path.basename(start["executable"]), how)
    if p["failed"]:
        text += ", its exec of %s failed (errno %d)" % (p["failed"]["path"], p["failed"]["errno"])
    end = p["end"]
    if end is None:
        text += ", NO PROCESS END"
    elif end["reason"] == "exec":
        text += ", ended by exec of %s" % os.path.basename(end["exec_path"])
    else:
        text += ", %s status %d" % (end["reason"], end["exit_status"])
    if end is not None:
        text += ", %d dropped" % end["events_dropped"]
    if end is not None and end.get("written_by_collector"):
        text += ", written by the collector"
    return text


for key in order:
    p = processes[key]
    print(describe(key, p))
    pid = p["start"]["pid"] if p["start"] else -1
    threads = sorted(p["threads"].items(), key=lambda t: (t[0] != pid, t[1]["name"], t[0]))
    for tid, thread in threads:
        if not thread["events"]:
            continue
        print("  thread %s" % ("main" if tid == pid else thread["name"]))
        depth = 0
        for event in thread["events"]:
            if event["kind"] == "gap":
                print("%s(%d events lost)" % ("  " * (depth + 2), event["dropped"]))
                continue
            if event["kind"] == "enter":
                print("%senter %s" % ("  " * (depth + 2), event["name"]))
                depth += 1
            else:
                depth = max(depth - 1, 0)
                verb = {"exit": "exit", "unwind": "unwind", "abandoned": "abandon"}[event["kind"]]
                print("%s%s %s" % ("  " * (depth + 2), verb, event["name"]))
        if depth:
            print("    (%d call%s still open)" % (depth, "" if depth == 1 else "s"))
for item in reaped:
    who = ("process %s" % number(item["process"])) if item["process"] else "untraced pid"
    text = ("exit status %d" % item["exit_code"]) if item["signal"] == 0 else \
        ("killed by signal %d" % item["signal"])
    print("reaped %s: %s" % (who, text))
