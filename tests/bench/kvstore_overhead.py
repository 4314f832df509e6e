#!/usr/bin/env python3
"""Whole-program cost of shapetrace on the example service, compared in the same run.

Runs the ordinary kvstore and the instrumented one (built by shapetrace-c++) alternately, several
times each, on the same seed and a configuration without write stalls or periodic flushes (so that
the disk does not decide the result), and prints medians, with ratios to the ordinary build, of:
  - CPU time per request: user + system time of the whole process (workers, client, evictor, and
    the runtime's drain thread) divided by the requests served: what tracing costs in total;
  - get and put service-time percentiles: what it adds to one request's latency.
Throughput is printed too but is not a measure of overhead: it is bound by the client-to-worker
hand-off (condition variables), and slower workers can even raise it (fewer sleeping workers to
wake). Variants:

  ordinary            build/bin/kvstore
  traced, disabled    instrumented, SHAPETRACE_ENABLED=0 (hooks cost a load and a branch)
  traced, detached    instrumented, attach on demand (the default) with no collector listening:
                      recording is off until one connects (issue #19's goal: within 2% of ordinary)
  traced, no sink     instrumented, SHAPETRACE_ENABLED=1 (always on), no collector listening
                      (hooks, rings and the drain thread run; batches are dropped at the socket)
  traced, attached    instrumented, attach on demand, with `shapetrace collect` (recording to a
                      temporary directory) and `shapetrace live --no-http` running for the whole
                      benchmark: what a service costs while it is watched live

  tests/bench/kvstore_overhead.py [--build-dir build] [--seconds 3] [--runs 5] [--threads 2]
"""
import argparse
import contextlib
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROW = re.compile(r"^  (\w+) +(\d+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+)$", re.M)
REQUESTS = re.compile(r"^requests: (\d+) \((\d+) per second\)", re.M)


def run(binary, env_extra, args, data_dir):
    env = dict(os.environ, **env_extra)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([binary, *args, "--data-dir", data_dir], env=env, check=True,
                         capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    requests = int(REQUESTS.search(out).group(1))
    per_second = int(REQUESTS.search(out).group(2))
    rows = {m.group(1): [float(x) for x in m.groups()[2:]] for m in ROW.finditer(out)}
    return {"CPU ns/request": cpu * 1e9 / requests, "get p50 us": rows["get"][0],
            "get p99 us": rows["get"][2], "put p50 us": rows["put"][0],
            "put p99 us": rows["put"][2], "req/s": per_second}


@contextlib.contextmanager
def live_pipeline(build_dir, work_dir):
    """`shapetrace collect` and `shapetrace live` running; yields the collector's endpoint."""
    shapetrace = os.path.join(build_dir, "bin", "shapetrace")
    endpoint = f"ipc://{work_dir}/collector.sock"
    publish = f"ipc://{work_dir}/publish.sock"
    collect = subprocess.Popen([shapetrace, "collect", "--listen", endpoint, "--publish", publish,
                                "-o", os.path.join(work_dir, "rec")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    live = None
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(f"{work_dir}/publish.sock"):
            if collect.poll() is not None or time.monotonic() > deadline:
                sys.exit("kvstore_overhead: shapetrace collect did not start")
            time.sleep(0.05)
        live = subprocess.Popen([shapetrace, "live", "--connect", publish, "--no-http"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        yield endpoint
    finally:
        for process in (live, collect):
            if process:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    opts = parser.parse_args()
    ordinary = os.path.join(opts.build_dir, "bin", "kvstore")
    traced = os.path.join(opts.build_dir, "examples", "kvstore-traced", "bin", "kvstore")
    for binary in (ordinary, traced):
        if not os.access(binary, os.X_OK):
            sys.exit(f"kvstore_overhead: {binary} is missing (cmake --build {opts.build_dir})")
    args = ["--seconds", str(opts.seconds), "--threads", str(opts.threads), "--seed", "1",
            "--max-unflushed-mib", "0", "--flush-ms", "3600000"]
    with tempfile.TemporaryDirectory(prefix="kvstore-bench-") as data_dir, \
            tempfile.TemporaryDirectory(prefix="kvstore-bench-live-") as live_dir, \
            live_pipeline(opts.build_dir, live_dir) as collector:
        # An endpoint nobody listens on, so that no collector on the machine receives the events.
        nobody = f"ipc://{live_dir}/nobody.sock"
        variants = [
            ("ordinary", ordinary, {}),
            ("traced, disabled", traced, {"SHAPETRACE_ENABLED": "0"}),
            ("traced, detached", traced, {"SHAPETRACE_ENDPOINT": nobody}),
            ("traced, no sink", traced, {"SHAPETRACE_ENDPOINT": nobody, "SHAPETRACE_ENABLED": "1"}),
            ("traced, attached", traced, {"SHAPETRACE_ENDPOINT": collector}),
        ]
        results = {name: [] for name, _, _ in variants}
        for i in range(opts.runs):
            for name, binary, env in variants:  # interleaved, so that load changes hit all alike
                results[name].append(run(binary, env, args, data_dir))
                print(f"run {i + 1}/{opts.runs} {name}: {results[name][-1]}", file=sys.stderr)
    metrics = ["CPU ns/request", "get p50 us", "get p99 us", "put p50 us", "put p99 us", "req/s"]
    base = {m: statistics.median(r[m] for r in results["ordinary"]) for m in metrics}
    print(f"| variant | {' | '.join(metrics)} |")
    print("|---|" + "---:|" * len(metrics))
    for name, _, _ in variants:
        cells = []
        for m in metrics:
            value = statistics.median(r[m] for r in results[name])
            ratio = value / base[m] if base[m] else float("nan")
            digits = 2 if " us" in m else 0
            cells.append(f"{value:.{digits}f} ({ratio:.2f}x)")
        print(f"| {name} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
