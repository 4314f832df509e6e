#!/usr/bin/env bash
# What setjmp and longjmp cost a traced program, in instructions counted by callgrind inside
# bench_setjmp() (setjmp in an instrumented frame) and bench_longjmp() (setjmp, then a longjmp out
# of three instrumented frames) of tests/bench/jump_cost_target.c, per iteration, minus the
# uninstrumented program. The runtime interposes setjmp (an assembly trampoline) and longjmp
# (docs/runtime.md, "longjmp"); programs that call neither pay nothing for it.
#
#   tests/bench/jump_cost.sh [build dir] [iterations] [baseline build dir]
#                                           (defaults: build, 100000, none)
#
# With a baseline build (e.g. main's, before longjmp's frames were ended), it is measured in the
# same run.
set -euo pipefail
cd "$(dirname "$0")/../.."
build="$(cd "${1:-build}" && pwd)"
n="${2:-100000}"
baseline=""
[ -z "${3:-}" ] || baseline="$(cd "$3" && pwd)"
src="$PWD/tests/bench/jump_cost_target.c"
work="$(mktemp -d /tmp/shapetrace-jump-cost-XXXXXX)"
trap 'rm -rf "$work"' EXIT
command -v valgrind > /dev/null || { echo "valgrind is required (apt-get install valgrind)" >&2; exit 2; }

# As pass_call_cost.sh: valgrind reads a copy of each runtime without debug information.
mkdir -p "$work/lib" "$work/baseline-lib"
objcopy --strip-debug "$build/lib/libshapetrace-rt.so" "$work/lib/libshapetrace-rt.so"
[ -z "$baseline" ] ||
  objcopy --strip-debug "$baseline/lib/libshapetrace-rt.so" "$work/baseline-lib/libshapetrace-rt.so"

clang-19 -O2 "$src" -o "$work/plain"
"$build/bin/shapetrace-cc" -O2 "$src" -o "$work/shapetrace"
[ -z "$baseline" ] || "$baseline/bin/shapetrace-cc" -O2 "$src" -o "$work/baseline"

# Instructions inside <function> (inclusive) for <binary> with <library dir>.
count() { # <function> <library dir> <binary>
  local out="$work/callgrind.$1.$(basename "$3")"
  (cd "$work" && LD_LIBRARY_PATH="$2" SHAPETRACE_ENDPOINT="ipc://$work/none" valgrind \
     --tool=callgrind --toggle-collect="$1" --callgrind-out-file="$out" "$3" "$n" \
     > "$out.log" 2>&1)
  sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$out"
}

printf '%-22s %18s %18s\n' variant "setjmp" "setjmp + longjmp"
per() { echo "($1 - $2) / $n" | bc -l; }
plain_set=$(count bench_setjmp "$work/lib" "$work/plain")
plain_jump=$(count bench_longjmp "$work/lib" "$work/plain")
printf '%-22s %18d %18d   (instructions per iteration)\n' plain "$((plain_set / n))" "$((plain_jump / n))"
row() { # <label> <library dir> <binary>
  printf '%-22s %+18.1f %+18.1f   (vs plain)\n' "$1" \
    "$(per "$(count bench_setjmp "$2" "$3")" "$plain_set")" \
    "$(per "$(count bench_longjmp "$2" "$3")" "$plain_jump")"
}
row shapetrace "$work/lib" "$work/shapetrace"
[ -z "$baseline" ] || row "shapetrace (baseline)" "$work/baseline-lib" "$work/baseline"
