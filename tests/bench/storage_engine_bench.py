#!/usr/bin/env python3
"""Whole-program cost of recording every event of a real storage engine that is not ours (issue #29).

The program is leveldb's own benchmark, db_bench, built from Debian 12's source package (leveldb
1.23-4, `apt-get source leveldb`) through leveldb's CMake build, as docs/validation.md built it:
the library and db_bench, every function instrumented. Each run does a fixed amount of work:

  db_bench --benchmarks=fillrandom,overwrite,readrandom --num N --threads T --db DIR

that is T threads putting N random keys into a fresh database, T threads overwriting N random keys
(leveldb's background thread compacting meanwhile), then T threads getting N random keys: 3 T N
operations (puts and gets). db_bench writes to --db under the run's work directory, without sync.

db_bench is built three times with the same configuration (`-O2 -g -DNDEBUG`, Debian's own
optimisation flags; the optional snappy, crc32c and tcmalloc left out whatever is installed, so
that every build does the same work on every machine): plain with clang-19, with
build/bin/shapetrace-cc and shapetrace-c++, and with -pg for uftrace. The variants are run
alternately, --runs times each:

  plain               clang-19 build
  disabled            instrumented, SHAPETRACE_ENABLED=0 (hooks cost a load and a branch)
  in-process          instrumented, SHAPETRACE_OUTPUT=DIR SHAPETRACE_BLOCKING=1
  record              `shapetrace record -o DIR -- db_bench ...` (lossless)
  record --lossy      the same, dropping and counting what the pipeline cannot take
  uftrace             the -pg build under `uftrace record` (when uftrace is installed)
  record, filtered    with --filter-budget R: db_bench built again with SHAPETRACE_PASS_FILTER set
                      to the rule file `shapetrace filter --budget R` writes from a first `record`
                      (made before the alternated runs, with one plain run: its CPU time given as
                      --cpu-time, what recording added per call over plain as --call-cost)

Pinning, for a 2-core machine: db_bench and everything that records it (`shapetrace record` and its
collector, uftrace's recorder) share --cpus (default CPU 0). There is no client to keep apart, as
real_program_bench.py keeps wrk; one core makes the recorder compete with the program, as it does
on a machine without spare cores, so that wall time shows the whole cost and not only what did not
fit on the idle second core; and the other core is left to the rest of the machine.

Printed: medians and ratios to plain of wall time and CPU per operation (user + system time of the
whole process tree from start to exit, the recording process included, over the 3 T N operations);
for each recording its events, events per operation, drops, tracer waits and size (`shapetrace info
--json`); then `shapetrace analyze` (-j 1, -j 2) and `report` wall time and peak memory on the
largest lossless recording.

The source comes from Debian's archive through apt-get (never from anywhere else), into
--source-cache (default ~/.cache/shapetrace-bench), once. The builds go into --work-dir (default a
temporary directory, deleted at the end); a kept --work-dir is built once and reused by later runs
(delete it after rebuilding shapetrace).

  tests/bench/storage_engine_bench.py [--build-dir build] [--runs 5] [--num 100000] [--threads 2]
                                      [--cpus 0] [--filter-budget 1.3x] [--work-dir DIR]
                                      [--source-cache DIR]

Nothing is installed: missing packages are named and the script exits 2; so it does when Debian's
source archive (deb-src) is not enabled, saying what to enable.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

from recording_bench import (Variant, analyse_largest, bench_parser, check_prerequisites, cpu_set,
                             pinned, positive, print_table,
                             recording_variants, run_alternated, shapetrace_figures)

LABEL = "storage_engine_bench"
PACKAGE = "leveldb"
WORKLOAD = ["fillrandom", "overwrite", "readrandom"]
FLAGS = "-O2 -g -DNDEBUG"
# leveldb's optional libraries, off in every build (see the docstring); HAVE_SQLITE3 would add a
# second benchmark program.
CONFIGURATION = ["-DLEVELDB_BUILD_TESTS=OFF", "-DLEVELDB_BUILD_BENCHMARKS=ON",
                 "-DLEVELDB_INSTALL=OFF", "-DHAVE_SNAPPY=OFF", "-DHAVE_CRC32C=OFF",
                 "-DHAVE_TCMALLOC=OFF", "-DHAVE_SQLITE3=OFF"]
BENCHMARK_LINE = re.compile(r"^(\w+)\s*:\s*[\d.]+ micros/op;", re.M)
NO_DEB_SRC = "You must put some 'deb-src' URIs in your sources.list"


def missing_prerequisites(build_dir):
    """What is missing, as lines that say which package or target provides it."""
    missing = []
    for program, package in [("clang-19", "clang-19"), ("clang++-19", "clang-19"),
                             ("cmake", "cmake"), ("ninja", "ninja-build"),
                             ("apt-get", "apt"), ("dpkg-source", "dpkg-dev")]:
        if not shutil.which(program):
            missing.append(f"{program}: install Debian's {package}")
    # db_bench links GoogleTest and GoogleMock (leveldb's benchmark target does, tests or not).
    for library, package in [("libgtest", "libgtest-dev"), ("libgmock", "libgmock-dev")]:
        if not glob.glob(f"/usr/lib/*/{library}.*") + glob.glob(f"/usr/lib/{library}.*"):
            missing.append(f"{library}: install Debian's {package}")
    for program in ("shapetrace", "shapetrace-cc", "shapetrace-c++"):
        path = os.path.join(build_dir, "bin", program)
        if not os.access(path, os.X_OK):
            missing.append(f"{path}: build shapetrace first (cmake --build {build_dir})")
    return missing


def fetch_source(cache):
    """Debian's source package of leveldb, downloaded into `cache` once (apt-get source). Exits 2,
    saying what to enable, when apt has no deb-src entry."""
    os.makedirs(cache, exist_ok=True)
    found = sorted(glob.glob(os.path.join(cache, f"{PACKAGE}_*.dsc")))
    if found:
        return found[-1]
    print(f"{LABEL}: apt-get source --download-only {PACKAGE} into {cache}", file=sys.stderr)
    result = subprocess.run(["apt-get", "source", "--download-only", PACKAGE], cwd=cache,
                            capture_output=True, text=True)
    if NO_DEB_SRC in result.stderr:
        print(f"{LABEL}: apt has no source archive (deb-src) to get {PACKAGE}'s source from. As "
              "root, add deb-src to the Types line of Debian's entry in "
              "/etc/apt/sources.list.d/debian.sources\n  Types: deb deb-src\n(or, with a "
              "one-line /etc/apt/sources.list, a copy of its `deb http://deb.debian.org/debian "
              "bookworm main` line starting with deb-src), then run apt-get update.",
              file=sys.stderr)
        sys.exit(2)
    found = sorted(glob.glob(os.path.join(cache, f"{PACKAGE}_*.dsc")))
    if result.returncode != 0 or not found:
        sys.exit(f"{LABEL}: apt-get source {PACKAGE} failed ({result.returncode}):\n{result.stderr}")
    return found[-1]


def unpack_source(dsc, work_dir):
    """The source tree, Debian's patches applied (dpkg-source -x), under `work_dir`."""
    existing = glob.glob(os.path.join(work_dir, f"{PACKAGE}-*", "CMakeLists.txt"))
    if existing:
        return os.path.dirname(existing[0])
    result = subprocess.run(["dpkg-source", "-x", dsc], cwd=work_dir, capture_output=True,
                            text=True)
    existing = glob.glob(os.path.join(work_dir, f"{PACKAGE}-*", "CMakeLists.txt"))
    if result.returncode != 0 or not existing:
        sys.exit(f"{LABEL}: dpkg-source -x {dsc} failed ({result.returncode}):\n{result.stderr}")
    return os.path.dirname(existing[0])


