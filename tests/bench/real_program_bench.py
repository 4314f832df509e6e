#!/usr/bin/env python3
"""Whole-program cost of recording every event of a real program that is not ours (issue #21).

The program is Boost.Beast's own multi-threaded asynchronous HTTP server, built from the source that
Debian's libboost1.74-doc ships (examples/libs/beast/example/http/server/async/http_server_async.cpp,
usage `http-server-async <address> <port> <doc_root> <threads>`); Asio and Beast are header-only, so
every function of the server, the library's included, is instrumented. It serves one small file
from a temporary doc root to `wrk` (Debian's wrk), a fixed number of connections for a fixed time.

The server is compiled three times into a temporary directory, with the same flags (-std=c++17 -O2
-g -pthread): plain with clang++-19, with build/bin/shapetrace-c++, and with -pg for uftrace. The
variants are run alternately, --runs times each:

  plain               clang++-19 build
  disabled            instrumented, SHAPETRACE_ENABLED=0 (hooks cost a load and a branch)
  in-process          instrumented, SHAPETRACE_OUTPUT=DIR SHAPETRACE_BLOCKING=1
  record              `shapetrace record -o DIR -- server` (lossless)
  record --lossy      the same, dropping and counting what the pipeline cannot take
  uftrace             the -pg build under `uftrace record` (when uftrace is installed)

Pinning, for a 2-core machine: the server and everything that records it (the `shapetrace record`
process and its collector, uftrace's recorder) share --server-cpus (default CPU 0), wrk runs alone
on --wrk-cpus (default CPU 1) with one thread, so that the client's cost never counts and tracing
competes with the program for the same core, as it does on a machine without spare cores.

Printed: medians and ratios to plain of requests per second (wrk) and server CPU per request (user
+ system time of the server's whole process tree from start to exit, the recording process
included, over the requests wrk completed: startup and shutdown are part of it, so longer runs
amortise them); for each recording its events, drops, tracer waits and size (`shapetrace info
--json`); then `shapetrace analyze` (-j 1, -j 2) and `report` wall time, peak RSS and peak anonymous
memory on the largest lossless recording. The server has no way to stop but a signal: it is ended
with SIGTERM, as a user would end it, so its recordings have no process end (their last calls stay
open); the load has stopped by then and the drain has sent everything.

  tests/bench/real_program_bench.py [--build-dir build] [--runs 5] [--seconds 10] [--threads 2]
                                    [--connections 16] [--server-cpus 0] [--wrk-cpus 1]

Nothing is installed: missing packages are named and the script exits 2.
"""
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from recording_bench import (Variant, analyse_largest, bench_parser, check_prerequisites, cpu_set,
                             pinned, positive, print_table,
                             recording_variants, run_alternated)

LABEL = "real_program_bench"
SOURCE = ("/usr/share/doc/libboost1.74-doc/examples/libs/beast/example/http/server/async/"
          "http_server_async.cpp")
FLAGS = ["-std=c++17", "-O2", "-g", "-pthread"]
# The file served: small, so that the server's own code (parsing, routing, the response's
# headers, the asynchronous reads and writes) is most of a request, not copying bytes.
DOCUMENT = "index.html"
DOCUMENT_BYTES = 1024

WRK_TOTAL = re.compile(r"^\s*(\d+) requests in ", re.M)
WRK_RATE = re.compile(r"^Requests/sec:\s*([\d.]+)", re.M)
WRK_BAD_RESPONSES = re.compile(r"^\s*Non-2xx or 3xx responses: (\d+)$", re.M)
WRK_SOCKET_ERRORS = re.compile(r"^\s*Socket errors: (.*)$", re.M)


def missing_prerequisites(build_dir):
    """What is missing, as lines that say which package or target provides it."""
    missing = []
    for path, package in [(SOURCE, "libboost1.74-doc (Boost.Beast's example sources)"),
                          ("/usr/include/boost/beast.hpp", "libboost-dev (Boost's headers)")]:
        if not os.path.exists(path):
            missing.append(f"{path}: install Debian's {package}")
    for program, package in [("wrk", "wrk"), ("clang++-19", "clang-19")]:
        if not shutil.which(program):
            missing.append(f"{program}: install Debian's {package}")
    for program in ("shapetrace", "shapetrace-c++"):
        path = os.path.join(build_dir, "bin", program)
        if not os.access(path, os.X_OK):
            missing.append(f"{path}: build shapetrace first (cmake --build {build_dir})")
    return missing


def build_servers(build_dir, work_dir, with_uftrace):
    """The server plain, instrumented and (for uftrace) with -pg: paths, the last None without uftrace."""
    def compile_server(compiler, name, extra=()):
        output = os.path.join(work_dir, name)
        print(f"{LABEL}: building {name} ({compiler})", file=sys.stderr)
        result = subprocess.run([compiler, *FLAGS, *extra, SOURCE, "-o", output],
                                capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"{LABEL}: building {name} failed:\n{result.stderr}")
        return output

    shapetrace_cxx = os.path.join(build_dir, "bin", "shapetrace-c++")
    return (compile_server("clang++-19", "server-plain"),
            compile_server(shapetrace_cxx, "server-traced"),
            compile_server("clang++-19", "server-pg", ["-pg"]) if with_uftrace else None)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_listening(process, port, command):
    deadline = time.monotonic() + 60  # uftrace and `record` start before the server does
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"{LABEL}: {' '.join(command)} exited ({process.returncode}) before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    process.kill()
    sys.exit(f"{LABEL}: {' '.join(command)} did not listen on port {port} within 60 s")


