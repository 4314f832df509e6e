#!/usr/bin/env python3
"""The README's commands work as written (issue #31).

Every shell command block of README.md (an indented block, or a fenced block marked sh, bash or
shell) is extracted and each of its commands is run, in a fresh directory per block, by bash. A
command fails the test when it exits non-zero, or prints an error line ("...: error: ...",
"error: ...", "CMake Error", a Python traceback). A block's commands ending in `&` run in the background until the block's last
command is done; they must still be running then (or have exited 0), and are stopped with SIGTERM.

What the README leaves to the reader is filled in here, always the same way:

- `build/` is the build directory under test: each block's directory has a `build` symlink to it,
  so `build/bin/shapetrace`, `$PWD/build/bin/shapetrace-cc` and `-Lbuild/lib` are run as written.
- `./app --its --arguments` and `./service` are the example service, compiled with the plugin
  (examples/kvstore-traced), serving a fixed small number of requests (KVSTORE_ARGS) so that the
  recording stays small (the commands that read it take seconds).
- `rec` is made by the block's own `record` command; `base.rec`, the baseline of `diff` and
  `report --baseline`, is recorded beforehand from the same service whose puts never wait for a
  flush (`--max-unflushed-mib 0`, as scripts/demo's baseline).
- `--base-window ..60s --new-window 60s..` split `rec` in two halves of its time span (read from
  `shapetrace info rec --json`): the recording lasts well under a minute, and how long depends on
  the machine.
- `scripts/demo` runs with the build directory under test, for 1 second, without its baseline run,
  writing under the block's directory (`--build-dir B --seconds 1 --no-baseline --out DIR/demo`).
- `app` (the project `cmake -S app` configures) and the sources of `make` and of the `clang++-19
  ... ` line (whose `...` become `-o app-by-hand hello.cpp`) are one-file programs written here.
- The live example's `/tmp/st/` becomes a folder of the block's directory that does not exist yet
  (the collector creates it), and its HTTP port 8470 a free port, so that tests running at the same
  time do not meet.

Not run, with the reason printed: `scripts/test` and `ctest` (they run this test), and
`scripts/setup` (it installs packages and builds whole sanitizer trees: minutes, not seconds).

  readme_test.py README BUILD_DIR KVSTORE WORK_DIR
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

KVSTORE_ARGS = "--requests 20000 --threads 2 --keys 20000"
COMMAND_TIMEOUT_S = 120
# "shapetrace diff: error: ...", as every command reports one, and what cmake and python print.
# Function names in the output may hold "Error::" (CLI::Error::Error()): an error line is one that
# says so, not one that names such a function.
ERROR_LINE = re.compile(r"(^|: )error: |^CMake Error|^Traceback")
NOT_RUN = [
    ("scripts/test", "runs the whole suite, this test included"),
    ("ctest", "runs the suite, this test included"),
    ("scripts/setup", "installs packages and builds whole trees (minutes)"),
]


def command_blocks(readme_text):
    """The README's shell command blocks, each a list of lines, in order."""
    blocks, current, fence, previous_blank = [], None, None, True
    for line in readme_text.splitlines():
        if fence is not None:
            if line.startswith("```"):
                if fence in ("sh", "bash", "shell") and current:
                    blocks.append(current)
                fence, current = None, None
            elif fence in ("sh", "bash", "shell"):
                current.append(line)
            continue
        if line.startswith("```"):
            fence, current = line[3:].strip(), []
            continue
        if line.startswith("    ") and (current is not None or previous_blank):
            current = current if current is not None else []
            current.append(line[4:])
        elif current is not None and line.strip():
            blocks.append(current)
            current = None
        previous_blank = not line.strip()
    if current:
        blocks.append(current)
    return [[c for c in block if c.strip()] for block in blocks]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Half of the time `rec` spans (its first event to its last, from `info --json`), in microseconds:
# how long the recording lasts depends on the machine, so the window is worked out from it.
HALF_OF_REC = (
    "build/bin/shapetrace info rec --json | python3 -c \"import json, sys; "
    "t = [x for p in json.load(sys.stdin)['processes'] for x in p['threads']]; "
    "print('%dus' % ((max(x['last_ns'] for x in t) - min(x['first_ns'] for x in t)) // 2000))\"")


def substitute(command, env):
    """The command with the README's placeholders filled in (see the module's text)."""
    replacements = [
        ("./app --its --arguments", "$KVSTORE " + KVSTORE_ARGS),
        ("./service", "$KVSTORE " + KVSTORE_ARGS),
        ("--base-window ..60s --new-window 60s..",
         "--base-window ..$(%s) --new-window $(%s).." % (HALF_OF_REC, HALF_OF_REC)),
        ("clang++-19 -fpass-plugin=build/lib/ShapeTracePass.so ... ",
         "clang++-19 -fpass-plugin=build/lib/ShapeTracePass.so -o app-by-hand hello.cpp "),
        ("/tmp/st/", "$PWD/st/"),
        ("127.0.0.1:8470", "127.0.0.1:" + str(env["HTTP_PORT"])),
    ]
    for old, new in replacements:
        command = command.replace(old, new)
    if re.match(r"scripts/demo\b", command):
        # scripts/demo runs from the source tree: its output goes to an absolute path.
        command = ("$SOURCE/scripts/demo --build-dir $BUILD --seconds 1 --no-baseline "
                   "--out $PWD/demo" + command[len("scripts/demo"):])
    return command


