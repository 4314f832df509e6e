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

With --record (issue #21: recording every event at close to the hooks' own cost), instead of the
live variants:

  in-process          instrumented, SHAPETRACE_OUTPUT=DIR SHAPETRACE_BLOCKING=1: the runtime writes
                      the recording itself
  record              `shapetrace record -o DIR -- kvstore` (lossless: threads wait for ring space)
  record --lossy      the same, dropping (and counting) what the pipeline cannot take
  uftrace             a -pg build recorded by `uftrace record` (when uftrace is installed)

CPU time then includes the recording process (`shapetrace record` and its collector); each
recording's events, drops and tracer waits are printed, and `shapetrace analyze` and `shapetrace
report` are timed (wall, peak RSS and peak anonymous memory) on the largest lossless recording
(recording_bench.py, shared with real_program_bench.py).

  tests/bench/kvstore_overhead.py [--build-dir build] [--seconds 3] [--runs 5] [--threads 2]
                                  [--record] [--requests N] [--instructions]

With --requests N each run serves exactly N requests (kvstore --requests) instead of running for
--seconds: the same work in every run, so that CPU time is compared for the same requests.

With --instructions (and --requests, default 100000), what the instrumentation itself costs,
repeatable on a busy machine: kvstore is built as a project of its own three times by
shapetrace-c++ (ordinary with SHAPETRACE_PASS_DISABLE=1, then SHAPETRACE_PASS_DETACHED=clone and
gate, one compile job each; with --baseline-build OTHER also with OTHER's shapetrace-c++, the same
program against another version of the pass), and each build's .text size, build CPU time and the instructions
valgrind's callgrind counts for the same requests (ordinary; instrumented, disabled and detached;
median and range of --runs runs: how the client and worker threads interleave moves a run's total by
a few tenths of a percent) are printed. The build times are CPU seconds: compare them on a quiet
machine.
"""
import argparse
import contextlib
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from recording_bench import Variant, analyse_largest, print_table, recording_variants, run_alternated

ROW = re.compile(r"^  (\w+) +(\d+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+)$", re.M)
REQUESTS = re.compile(r"^requests: (\d+) \((\d+) per second\)", re.M)


def run(command, env_extra, args, data_dir):
    """Runs kvstore (`command`: the binary, or a recorder's command line ending with it)."""
    env = dict(os.environ, **env_extra)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([*command, *args, "--data-dir", data_dir], env=env, check=True,
                         capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    requests = int(REQUESTS.search(out).group(1))
    per_second = int(REQUESTS.search(out).group(2))
    rows = {m.group(1): [float(x) for x in m.groups()[2:]] for m in ROW.finditer(out)}
    return {"CPU ns/request": cpu * 1e9 / requests, "get p50 us": rows["get"][0],
            "get p99 us": rows["get"][2], "put p50 us": rows["put"][0],
            "put p99 us": rows["put"][2], "req/s": per_second, "requests": requests}


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


def build_pg(build_dir, work_dir):
    """kvstore built with -pg for uftrace, from the same sources; None without uftrace."""
    if not shutil.which("uftrace"):
        return None
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                          "kvstore")
    pg_dir = os.path.join(work_dir, "pg")
    subprocess.run(["cmake", "-S", source, "-B", pg_dir, "-G", "Ninja",
                    "-DCMAKE_CXX_COMPILER=clang++-19", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                    "-DCMAKE_CXX_FLAGS=-pg"], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", pg_dir], check=True, capture_output=True)
    return os.path.join(pg_dir, "bin", "kvstore")


def record_variants(opts, ordinary, traced, work_dir):
    shapetrace = os.path.join(opts.build_dir, "bin", "shapetrace")
    pg = build_pg(opts.build_dir, work_dir)
    if not pg:
        print("kvstore_overhead: uftrace is not installed, its row is left out", file=sys.stderr)
    return [Variant("ordinary", [ordinary], {}),
            Variant("traced, disabled", [traced], {"SHAPETRACE_ENABLED": "0"}),
            *recording_variants(shapetrace, traced, os.path.join(work_dir, "recordings"), pg)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--requests", type=int, default=0,
                        help="serve exactly this many requests per run instead of --seconds")
    parser.add_argument("--record", action="store_true",
                        help="compare ways of recording every event instead of live monitoring")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under callgrind for each way to build the hooks")
    parser.add_argument("--baseline-build", metavar="DIR",
                        help="with --instructions: also build with DIR's shapetrace-c++ (another "
                             "version of the pass), run detached and disabled")
    opts = parser.parse_args()
    if opts.baseline_build and not opts.instructions:
        parser.error("--baseline-build goes with --instructions")
    if opts.instructions:
        instruction_counts(opts)
        return
    ordinary = os.path.join(opts.build_dir, "bin", "kvstore")
    traced = os.path.join(opts.build_dir, "examples", "kvstore-traced", "bin", "kvstore")
    for binary in (ordinary, traced):
        if not os.access(binary, os.X_OK):
            sys.exit(f"kvstore_overhead: {binary} is missing (cmake --build {opts.build_dir})")
    length = ["--requests", str(opts.requests)] if opts.requests else ["--seconds", str(opts.seconds)]
    args = [*length, "--threads", str(opts.threads), "--seed", "1",
            "--max-unflushed-mib", "0", "--flush-ms", "3600000"]
    with contextlib.ExitStack() as stack:
        data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="kvstore-bench-"))
        work_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="kvstore-bench-work-"))
        shapetrace = os.path.join(opts.build_dir, "bin", "shapetrace")
        if opts.record:
            variants = record_variants(opts, ordinary, traced, work_dir)
        else:
            collector = stack.enter_context(live_pipeline(opts.build_dir, work_dir))
            # An endpoint nobody listens on, so that no collector on the machine receives them.
            nobody = f"ipc://{work_dir}/nobody.sock"
            variants = [
                Variant("ordinary", [ordinary], {}),
                Variant("traced, disabled", [traced], {"SHAPETRACE_ENABLED": "0"}),
                Variant("traced, detached", [traced], {"SHAPETRACE_ENDPOINT": nobody}),
                Variant("traced, no sink", [traced],
                        {"SHAPETRACE_ENDPOINT": nobody, "SHAPETRACE_ENABLED": "1"}),
                Variant("traced, attached", [traced], {"SHAPETRACE_ENDPOINT": collector}),
            ]
        results, largest = run_alternated(
            variants, opts.runs, lambda v: run(v.command, v.env, args, data_dir), work_dir,
            "kvstore_overhead")
        print_table(variants, results, METRICS, "ordinary")
        analyse_largest(shapetrace, largest, work_dir, "kvstore_overhead")


METRICS = [("CPU ns/request", 0), ("get p50 us", 2), ("get p99 us", 2), ("put p50 us", 2),
           ("put p99 us", 2), ("req/s", 0)]


def build_kvstore(build_dir, work_dir, name, env_extra):
    """kvstore built as a project of its own by shapetrace-c++ with `env_extra` (SHAPETRACE_PASS_*),
    one compile job. Returns the binary without debug information (valgrind 3.19 cannot read
    clang-19's DWARF 5), its .text size in bytes and the build's CPU seconds."""
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                          "kvstore")
    out = os.path.join(work_dir, name)
    env = dict(os.environ, **env_extra)
    build_dir = os.path.abspath(build_dir)
    subprocess.run(["cmake", "-S", source, "-B", out, "-G", "Ninja",
                    f"-DCMAKE_CXX_COMPILER={os.path.join(build_dir, 'bin', 'shapetrace-c++')}",
                    "-DCMAKE_BUILD_TYPE=RelWithDebInfo"], env=env, check=True, capture_output=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["cmake", "--build", out, "-j", "1"], env=env, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    binary = os.path.join(out, "bin", "kvstore")
    stripped = binary + ".nodebug"
    subprocess.run(["objcopy", "--strip-debug", binary, stripped], check=True)
    sections = subprocess.run(["size", "-A", binary], check=True, capture_output=True,
                              text=True).stdout
    text = int(re.search(r"^\.text +(\d+)", sections, re.M).group(1))
    return stripped, text, cpu


def callgrind_total(command, env_extra, args, data_dir, work_dir):
    """Instructions the whole process executes (every thread), counted by callgrind."""
    out = os.path.join(work_dir, "callgrind.out")
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command,
                    *args, "--data-dir", data_dir], env=dict(os.environ, **env_extra), check=True,
                   capture_output=True)
    with open(out) as f:
        total = int(re.search(r"^totals: *(\d+)", f.read(), re.M).group(1))
    os.remove(out)
    return total


def instruction_counts(opts):
    if not shutil.which("valgrind"):
        sys.exit("kvstore_overhead: --instructions needs valgrind (apt-get install valgrind)")
    requests = opts.requests or 100000
    args = ["--requests", str(requests), "--threads", str(opts.threads), "--seed", "1",
            "--max-unflushed-mib", "0", "--flush-ms", "3600000"]
    with contextlib.ExitStack() as stack:
        data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="kvstore-bench-"))
        work_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="kvstore-bench-work-"))
        # The runtime without debug information, found before the wrapper's RUNPATH.
        os.makedirs(os.path.join(work_dir, "lib"))
        subprocess.run(["objcopy", "--strip-debug",
                        os.path.join(opts.build_dir, "lib", "libshapetrace-rt.so"),
                        os.path.join(work_dir, "lib", "libshapetrace-rt.so")], check=True)
        os.environ["LD_LIBRARY_PATH"] = os.pathsep.join(
            filter(None, [os.path.join(work_dir, "lib"), os.environ.get("LD_LIBRARY_PATH")]))
        nobody = f"ipc://{work_dir}/nobody.sock"
        builds = [("ordinary", {"SHAPETRACE_PASS_DISABLE": "1"}, opts.build_dir),
                  ("clone", {"SHAPETRACE_PASS_DETACHED": "clone"}, opts.build_dir),
                  ("gate", {"SHAPETRACE_PASS_DETACHED": "gate"}, opts.build_dir)]
        if opts.baseline_build:
            builds.append(("baseline", {}, opts.baseline_build))
        rows = []
        for name, env, build_dir in builds:
            binary, text, cpu = build_kvstore(build_dir, work_dir, name, env)
            print(f"built {name}: .text {text} bytes, {cpu:.1f} s CPU", file=sys.stderr)
            runs = [("", {})] if name == "ordinary" else [
                (", disabled", {"SHAPETRACE_ENABLED": "0"}),
                (", detached", {"SHAPETRACE_ENDPOINT": nobody})]
            for suffix, run_env in runs:
                totals = []
                for i in range(opts.runs):
                    totals.append(callgrind_total([binary], run_env, args, data_dir, work_dir))
                    print(f"{name}{suffix} run {i + 1}/{opts.runs}: {totals[-1]} instructions",
                          file=sys.stderr)
                rows.append((name + suffix, text, cpu, totals))
        plain = statistics.median(rows[0][3])
        print(f"kvstore --requests {requests} --threads {opts.threads} --seed 1, under callgrind, "
              f"{opts.runs} runs")
        print("| build, run | .text bytes | build CPU s | instructions (median) | vs ordinary | "
              "range vs ordinary |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, text, cpu, totals in rows:
            low, high = (min(totals) / plain - 1) * 100, (max(totals) / plain - 1) * 100
            print(f"| {name} | {text:,} | {cpu:.1f} | {statistics.median(totals) / 1e6:.1f} M | "
                  f"{(statistics.median(totals) / plain - 1) * 100:+.2f}% | "
                  f"{low:+.2f}% to {high:+.2f}% |")


if __name__ == "__main__":
    main()