def build_db_bench(source, work_dir, name, cc, cxx, flags=FLAGS, env=None):
    """db_bench built by leveldb's CMake build in work_dir/name (reused when already built)."""
    build = os.path.join(work_dir, name)
    program = os.path.join(build, "db_bench")
    print(f"{LABEL}: building {name} ({cxx} {flags})", file=sys.stderr)
    steps = [["cmake", "-S", source, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=",
              f"-DCMAKE_C_COMPILER={cc}", f"-DCMAKE_CXX_COMPILER={cxx}",
              f"-DCMAKE_C_FLAGS={flags}", f"-DCMAKE_CXX_FLAGS={flags}", *CONFIGURATION],
             ["cmake", "--build", build, "-j2", "--target", "db_bench"]]
    if os.path.exists(program):
        steps = steps[1:]  # configured before: the build is up to date or finishes it
    for step in steps:
        result = subprocess.run(step, capture_output=True, text=True,
                                env=dict(os.environ, **(env or {})))
        if result.returncode != 0:
            sys.exit(f"{LABEL}: building {name} failed:\n{result.stdout[-4000:]}{result.stderr}")
    return program


def db_bench_arguments(opts, db):
    return [f"--benchmarks={','.join(WORKLOAD)}", f"--num={opts.num}", f"--threads={opts.threads}",
            f"--db={db}"]


