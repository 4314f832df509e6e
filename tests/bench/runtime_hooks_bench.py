#!/usr/bin/env python3
"""Runtime hooks benchmark: shapetrace against the uninstrumented program and its peers, in one run.

Builds tests/bench/hooks_workload.c once per variant and runs every variant on each workload,
interleaved, --runs times; reports medians of the workload's own time (CLOCK_MONOTONIC around the
calls, so tracer start-up and the final flush are outside it) as ns per call (one enter + one exit),
and the events each tracer recorded and lost (the most lost in any run). Both wall time and the
workload thread's CPU time are reported: on a loaded machine wall time also counts waiting for a
core, which says more about the machine than about the tracer.

  uninstrumented   clang-19 -O2
  empty hooks      -finstrument-functions with empty __cyg_profile_func_* (the cost of the calls)
  shapetrace       the shapetrace plugin (build/bin/shapetrace-cc), recording to disk
                   (SHAPETRACE_OUTPUT, drained by the runtime while it runs)
  shapetrace lossless  the same binary with SHAPETRACE_BLOCKING=1 (a full ring waits, drops nothing)
  shapetrace off   the same binary with SHAPETRACE_ENABLED=0
  shapetrace collector  the same binary recorded by a `shapetrace collect` of its own (its rings
                   in memory shared with the collector, docs/runtime.md; lossless), so that what
                   shared rings cost the hot path shows next to the private ones of SHAPETRACE_OUTPUT
  xray-fdr         -fxray-instrument -fxray-instruction-threshold=1, FDR mode started in a constructor
  uftrace          uftrace record of a -pg build
  lttng-ust        -finstrument-functions + LD_PRELOAD=liblttng-ust-cyg-profile-fast.so in a session

  shapetrace (baseline), shapetrace lossless (baseline)
                   with --baseline DIR: the same built and run with another build's plugin and
                   runtime (another commit's, e.g. main's), interleaved in the same run, to show
                   what a change costs

Usage: tests/bench/runtime_hooks_bench.py [--build build] [--baseline DIR] [--runs 5] [--only NAME,...]
"""
import argparse
import csv
import glob
import io
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = [("fib", "32"), ("chain", "2000000")]
CC = "clang-19"
CXX = "clang++-19"


def run(cmd, env=None, cwd=None, check=True):
    full_env = dict(os.environ)
    full_env.update(env or {})
    result = subprocess.run(cmd, env=full_env, cwd=cwd, capture_output=True, text=True)
    if check and result.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return result


def parse_workload(stdout):
    match = re.search(r"calls=(\d+) ns=(\d+) cpu_ns=(\d+)", stdout)
    if not match:
        sys.exit(f"bench: unexpected workload output: {stdout!r}")
    # (calls, (wall ns, thread CPU ns))
    return int(match.group(1)), (int(match.group(2)), int(match.group(3)))


class Variant:
    name = ""

    def __init__(self, work, build):
        self.work, self.build = work, build
        self.binary = os.path.join(work, self.name.replace(" ", "_"))

    def compile(self):
        raise NotImplementedError

    def run_once(self, workload, scratch):
        """Returns (calls, ns, recorded, lost); recorded/lost None when the variant records nothing."""
        out = run([self.binary, *workload]).stdout
        calls, ns = parse_workload(out)
        return calls, ns, None, None


class Uninstrumented(Variant):
    name = "uninstrumented"

    def compile(self):
        run([CC, "-O2", os.path.join(HERE, "hooks_workload.c"), "-o", self.binary])


class EmptyHooks(Variant):
    name = "empty hooks"

    def compile(self):
        hooks = os.path.join(self.work, "empty_hooks.o")
        run([CC, "-O2", "-c", os.path.join(HERE, "empty_hooks.c"), "-o", hooks])
        run([CC, "-O2", "-finstrument-functions", os.path.join(HERE, "hooks_workload.c"), hooks,
             "-o", self.binary])


class Shapetrace(Variant):
    name = "shapetrace"
    env = {}

    def compile(self):
        wrapper = os.path.join(self.build, "bin", "shapetrace-cc")
        if not os.path.exists(wrapper):
            sys.exit(f"bench: {wrapper} not found: build shapetrace first")
        run([wrapper, "-O2", os.path.join(HERE, "hooks_workload.c"), "-o", self.binary])

    def run_once(self, workload, scratch):
        output = os.path.join(scratch, "recording")
        env = {"SHAPETRACE_OUTPUT": output, **self.env}
        calls, ns = parse_workload(run([self.binary, *workload], env=env).stdout)
        totals = run([os.path.join(self.build, "tests", "bench", "recording_totals"), output]).stdout
        match = re.search(r"recorded=(\d+) lost=(\d+)", totals)
        return calls, ns, int(match.group(1)), int(match.group(2))


class ShapetraceLossless(Shapetrace):
    # Like the peers, which keep every event: a full ring makes the thread wait for the drain.
    name = "shapetrace lossless"
    env = {"SHAPETRACE_BLOCKING": "1"}

    def compile(self):
        shutil.copy(os.path.join(self.work, "shapetrace"), self.binary)