def program_processes(pid, executable):
    """`pid` and its descendants that run `executable`."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        with contextlib.suppress(OSError):
            if os.path.realpath(f"/proc/{current}/exe") == executable:
                found.append(current)
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    pending.extend(int(child) for child in children.read().split())
    return found


def ended_by_sigterm(variant, returncode):
    if variant.name == "uftrace":
        return returncode == 2  # "WARN: child terminated by signal: 15"
    # The server itself dies of the signal; `shapetrace record` exits with 128 + its number.
    return returncode in (-signal.SIGTERM, 128 + signal.SIGTERM)


def serve_and_load(variant, opts, work_dir, doc_root):
    """One run: the server under `variant`, loaded by wrk, then ended with SIGTERM."""
    port = free_port()
    command = [*variant.command, "127.0.0.1", str(port), doc_root, str(opts.threads)]
    stderr_path = os.path.join(work_dir, "server.stderr")
    with open(stderr_path, "w") as stderr:
        server = subprocess.Popen(command, env=dict(os.environ, **variant.env),
                                  stdout=subprocess.DEVNULL, stderr=stderr,
                                  preexec_fn=pinned(opts.server_cpus))
    try:
        wait_until_listening(server, port, command)
        load = subprocess.run(["wrk", "-t1", f"-c{opts.connections}", f"-d{opts.seconds}s",
                               f"http://127.0.0.1:{port}/{DOCUMENT}"], capture_output=True,
                              text=True, preexec_fn=pinned(opts.wrk_cpus))
    finally:
        # To the server itself, not its recorder: `uftrace record` ends on SIGTERM without ending
        # its program (which lives on, orphaned); both recorders finish once the server has exited.
        program = os.path.realpath(variant.command[-1])
        for pid in program_processes(server.pid, program) or [server.pid]:
            os.kill(pid, signal.SIGTERM)
    _, status, usage = os.wait4(server.pid, 0)
    server.returncode = os.waitstatus_to_exitcode(status)
    if not ended_by_sigterm(variant, server.returncode):
        sys.exit(f"{LABEL}: {' '.join(command)} failed ({server.returncode}):\n"
                 f"{open(stderr_path).read()}")
    if load.returncode != 0 or not WRK_TOTAL.search(load.stdout):
        sys.exit(f"{LABEL}: wrk failed ({load.returncode}):\n{load.stdout}{load.stderr}")
    bad = WRK_BAD_RESPONSES.search(load.stdout)
    if bad:  # the server misbehaved: its figures would not be those of serving the file
        sys.exit(f"{LABEL}: {variant.name}: {bad.group(1)} responses were not 200")
    socket_errors = WRK_SOCKET_ERRORS.search(load.stdout)
    if socket_errors:  # timeouts under a slow variant: its completed requests still count
        print(f"{LABEL}: {variant.name}: wrk's socket errors: {socket_errors.group(1)}",
              file=sys.stderr)
    requests = int(WRK_TOTAL.search(load.stdout).group(1))
    cpu = usage.ru_utime + usage.ru_stime
    return {"req/s": float(WRK_RATE.search(load.stdout).group(1)),
            "server CPU us/request": cpu * 1e6 / requests, "requests": requests}


def main():
    parser = bench_parser(__doc__)
    parser.add_argument("--seconds", type=positive(int), default=10,
                        help="wrk's duration per run")
    parser.add_argument("--threads", type=positive(int), default=2,
                        help="the server's I/O threads")
    parser.add_argument("--connections", type=positive(int), default=16,
                        help="wrk's open connections")
    parser.add_argument("--server-cpus", type=cpu_set, default={0},
                        help="CPUs of the server and its recorder (default 0)")
    parser.add_argument("--wrk-cpus", type=cpu_set, default={1}, help="CPUs of wrk (default 1)")
    opts = parser.parse_args()
    check_prerequisites(parser, opts, {"--server-cpus": opts.server_cpus, "--wrk-cpus": opts.wrk_cpus},
                        missing_prerequisites(opts.build_dir), LABEL)
    with_uftrace = shutil.which("uftrace") is not None
    if not with_uftrace:
        print(f"{LABEL}: uftrace is not installed (Debian's uftrace), its row is left out",
              file=sys.stderr)
    shapetrace = os.path.join(opts.build_dir, "bin", "shapetrace")
    with tempfile.TemporaryDirectory(prefix="real-program-bench-") as work_dir:
        plain, traced, pg = build_servers(opts.build_dir, work_dir, with_uftrace)
        doc_root = os.path.join(work_dir, "doc")
        os.mkdir(doc_root)
        with open(os.path.join(doc_root, DOCUMENT), "w") as document:
            document.write("x" * DOCUMENT_BYTES)
        variants = [Variant("plain", [plain], {}),
                    Variant("disabled", [traced], {"SHAPETRACE_ENABLED": "0"}),
                    *recording_variants(shapetrace, traced, os.path.join(work_dir, "recordings"),
                                        pg)]
        results, largest = run_alternated(
            variants, opts.runs, lambda v: serve_and_load(v, opts, work_dir, doc_root), work_dir, LABEL)
        print(f"Boost.Beast http_server_async, {opts.threads} threads on CPUs "
              f"{sorted(opts.server_cpus)}; wrk 1 thread, {opts.connections} connections, "
              f"{opts.seconds} s, on CPUs {sorted(opts.wrk_cpus)}; medians of {opts.runs} runs\n")
        print_table(variants, results, [("req/s", 0), ("server CPU us/request", 2)], "plain")
        analyse_largest(shapetrace, largest, work_dir, LABEL)


if __name__ == "__main__":
    main()