def run_db_bench(variant, opts, work_dir):
    """One run of the workload under `variant`: its wall time, CPU per operation and operations."""
    db = os.path.join(work_dir, "db")
    shutil.rmtree(db, ignore_errors=True)
    command = [*variant.command, *db_bench_arguments(opts, db)]
    output_path = os.path.join(work_dir, "db_bench.out")
    with open(output_path, "w") as output:
        start = os.times().elapsed
        process = subprocess.Popen(command, env=dict(os.environ, **variant.env), stdout=output,
                                   stderr=subprocess.STDOUT, preexec_fn=pinned(opts.cpus))
        _, status, usage = os.wait4(process.pid, 0)
        wall = os.times().elapsed - start
    shutil.rmtree(db, ignore_errors=True)
    text = open(output_path).read()
    returncode = os.waitstatus_to_exitcode(status)
    done = BENCHMARK_LINE.findall(text)
    if returncode != 0 or done != WORKLOAD:
        sys.exit(f"{LABEL}: {' '.join(command)} failed (exit {returncode}, benchmarks reported "
                 f"{done}):\n{text[-4000:]}")
    ops = len(WORKLOAD) * opts.threads * opts.num
    return {"wall s": wall, "CPU us/op": (usage.ru_utime + usage.ru_stime) * 1e6 / ops, "ops": ops}


def filtered_variant(opts, source, work_dir, shapetrace, plain, traced):
    """`record` of db_bench built with the rule file `shapetrace filter --budget` writes from a
    first `record` of the full build. The filter's model is given this program's measured cost:
    --cpu-time the recorded run's CPU (its threads wait inside traced functions, so recorded self
    time is not all work), --call-cost what recording added per call over a plain run (the
    hooks, the drain and the collector, where the default is the hooks' microbenchmark)."""
    recording = os.path.join(work_dir, "filter-input")
    rules = os.path.join(work_dir, "filter.rules")
    shutil.rmtree(recording, ignore_errors=True)
    alone = run_db_bench(Variant("filter: plain", [plain], {}), opts, work_dir)
    first = run_db_bench(Variant("filter: record", [shapetrace, "record", "-o", recording, "--",
                                                    traced], {}), opts, work_dir)
    calls = shapetrace_figures(shapetrace)(recording)["events"] / 2
    cpu_seconds = first["CPU us/op"] * first["ops"] / 1e6
    call_cost_ns = (first["CPU us/op"] - alone["CPU us/op"]) * first["ops"] * 1e3 / calls
    command = [shapetrace, "filter", recording, "--budget", opts.filter_budget,
               "--cpu-time", f"{cpu_seconds:.3f}", "--call-cost", f"{max(call_cost_ns, 1):.0f}",
               "-o", rules]
    result = subprocess.run(command, capture_output=True, text=True)
    shutil.rmtree(recording, ignore_errors=True)
    if result.returncode != 0:
        sys.exit(f"{LABEL}: {' '.join(command)} failed ({result.returncode}):\n{result.stderr}")
    print(f"{' '.join(command[1:])}\n(plain {alone['CPU us/op']:.3f} us/op, recorded "
          f"{first['CPU us/op']:.3f} us/op, {calls / first['ops']:,.0f} calls/op):\n"
          f"{result.stdout}")
    bin_dir = os.path.join(opts.build_dir, "bin")
    # A kept work directory's filtered build was made with an earlier rule file: build it again.
    shutil.rmtree(os.path.join(work_dir, "filtered"), ignore_errors=True)
    program = build_db_bench(source, work_dir, "filtered", os.path.join(bin_dir, "shapetrace-cc"),
                             os.path.join(bin_dir, "shapetrace-c++"),
                             env={"SHAPETRACE_PASS_FILTER": rules})
    directory = os.path.join(work_dir, "recordings", "filtered")
    return Variant(f"record, filtered {opts.filter_budget}",
                   [shapetrace, "record", "-o", directory, "--", program], {}, directory,
                   shapetrace_figures(shapetrace), True)