class ShapetraceThrottleOn(Shapetrace):
    # Throttling on, nothing throttled (no call is shorter than 1 ns): every enter takes the
    # out-of-line test and the drain times every call.
    name = "shapetrace throttle-on"
    env = {"SHAPETRACE_THROTTLE": "1000000000:1"}

    def compile(self):
        shutil.copy(os.path.join(self.work, "shapetrace"), self.binary)


class ShapetraceThrottled(Shapetrace):
    # Throttling on, every function throttled after 1,000 calls under 1 s: past them, the calls
    # are skipped and counted, not recorded.
    name = "shapetrace throttled"
    env = {"SHAPETRACE_THROTTLE": "1000:1000000000"}

    def compile(self):
        shutil.copy(os.path.join(self.work, "shapetrace"), self.binary)


class ShapetraceBaseline(Shapetrace):
    # The same workload built with the baseline build's wrapper; it runs the baseline's runtime
    # (the wrapper's RUNPATH).
    name = "shapetrace (baseline)"
    baseline = None

    def compile(self):
        wrapper = os.path.join(self.baseline, "bin", "shapetrace-cc")
        if not os.path.exists(wrapper):
            sys.exit(f"bench: {wrapper} not found: build the baseline's shapetrace_runtime and "
                     "ShapeTracePass first")
        run([wrapper, "-O2", os.path.join(HERE, "hooks_workload.c"), "-o", self.binary])


class ShapetraceLosslessBaseline(ShapetraceBaseline):
    name = "shapetrace lossless (baseline)"
    env = {"SHAPETRACE_BLOCKING": "1"}

    def compile(self):
        shutil.copy(os.path.join(self.work, "shapetrace_(baseline)"), self.binary)


