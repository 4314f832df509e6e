#!/usr/bin/env python3
"""Prints which functions each thread of a run called: one line `THREAD: FUNCTION` per thread and
function it entered, sorted, whatever the number of calls or their order. Reads recording_tree.py's
output on stdin. scripts/test-aarch64 compares the example service's runs on two architectures
with it: a multi-threaded service's call sequence depends on which worker takes which request and
how long the run lasts, the functions each thread needs do not.

    recording_tree.py < DUMP | thread_functions.py"""
import re
import sys

THREAD = re.compile(r"^  thread (.+)$")
ENTER = re.compile(r"^ +enter (.+)$")

thread = None
lines = set()
for line in sys.stdin:
    line = line.rstrip("\n")
    named = THREAD.match(line)
    if named:
        thread = named.group(1)
    elif line.startswith("process ") or line.startswith("reaped "):
        thread = None
    elif thread is not None:
        enter = ENTER.match(line)
        if enter:
            lines.add("%s: %s" % (thread, enter.group(1)))
for line in sorted(lines):
    print(line)