def prepare(block_dir, env):
    """What the README's commands take as given: the build, a baseline, programs to compile."""
    os.makedirs(block_dir)
    os.symlink(env["BUILD"], os.path.join(block_dir, "build"))
    os.makedirs(os.path.join(block_dir, "app"))
    with open(os.path.join(block_dir, "app", "CMakeLists.txt"), "w") as f:
        f.write("cmake_minimum_required(VERSION 3.20)\nproject(app C CXX)\n"
                "add_executable(app main.c)\n")
    with open(os.path.join(block_dir, "app", "main.c"), "w") as f:
        f.write("int main(void) { return 0; }\n")
    with open(os.path.join(block_dir, "hello.c"), "w") as f:
        f.write("int main(void) { return 0; }\n")
    with open(os.path.join(block_dir, "hello.cpp"), "w") as f:
        f.write("int main() { return 0; }\n")
    with open(os.path.join(block_dir, "Makefile"), "w") as f:
        f.write("hello: hello.c\n\t$(CC) -o hello hello.c\n")


def record_baseline(block_dir, env):
    run = subprocess.run(
        "build/bin/shapetrace record -o base.rec -- $KVSTORE " + KVSTORE_ARGS +
        " --max-unflushed-mib 0", shell=True, cwd=block_dir, env=env, capture_output=True,
        text=True, timeout=COMMAND_TIMEOUT_S, executable="/bin/bash")
    if run.returncode != 0:
        sys.exit("FAIL: the baseline recording (base.rec):\n" + run.stdout + run.stderr)


def wait_until_ready(command, block_dir, deadline):
    """A background server is ready when its socket exists or its port accepts a connection."""
    listen = re.search(r"--listen ipc://(\S+)", command)
    http = re.search(r"--http 127\.0\.0\.1:(\d+)", command)
    while time.monotonic() < deadline:
        if listen and os.path.exists(os.path.expandvars(listen.group(1).replace("$PWD", block_dir))):
            return True
        if http:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", int(http.group(1)))) == 0:
                    return True
        if not listen and not http:
            return True
        time.sleep(0.05)
    return False


def error_lines(text):
    return [line for line in text.splitlines() if ERROR_LINE.search(line)]


def run_block(number, block, work, env):
    block_dir = os.path.join(work, "block-%d" % number)
    prepare(block_dir, env)
    env = dict(env, PWD=block_dir)
    if any(" base.rec" in c for c in block):
        record_baseline(block_dir, env)
    failures, background = [], []
    for index, original in enumerate(block):
        skipped = next((why for prefix, why in NOT_RUN if original.startswith(prefix)), None)
        if skipped:
            print("not run: %s (%s)" % (original, skipped))
            continue
        command = substitute(original, env)
        log = os.path.join(block_dir, "command-%d" % index)
        if command.rstrip().endswith("&"):
            out = open(log + ".out", "w")
            process = subprocess.Popen(command.rstrip()[:-1], shell=True, cwd=block_dir, env=env,
                                       stdout=out, stderr=subprocess.STDOUT, text=True,
                                       executable="/bin/bash", start_new_session=True)
            background.append((original, process, log + ".out"))
            if not wait_until_ready(command, block_dir, time.monotonic() + 30):
                failures.append("%s: not ready after 30 s" % original)
            print("started: %s" % original)
            continue
        started = time.monotonic()
        try:
            run = subprocess.run(command, shell=True, cwd=block_dir, env=env, capture_output=True,
                                 text=True, timeout=COMMAND_TIMEOUT_S, executable="/bin/bash")
        except subprocess.TimeoutExpired:
            failures.append("%s: still running after %d s" % (original, COMMAND_TIMEOUT_S))
            continue
        output = run.stdout + run.stderr
        errors = error_lines(output)
        print("%s: %s (exit %d, %.1f s)" % ("ok" if run.returncode == 0 and not errors else "FAIL",
                                             original, run.returncode,
                                             time.monotonic() - started))
        if run.returncode != 0 or errors:
            failures.append("%s\n  ran as: %s\n  exit %d\n%s" % (original, command, run.returncode,
                                                                 output[-3000:]))
    for original, process, out in background:
        early = process.poll()
        if early is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                failures.append("%s: did not stop within 30 s of SIGTERM" % original)
        elif early != 0:
            failures.append("%s: exited %d while the block ran" % (original, early))
        with open(out) as f:
            errors = error_lines(f.read())
        if errors:
            failures.append("%s:\n%s" % (original, "\n".join(errors)))
    return failures


def main():
    readme, build, kvstore, work = sys.argv[1:5]
    source = os.path.dirname(os.path.abspath(readme))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, BUILD=os.path.abspath(build), KVSTORE=os.path.abspath(kvstore),
               SOURCE=source, HTTP_PORT=str(free_port()))
    with open(readme) as f:
        blocks = command_blocks(f.read())
    failures, commands = [], 0
    for number, block in enumerate(blocks):
        commands += len(block)
        failures += run_block(number, block, work, env)
    if commands < 20:
        failures.append("only %d commands found in %s: the extraction is broken" % (commands, readme))
    for failure in failures:
        print("\nFAIL: " + failure)
    print("\n%d blocks, %d commands, %d failures" % (len(blocks), commands, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
