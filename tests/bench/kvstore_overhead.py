#!/usr/bin/env python3
"""Whole-program cost of shapetrace on the example service, compared in the same run.

Runs the ordinary kvstore and the instrumented one (built by shapetrace-c++) alternately, several
times each, on the same seed and a CPU-bound configuration (no write stalls, no periodic flush, so
that the disk does not decide the result), and prints the medians of throughput and of the get and
put service-time percentiles, with ratios to the ordinary build. Variants:

  ordinary            build/bin/kvstore
  traced, disabled    instrumented, SHAPETRACE_ENABLED=0 (hooks cost a load and a branch)
  traced, no sink     instrumented, recording on, no collector listening (hooks, rings and the
                      drain thread run; batches are dropped at the socket)

  tests/bench/kvstore_overhead.py [--build-dir build] [--seconds 3] [--runs 5] [--threads 2]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROW = re.compile(r"^  (\w+) +(\d+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+)$", re.M)
REQUESTS = re.compile(r"^requests: (\d+) \((\d+) per second\)", re.M)


def run(binary, env_extra, args, data_dir):
    env = dict(os.environ, **env_extra)
    out = subprocess.run([binary, *args, "--data-dir", data_dir], env=env, check=True,
                         capture_output=True, text=True).stdout
    per_second = int(REQUESTS.search(out).group(2))
    rows = {m.group(1): [float(x) for x in m.groups()[2:]] for m in ROW.finditer(out)}
    return {"req/s": per_second, "get p50": rows["get"][0], "get p99": rows["get"][2],
            "put p50": rows["put"][0], "put p99": rows["put"][2]}


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
    variants = [
        ("ordinary", ordinary, {}),
        ("traced, disabled", traced, {"SHAPETRACE_ENABLED": "0"}),
        # An endpoint nobody listens on, so that no collector on the machine receives the events.
        ("traced, no sink", traced, {"SHAPETRACE_ENDPOINT": "ipc:///tmp/kvstore-bench-nobody"}),
    ]
    args = ["--seconds", str(opts.seconds), "--threads", str(opts.threads), "--seed", "1",
            "--max-unflushed-mib", "0", "--flush-ms", "3600000"]
    results = {name: [] for name, _, _ in variants}
    with tempfile.TemporaryDirectory(prefix="kvstore-bench-") as data_dir:
        for i in range(opts.runs):
            for name, binary, env in variants:  # interleaved, so that load changes hit all alike
                results[name].append(run(binary, env, args, data_dir))
                print(f"run {i + 1}/{opts.runs} {name}: {results[name][-1]}", file=sys.stderr)
    metrics = ["req/s", "get p50", "get p99", "put p50", "put p99"]
    base = {m: statistics.median(r[m] for r in results["ordinary"]) for m in metrics}
    print(f"| variant | {' | '.join(metrics)} |")
    print("|---|" + "---:|" * len(metrics))
    for name, _, _ in variants:
        cells = []
        for m in metrics:
            value = statistics.median(r[m] for r in results[name])
            ratio = value / base[m] if base[m] else float("nan")
            cells.append(f"{value:.0f} ({ratio:.2f}x)" if m == "req/s" else f"{value:.1f} ({ratio:.2f}x)")
        print(f"| {name} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
