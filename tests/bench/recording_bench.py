"""What the whole-program benchmarks share (issue #21): ways of recording every event of a program,
runs alternated between variants, a table of medians, and what the largest recording costs to
analyse. Imported by kvstore_overhead.py (the example service), real_program_bench.py (a real
server that is not ours) and storage_engine_bench.py (leveldb's db_bench); not a command of its own.

A variant is a command line that ends with the program (the benchmark appends the program's
arguments), extra environment, and, for the recorders, the directory its recording goes to and the
function that reads that recording's figures. After each run the recording is measured and deleted,
except the largest lossless shapetrace recording, which is kept for `analyze` and `report`.
"""
import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

Variant = collections.namedtuple("Variant", "name command env recording figures lossless",
                                 defaults=(None, None, False))


def directory_mb(directory):
    """Bytes of the files under `directory`, in MB (10^6)."""
    return sum(os.path.getsize(os.path.join(root, name))
               for root, _, names in os.walk(directory) for name in names) / 1e6


def shapetrace_figures(shapetrace):
    """A reader of a shapetrace recording's events, drops and tracer waits (`shapetrace info --json`)."""
    def figures(directory):
        info = json.loads(subprocess.run([shapetrace, "info", directory, "--json"], check=True,
                                         capture_output=True, text=True).stdout)
        threads = [t for p in info["processes"] for t in p["threads"]]
        return {"events": sum(t["events"] for t in threads),
                "dropped": sum(t["dropped"] for t in threads),
                # Killed, crashed or still running when the recording stopped: their unsent events
                # are lost in an unknown amount, so "dropped 0" alone would not be the whole truth.
                "no process end": info["processes_without_end"],
                "tracer waits": sum(t["tracer_waits"] for t in threads),
                "tracer wait ms": sum(t["tracer_wait_ns"] for t in threads) / 1e6,
                "recording MB": directory_mb(directory)}
    return figures


def uftrace_figures(directory):
    return {"recording MB": directory_mb(directory)}


def recording_variants(shapetrace, traced, recordings, uftrace_program):
    """The ways of recording every event: in-process, `shapetrace record` (lossless and --lossy)
    and, when `uftrace_program` (a -pg build of the same program) is given, `uftrace record`."""
    figures = shapetrace_figures(shapetrace)

    def directory(name):
        return os.path.join(recordings, name)

    variants = [
        Variant("in-process", [traced],
                {"SHAPETRACE_OUTPUT": directory("in-process"), "SHAPETRACE_BLOCKING": "1",
                 "SHAPETRACE_ENABLED": "1"}, directory("in-process"), figures, True),
        Variant("record", [shapetrace, "record", "-o", directory("record"), "--", traced], {},
                directory("record"), figures, True),
        Variant("record --lossy",
                [shapetrace, "record", "--lossy", "-o", directory("lossy"), "--", traced], {},
                directory("lossy"), figures),
    ]
    if uftrace_program:
        variants.append(Variant("uftrace", ["uftrace", "record", "-d", directory("uftrace"),
                                            uftrace_program], {}, directory("uftrace"),
                                uftrace_figures))
    return variants


# Options and placement the benchmarks share.
def pinned(cpus):
    return lambda: os.sched_setaffinity(0, cpus)


