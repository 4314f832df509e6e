#!/usr/bin/env python3
"""Prints the call graph of a run, one block per thread, in a form two tracers' recordings of the
same program can be compared in: for every call, in the order the thread made them, its
function's name indented by its depth. Exits and times are left out (uftrace prints no exit for a
call it shows on one line, and the two tracers' clocks differ); the threads are sorted by their
calls, since their ids and names differ from run to run and between tracers.

    call_graph.py shapetrace < EVENTS   # shapetrace-test-dump's or recording_tree.py's output
    call_graph.py uftrace < REPLAY      # `uftrace replay -f tid` (uftrace's own event lines, the
                                        # /* linux:... */ ones, are left out)
"""
import re
import sys

SHAPETRACE_THREAD = re.compile(r"^( *)thread ")
SHAPETRACE_ENTER = re.compile(r"^( *)enter (.+)$")
UFTRACE_LINE = re.compile(r"^ *\[ *(\d+)\] \| ( *)(.*)$")
UFTRACE_CALL = re.compile(r"^([^ (]+)\(\)(;| \{)$")


def shapetrace_threads(lines):
    threads, calls, thread_indent = [], None, 0
    for line in lines:
        thread = SHAPETRACE_THREAD.match(line)
        if thread:
            calls, thread_indent = [], len(thread.group(1))
            threads.append(calls)
            continue
        enter = SHAPETRACE_ENTER.match(line)
        if enter and calls is not None:
            depth = (len(enter.group(1)) - thread_indent - 2) // 2
            calls.append((depth, enter.group(2)))
    return threads


def uftrace_threads(lines):
    by_tid = {}
    for line in lines:
        event = UFTRACE_LINE.match(line)
        if not event:
            continue
        call = UFTRACE_CALL.match(event.group(3))
        if call:
            by_tid.setdefault(event.group(1), []).append((len(event.group(2)) // 2, call.group(1)))
    return list(by_tid.values())


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("shapetrace", "uftrace"):
        sys.exit("usage: call_graph.py shapetrace|uftrace < INPUT")
    read = shapetrace_threads if sys.argv[1] == "shapetrace" else uftrace_threads
    blocks = ["\n".join("  " * (depth + 1) + name for depth, name in calls)
              for calls in read(sys.stdin.read().splitlines()) if calls]
    for block in sorted(blocks):
        print("thread")
        print(block)


main()