def measure(opts, work_dir):
    dsc = fetch_source(os.path.expanduser(opts.source_cache))
    source = unpack_source(dsc, work_dir)
    bin_dir = os.path.join(opts.build_dir, "bin")
    shapetrace = os.path.join(bin_dir, "shapetrace")
    plain = build_db_bench(source, work_dir, "plain", "clang-19", "clang++-19")
    traced = build_db_bench(source, work_dir, "traced", os.path.join(bin_dir, "shapetrace-cc"),
                            os.path.join(bin_dir, "shapetrace-c++"))
    with_uftrace = opts.uftrace and shutil.which("uftrace") is not None
    if opts.uftrace and not with_uftrace:
        print(f"{LABEL}: uftrace is not installed (Debian's uftrace), its row is left out",
              file=sys.stderr)
    pg = (build_db_bench(source, work_dir, "pg", "clang-19", "clang++-19", f"{FLAGS} -pg")
          if with_uftrace else None)
    variants = [Variant("plain", [plain], {}),
                Variant("disabled", [traced], {"SHAPETRACE_ENABLED": "0"}),
                *recording_variants(shapetrace, traced, os.path.join(work_dir, "recordings"), pg)]
    if opts.filter_budget:
        variants.append(filtered_variant(opts, source, work_dir, shapetrace, plain, traced))
    results, largest = run_alternated(variants, opts.runs,
                                      lambda v: run_db_bench(v, opts, work_dir), work_dir, LABEL)
    print(f"leveldb {os.path.basename(dsc)[len(PACKAGE) + 1:-4]} db_bench "
          f"--benchmarks={','.join(WORKLOAD)} --num={opts.num} --threads={opts.threads} "
          f"({len(WORKLOAD) * opts.threads * opts.num:,} operations a run), on CPUs "
          f"{sorted(opts.cpus)}; medians of {opts.runs} runs\n")
    print_table(variants, results, [("wall s", 2), ("CPU us/op", 3)], "plain")
    analyse_largest(shapetrace, largest, work_dir, LABEL)


def budget(text):
    """A --filter-budget as `shapetrace filter --budget` takes it (1.3x or 1.3, above 1)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)x?", text)
    if not match or float(match.group(1)) <= 1:
        raise argparse.ArgumentTypeError(f"not a ratio above 1: {text!r} (for example 1.3x)")
    return text


def main():
    parser = bench_parser(__doc__)
    parser.add_argument("--num", type=positive(int), default=100000,
                        help="db_bench's --num: keys each thread puts, overwrites and gets")
    parser.add_argument("--threads", type=positive(int), default=2,
                        help="db_bench's --threads: threads doing each benchmark")
    parser.add_argument("--cpus", type=cpu_set, default={0},
                        help="CPUs of db_bench and its recorder (default 0)")
    parser.add_argument("--filter-budget", metavar="R", type=budget,
                        help="add the `record, filtered R` variant (shapetrace filter --budget R)")
    # uftrace 0.13's mcount sometimes fails on this program ("writing shmem name to pipe: Bad
    # file descriptor"), which ends the whole measurement: its row can be left out.
    parser.add_argument("--no-uftrace", dest="uftrace", action="store_false",
                        help="leave uftrace's row out even when it is installed")
    parser.add_argument("--work-dir", help="where the builds go, kept and reused (default: a "
                        "temporary directory, deleted)")
    parser.add_argument("--source-cache", default=os.path.join(
        os.environ.get("XDG_CACHE_HOME", "~/.cache"), "shapetrace-bench"),
        help="where Debian's source package is downloaded once (default %(default)s)")
    opts = parser.parse_args()
    check_prerequisites(parser, opts, {"--cpus": opts.cpus}, missing_prerequisites(opts.build_dir),
                        LABEL)
    opts.build_dir = os.path.abspath(opts.build_dir)
    if opts.work_dir:
        os.makedirs(opts.work_dir, exist_ok=True)
        measure(opts, os.path.abspath(opts.work_dir))
    else:
        with tempfile.TemporaryDirectory(prefix="storage-engine-bench-") as work_dir:
            measure(opts, work_dir)


if __name__ == "__main__":
    main()
