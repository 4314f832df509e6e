#!/usr/bin/env python3
"""`shapetrace report` against `shapetrace analyze` on the same recording (issue #21).

Runs, alternately and --runs times each, on one recording:
  analyze -j 2                                 the plain analysis
  analyze -j 2 --extensions all                the model the report builds (its timeline bins)
  report                                       the page
and, with --baseline BIN, the report of another shapetrace binary (another commit's build);
prints the median wall and CPU (user + system) time of each, with the report's ratios.

  tests/bench/report_vs_analyze.py REC [--build-dir build] [--runs 3] [--baseline BIN]
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def timed(command):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run(command, check=True, capture_output=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recording", help="a recording directory (from `shapetrace record`)")
    parser.add_argument("--build-dir", default="build", help="shapetrace's build directory")
    parser.add_argument("--runs", type=int, default=3, help="runs of each command")
    parser.add_argument("--baseline", help="another shapetrace binary whose report is timed too")
    opts = parser.parse_args()
    shapetrace = os.path.join(opts.build_dir, "bin", "shapetrace")
    if not os.path.isdir(opts.recording):
        parser.error(f"{opts.recording} is not a recording directory")
    if opts.runs < 1:
        parser.error("--runs must be at least 1")
    with tempfile.TemporaryDirectory(prefix="report-vs-analyze-") as out:
        rec = opts.recording
        commands = {
            "analyze -j 2": [shapetrace, "analyze", rec, "-j", "2", "--json", f"{out}/a.json"],
            "analyze -j 2 --extensions all": [shapetrace, "analyze", rec, "-j", "2",
                                              "--extensions", "all", "--timeline-bins", "2048",
                                              "--json", f"{out}/b.json"],
            "report": [shapetrace, "report", rec, "-o", f"{out}/r.html"],
        }
        if opts.baseline:
            commands["report (baseline)"] = [opts.baseline, "report", rec, "-o", f"{out}/b.html"]
        times = {name: [] for name in commands}
        for run in range(opts.runs):
            for name, command in commands.items():
                times[name].append(timed(command))
                print(f"report_vs_analyze: run {run + 1}/{opts.runs} {name}: "
                      f"{times[name][-1][0]:.2f} s wall", file=sys.stderr)
    median = {name: (statistics.median(t[0] for t in runs), statistics.median(t[1] for t in runs))
              for name, runs in times.items()}
    plain = median["analyze -j 2"]
    print(f"medians of {opts.runs} alternated runs on {opts.recording}")
    print("| command | wall | CPU | wall / analyze | CPU / analyze |")
    print("|---|---:|---:|---:|---:|")
    for name, (wall, cpu) in median.items():
        print(f"| {name} | {wall:.2f} s | {cpu:.2f} s | {wall / plain[0]:.2f}x | "
              f"{cpu / plain[1]:.2f}x |")


if __name__ == "__main__":
    main()