def cpu_set(text):
    """"0" or "0,1" or "0-1": a set of CPU numbers, for the affinity options."""
    cpus = set()
    try:
        for part in text.split(","):
            first, _, last = part.partition("-")
            cpus.update(range(int(first), int(last or first) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a CPU list: {text!r} (for example 0 or 0-1 or 0,2)")
    return cpus


def positive(kind):
    def parse(text):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive: {text}")
        return value
    return parse


def bench_parser(doc):
    """The options every real-program benchmark takes, its --help made of its docstring."""
    parser = argparse.ArgumentParser(
        description=doc.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(doc.split("\n")[2:]))
    parser.add_argument("--build-dir", default="build",
                        help="shapetrace's build directory (bin/shapetrace, bin/shapetrace-c++)")
    parser.add_argument("--runs", type=positive(int), default=5, help="runs of each variant")
    return parser


def check_prerequisites(parser, opts, cpu_options, missing, label):
    """Refuses CPUs this process may not run on (cpu_options: option name -> its CPU set) and, with
    exit status 2, names what the machine lacks (missing: a list of descriptions)."""
    available = os.sched_getaffinity(0)
    for option, cpus in cpu_options.items():
        if not cpus <= available:
            parser.error(f"{option}: CPU(s) {sorted(cpus - available)} not available "
                         f"(this process may run on {sorted(available)})")
    if missing:
        print(f"{label}: missing:\n  " + "\n  ".join(missing), file=sys.stderr)
        sys.exit(2)


def run_alternated(variants, runs, run_one, work_dir, label):
    """Runs every variant `runs` times, interleaved so that the machine's load hits all alike.
    `run_one(variant)` returns a dict of figures (with "requests" or "ops", the work done, a
    recording's events per request or per operation are added). Returns the figures per variant name and the
    largest lossless shapetrace recording kept in `work_dir` as (events, directory)."""
    results = {variant.name: [] for variant in variants}
    largest = (0, None)
    for i in range(runs):
        for variant in variants:
            if variant.recording:
                shutil.rmtree(variant.recording, ignore_errors=True)
            result = run_one(variant)
            if variant.recording:
                result.update(variant.figures(variant.recording))
                for work, column in WORK_UNITS.items():
                    if "events" in result and result.get(work):
                        result[column] = result["events"] / result[work]
                if variant.lossless and result["events"] > largest[0]:
                    kept = os.path.join(work_dir, "largest")
                    shutil.rmtree(kept, ignore_errors=True)
                    os.rename(variant.recording, kept)
                    largest = (result["events"], kept)
                shutil.rmtree(variant.recording, ignore_errors=True)
            results[variant.name].append(result)
            print(f"{label}: run {i + 1}/{runs} {variant.name}: {result}", file=sys.stderr)
    return results, largest


def peak_memory(command, label):
    """Wall seconds, peak RSS and peak anonymous memory (MiB) of one command. RSS also counts the
    recording's segments, which readers map from the files (reclaimable page cache); anonymous
    memory, sampled from /proc/PID/smaps_rollup every 20 ms, is what the process itself holds."""
    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak_anonymous_kib = 0
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        try:
            with open(f"/proc/{process.pid}/smaps_rollup") as rollup:
                for line in rollup:
                    if line.startswith("Anonymous:"):
                        peak_anonymous_kib = max(peak_anonymous_kib, int(line.split()[1]))
        except (FileNotFoundError, ProcessLookupError, ValueError):
            pass  # exiting: the last sample stands
        time.sleep(0.02)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.exit(f"{label}: {' '.join(command)} failed (exit {process.returncode})")
    return time.monotonic() - start, usage.ru_maxrss / 1024, peak_anonymous_kib / 1024


def analyse_largest(shapetrace, largest, work_dir, label):
    """Prints `analyze` (-j 1 and -j 2) and `report` time and peak memory on the largest recording."""
    events, directory = largest
    if not directory:
        return
    print(f"\nanalysis of the largest lossless recording ({events:,} events, "
          f"{directory_mb(directory):,.0f} MB):")
    for name, command in [
            ("analyze", [shapetrace, "analyze", directory, "--json", os.devnull]),
            ("analyze -j 2", [shapetrace, "analyze", "-j", "2", directory, "--json", os.devnull]),
            ("report", [shapetrace, "report", directory, "-o", os.path.join(work_dir, "report.html")])]:
        seconds, rss, anonymous = peak_memory(command, label)
        print(f"  {name}: {seconds:.1f} s, peak RSS {rss:.0f} MiB, peak anonymous {anonymous:.0f} MiB")


# The work a run reports, and the column of a recording's events per unit of it.
WORK_UNITS = {"requests": "events/request", "ops": "events/op"}
RECORDING_COLUMNS = ["events", *WORK_UNITS.values(), "dropped", "no process end", "tracer waits",
                     "tracer wait ms", "recording MB"]


def print_table(variants, results, metrics, base):
    """A Markdown table of medians: `metrics` as (name, decimals), each with its ratio to variant
    `base`'s median, then the recordings' figures where any run has them."""
    names = [name for name, _ in metrics]
    extra = [c for c in RECORDING_COLUMNS if any(c in r for rows in results.values() for r in rows)]
    baseline = {name: statistics.median(r[name] for r in results[base]) for name in names}
    print(f"| variant | {' | '.join(names + extra)} |")
    print("|---|" + "---:|" * len(names + extra))
    for variant in variants:
        rows = results[variant.name]
        cells = []
        for name, decimals in metrics:
            value = statistics.median(r[name] for r in rows)
            ratio = value / baseline[name] if baseline[name] else float("nan")
            cells.append(f"{value:,.{decimals}f} ({ratio:.2f}x)")
        for name in extra:
            values = [r[name] for r in rows if name in r]
            cells.append(f"{statistics.median(values):,.0f}" if values else "")
        print(f"| {variant.name} | {' | '.join(cells)} |")
