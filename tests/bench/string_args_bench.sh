#!/usr/bin/env bash
# What recording a string argument costs (FUNCTION@argN/s, docs/runtime.md): ns per call of
# string_args_target.c's take(path, n), a 48-byte path, recorded by the in-process sink
# (SHAPETRACE_OUTPUT) three ways, and of string_view_args_target.cpp's take_view(path, n), the
# same path as a std::string_view, two ways; alternated round by round, medians of the rounds:
#   none       take@ not chosen (its calls only)
#   pointer    SHAPETRACE_PASS_ARGS='take@arg1' (the address: one value slot)
#   string     SHAPETRACE_PASS_ARGS='take@arg1/s' (the text read with process_vm_readv)
#   view-none  take_view not chosen (its calls only)
#   view       SHAPETRACE_PASS_ARGS='take_view@arg1/s' (the view's 48 bytes, -g)
#
#   tests/bench/string_args_bench.sh [build dir] [calls] [rounds]   (defaults: build, 200000, 7)
set -euo pipefail
cd "$(dirname "$0")/../.."
build="$(cd "${1:-build}" && pwd)"
calls="${2:-200000}"
rounds="${3:-7}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cc="$build/bin/shapetrace-cc"
"$cc" -O2 tests/bench/string_args_target.c -o "$work/none"
SHAPETRACE_PASS_ARGS='take@arg1' "$cc" -O2 tests/bench/string_args_target.c -o "$work/pointer"
SHAPETRACE_PASS_ARGS='take@arg1/s' "$cc" -O2 tests/bench/string_args_target.c -o "$work/string"
"$build/bin/shapetrace-c++" -O2 -g tests/bench/string_view_args_target.cpp -o "$work/view-none"
SHAPETRACE_PASS_ARGS='take_view@arg1/s' "$build/bin/shapetrace-c++" -O2 -g \
  tests/bench/string_view_args_target.cpp -o "$work/view"
variants=(none pointer string view-none view)
for round in $(seq "$rounds"); do
  for v in "${variants[@]}"; do
    rm -rf "$work/rec"
    SHAPETRACE_OUTPUT="$work/rec" SHAPETRACE_BLOCKING=1 "$work/$v" "$calls" | cut -d' ' -f1 >> "$work/$v.ns"
  done
done
median() { sort -n "$1" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo "load (1 min): $(cut -d' ' -f1 /proc/loadavg); $calls calls x $rounds rounds, alternated"
for v in "${variants[@]}"; do
  printf '%-9s %8s ns/call (median; rounds: %s)\n' "$v" "$(median "$work/$v.ns")" "$(tr '\n' ' ' < "$work/$v.ns")"
done