class ShapetraceCollector(Shapetrace):
    name = "shapetrace collector"

    def run_once(self, workload, scratch):
        output = os.path.join(scratch, "recording")
        endpoint = "ipc://" + os.path.join(scratch, "c.sock")
        collect = subprocess.Popen([os.path.join(self.build, "bin", "shapetrace"), "collect",
                                    "--listen", endpoint, "-o", output],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        collect.stderr.readline()  # listening
        try:
            env = {"SHAPETRACE_ENDPOINT": endpoint, "SHAPETRACE_ENABLED": "1",
                   "SHAPETRACE_BLOCKING": "1"}
            calls, ns = parse_workload(run([self.binary, *workload], env=env).stdout)
        finally:
            collect.send_signal(2)
            collect.communicate()
        totals = run([os.path.join(self.build, "tests", "bench", "recording_totals"), output]).stdout
        match = re.search(r"recorded=(\d+) lost=(\d+)", totals)
        return calls, ns, int(match.group(1)), int(match.group(2))


class ShapetraceOff(Shapetrace):
    name = "shapetrace off"
    env = {"SHAPETRACE_ENABLED": "0"}

    def compile(self):
        shutil.copy(os.path.join(self.work, "shapetrace"), self.binary)


class XrayFdr(Variant):
    name = "xray-fdr"

    def compile(self):
        setup = os.path.join(self.work, "xray_fdr_setup.o")
        workload = os.path.join(self.work, "xray_workload.o")
        run([CXX, "-O2", "-c", os.path.join(HERE, "xray_fdr_setup.cpp"), "-o", setup])
        run([CC, "-O2", "-fxray-instrument", "-fxray-instruction-threshold=1", "-c",
             os.path.join(HERE, "hooks_workload.c"), "-o", workload])
        # XRay's runtime is C++: link with the C++ driver.
        run([CXX, "-fxray-instrument", workload, setup, "-o", self.binary])

    def run_once(self, workload, scratch):
        env = {"XRAY_OPTIONS": f"patch_premain=false verbosity=0 "
                               f"xray_logfile_base={scratch}/xray-log."}
        calls, ns = parse_workload(run([self.binary, *workload], env=env).stdout)
        logs = glob.glob(os.path.join(scratch, "xray-log.*"))
        if len(logs) != 1:
            return calls, ns, 0, 2 * calls
        ids = xray_function_ids(self.binary, workload_functions(workload))
        counter = os.path.join(self.build, "tests", "bench", "xray_fdr_count")
        recorded = int(run([counter, logs[0], *map(str, sorted(ids))]).stdout)
        return calls, ns, recorded, 2 * calls - recorded


def xray_function_ids(binary, names):
    """XRay function ids of `names` in `binary`, from its instrumentation map."""
    out = run(["llvm-xray-19", "extract", binary, "--symbolize"]).stdout
    ids = set()
    for match in re.finditer(r"id:\s*(\d+).*?function-name:\s*'?([\w.]+)", out):
        if match.group(2) in names:
            ids.add(int(match.group(1)))
    return ids


class Uftrace(Variant):
    name = "uftrace"

    def compile(self):
        run([CC, "-O2", "-pg", os.path.join(HERE, "hooks_workload.c"), "-o", self.binary])

    def run_once(self, workload, scratch):
        data = os.path.join(scratch, "uftrace.data")
        out = run(["uftrace", "record", "--no-pager", "-d", data, self.binary, *workload]).stdout
        calls, ns = parse_workload(out)
        report = run(["uftrace", "report", "--no-pager", "-d", data, "-f", "call"]).stdout
        recorded = 0
        for line in report.splitlines():
            fields = line.split()
            if len(fields) == 2 and fields[0].isdigit() and fields[1] in workload_functions(workload):
                recorded += 2 * int(fields[0])
        return calls, ns, recorded, 2 * calls - recorded


class LttngUst(Variant):
    name = "lttng-ust"
    preload = "/usr/lib/x86_64-linux-gnu/liblttng-ust-cyg-profile-fast.so"

    def compile(self):
        run([CC, "-O2", "-finstrument-functions", os.path.join(HERE, "hooks_workload.c"),
             "-o", self.binary])

    def run_once(self, workload, scratch):
        session = f"shapetrace-bench-{os.getpid()}"
        trace = os.path.join(scratch, "lttng")
        run(["lttng", "create", session, f"--output={trace}"])
        try:
            run(["lttng", "enable-channel", "-u", "bench", "-s", session, "--subbuf-size=8M",
                 "--num-subbuf=16"])
            run(["lttng", "enable-event", "-u", "lttng_ust_cyg_profile_fast:*", "-c", "bench",
                 "-s", session])
            run(["lttng", "start", session])
            out = run([self.binary, *workload], env={"LD_PRELOAD": self.preload}).stdout
            run(["lttng", "stop", session])
        finally:
            run(["lttng", "destroy", session], check=False)
        calls, ns = parse_workload(out)
        result = subprocess.run(f"babeltrace2 '{trace}' | wc -l", shell=True, capture_output=True,
                                text=True)
        recorded = int(result.stdout.strip() or 0)
        discarded = sum(int(n) for n in re.findall(r"discarded (\d+) events", result.stderr))
        # Every function is traced (main, fibCalls, nowNs too): count against all, lost = discarded.
        return calls, ns, recorded, discarded


def workload_functions(workload):
    return {"fib"} if workload[0] == "fib" else {"a", "b", "c", "d"}


VARIANTS = [Uninstrumented, EmptyHooks, Shapetrace, ShapetraceLossless, ShapetraceThrottleOn,
            ShapetraceThrottled, ShapetraceCollector,
            ShapetraceOff, XrayFdr, Uftrace, LttngUst]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build", help="shapetrace build directory")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", default="", help="comma-separated variant names")
    parser.add_argument("--baseline", default="",
                        help="another build directory (e.g. main's) measured in the same run")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    work = tempfile.mkdtemp(prefix="shapetrace-hooks-bench-")
    candidates = list(VARIANTS)
    if args.baseline:
        ShapetraceBaseline.baseline = os.path.abspath(args.baseline)
        at = candidates.index(ShapetraceLossless) + 1
        candidates[at:at] = [ShapetraceBaseline, ShapetraceLosslessBaseline]
    chosen = [v for v in candidates if not args.only or v.name in args.only.split(",")]
    variants = [cls(work, build) for cls in chosen]
    for variant in variants:
        variant.compile()
    samples = {}
    for round_ in range(args.runs):
        for workload in WORKLOADS:
            for variant in variants:
                scratch = tempfile.mkdtemp(dir=work)
                calls, ns, recorded, lost = variant.run_once(workload, scratch)
                shutil.rmtree(scratch)
                samples.setdefault((variant.name, workload[0]), []).append(
                    (ns[0] / calls, ns[1] / calls, recorded, lost))
                print(f"round {round_ + 1} {workload[0]:5} {variant.name:15} wall {ns[0] / calls:7.2f} "
                      f"cpu {ns[1] / calls:7.2f} ns/call recorded={recorded} lost={lost}",
                      file=sys.stderr)
    shutil.rmtree(work)
    print("| workload | variant | wall ns/call | thread CPU ns/call | CPU overhead ns/call | "
          "overhead vs shapetrace | events recorded | events lost |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for workload, _ in WORKLOADS:
        wall = {v.name: statistics.median(s[0] for s in samples[(v.name, workload)]) for v in variants}
        cpu = {v.name: statistics.median(s[1] for s in samples[(v.name, workload)]) for v in variants}
        base = cpu.get("uninstrumented", 0.0)
        ours = cpu.get("shapetrace")
        for variant in variants:
            runs = samples[(variant.name, workload)]
            recorded = runs[-1][2]
            lost = None if runs[-1][3] is None else max(s[3] for s in runs)
            overhead = cpu[variant.name] - base
            ratio = f"{overhead / (ours - base):.1f}x" if ours and ours > base else ""
            print(f"| {workload} | {variant.name} | {wall[variant.name]:.1f} | {cpu[variant.name]:.1f} | "
                  f"{overhead:.1f} | {ratio} | {'-' if recorded is None else f'{recorded:,}'} | "
                  f"{'-' if lost is None else f'{lost:,}'} |")

if __name__ == "__main__":
    main()
