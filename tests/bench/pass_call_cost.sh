#!/usr/bin/env bash
# What one instrumented call costs, in instructions executed on the calling thread (entry and
# exit together), for shapetrace and its peers, counted by valgrind's callgrind inside
# bench_loop() of call_cost_target.c (inclusive of everything it calls: the hooks, the runtime's
# fast path). Instructions, not time: exact and repeatable on a shared 2-core machine.
#
#   tests/bench/pass_call_cost.sh [build dir] [calls] [baseline build dir]
#                                           (defaults: build, 200000, none)
#
# With a baseline build (another commit's build directory with its plugin and runtime built, e.g.
# main's), its shapetrace variants are measured in the same run, so that a change shows its cost.
#
# Variants, all clang-19 -O2:
#   plain                 no instrumentation (the baseline)
#   shapetrace            shapetrace-cc, recording (SHAPETRACE_ENABLED=1: always on, no collector)
#   shapetrace-disabled   shapetrace-cc, SHAPETRACE_ENABLED=0 (the ordinary body behind one test)
#   shapetrace-detached   shapetrace-cc, attach on demand (the default) with no collector
#   gate, gate-disabled,  shapetrace-cc with SHAPETRACE_PASS_DETACHED=gate (one body, each hook
#   gate-detached         behind the entry's test), the same three ways
#   args-elsewhere        shapetrace-cc with SHAPETRACE_PASS_ARGS='main@arg1': another function's
#                         argument chosen (the measured calls must cost what `shapetrace` costs)
#   args-chosen           shapetrace-cc with SHAPETRACE_PASS_ARGS='empty@arg1': the measured
#                         function records its argument (one __shapetrace_value per call)
#   throttle-on           shapetrace, SHAPETRACE_THROTTLE=1000000000:1: throttling on, no call
#                         ever throttled (none is shorter than 1 ns): every enter takes the
#                         out-of-line test, every call is recorded (and timed by the drain)
#   throttled             shapetrace, SHAPETRACE_THROTTLE=1:1000000000: the function is throttled
#                         by its first call; when the drain throttles it depends on the
#                         scheduling, so this row is the cost of each call past the first
#                         `calls`: (instructions with 2 x calls - with calls) / calls, less plain's
#                         (recorded by the in-process sink, SHAPETRACE_OUTPUT: without a sink the
#                         drain reads no event and throttles nothing)
#   xray-unpatched        -fxray-instrument, sleds not patched (XRay's idle cost)
#   xray-basic            -fxray-instrument, patched, basic (in-memory + file) logging
#   uftrace               -pg, recorded by `uftrace record` (libmcount)
set -euo pipefail
cd "$(dirname "$0")/../.."
build="$(cd "${1:-build}" && pwd)"
calls="${2:-200000}"
baseline=""
[ -z "${3:-}" ] || baseline="$(cd "$3" && pwd)"
src="$PWD/tests/bench/call_cost_target.c"
work="$(mktemp -d /tmp/shapetrace-call-cost-XXXXXX)"
trap 'rm -rf "$work"' EXIT
command -v valgrind > /dev/null || { echo "valgrind is required (apt-get install valgrind)" >&2; exit 2; }

# valgrind 3.19 cannot read the DWARF 5 of a clang-19 RelWithDebInfo build ("Possibly corrupted
# debuginfo file"): the traced program loads a copy of the runtime without debug information
# (LD_LIBRARY_PATH is searched before the wrapper's RUNPATH).
mkdir -p "$work/lib" "$work/baseline-lib"
objcopy --strip-debug "$build/lib/libshapetrace-rt.so" "$work/lib/libshapetrace-rt.so"
[ -z "$baseline" ] ||
  objcopy --strip-debug "$baseline/lib/libshapetrace-rt.so" "$work/baseline-lib/libshapetrace-rt.so"
baseline_path="$work/baseline-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH="$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

clang-19 -O2 "$src" -o "$work/plain"
"$build/bin/shapetrace-cc" -O2 "$src" -o "$work/shapetrace"
SHAPETRACE_PASS_DETACHED=gate "$build/bin/shapetrace-cc" -O2 "$src" -o "$work/gate"
SHAPETRACE_PASS_ARGS='main@arg1' "$build/bin/shapetrace-cc" -O2 "$src" -o "$work/args-elsewhere"
SHAPETRACE_PASS_ARGS='empty@arg1' "$build/bin/shapetrace-cc" -O2 "$src" -o "$work/args-chosen"
[ -z "$baseline" ] || "$baseline/bin/shapetrace-cc" -O2 "$src" -o "$work/shapetrace-baseline"
clang-19 -O2 -fxray-instrument -fxray-instruction-threshold=1 "$src" -o "$work/xray"
clang-19 -O2 -pg "$src" -o "$work/pg"

# Instructions executed inside bench_loop (inclusive), on whichever thread ran it.
count() { # <label> <command...>  (valgrind options in $cg_options)
  local label="$1"; shift
  local out="$work/callgrind.$label"
  (cd "$work" && valgrind --tool=callgrind ${cg_options:-} --toggle-collect=bench_loop --trace-children=yes \
     --callgrind-out-file="$out.%p" "$@" "$calls" > "$work/$label.log" 2>&1)
  # With --trace-children (uftrace), only the traced program's file has collected anything.
  local total=0
  for file in "$out".*; do
    local n
    n=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$file")
    [ -n "$n" ] && [ "$n" -gt "$total" ] && total=$n
  done
  echo "$total"
}

plain=$(count plain ./plain)
printf '%-22s %14s %18s\n' variant instructions "per call vs plain"
printf '%-22s %14d %18s\n' plain "$plain" "-"
row() { # <label> <total>
  printf '%-22s %14d %18.1f\n' "$1" "$2" "$(echo "($2 - $plain) / $calls" | bc -l)"
}
# The shapetrace variants: <label> <program> [build directory's runtime]
shapetrace_rows() {
  local label="$1" program="$2" lib="${3:-$LD_LIBRARY_PATH}" none="ipc://$work/none"
  row "$label" "$(LD_LIBRARY_PATH=$lib SHAPETRACE_ENABLED=1 SHAPETRACE_ENDPOINT=$none count "$label" "$program")"
  row "$label-disabled" "$(LD_LIBRARY_PATH=$lib SHAPETRACE_ENABLED=0 SHAPETRACE_ENDPOINT=$none count "$label-disabled" "$program")"
  row "$label-detached" "$(LD_LIBRARY_PATH=$lib SHAPETRACE_ENDPOINT=$none count "$label-detached" "$program")"
}
shapetrace_rows shapetrace ./shapetrace
none="ipc://$work/none"
row throttle-on "$(SHAPETRACE_THROTTLE=1000000000:1 SHAPETRACE_ENABLED=1 SHAPETRACE_ENDPOINT=$none count throttle-on ./shapetrace)"
# A throttled call's cost: the second `calls` calls only (the first ones may run before the drain
# throttles the function, on a schedule valgrind does not fix).
# The drain times calls only where it has a sink to drain into: a recording of its own.
# valgrind's default scheduler let the drain run only at the end (nothing was throttled in time);
# --fair-sched=yes hands the threads the lock in turn.
throttled_once=$(cg_options=--fair-sched=yes SHAPETRACE_THROTTLE=1:1000000000 SHAPETRACE_OUTPUT=$work/throttled.rec count throttled ./shapetrace)
throttled_twice=$(cg_options=--fair-sched=yes calls=$((2 * calls)) SHAPETRACE_THROTTLE=1:1000000000 SHAPETRACE_OUTPUT=$work/throttled-2x.rec count throttled-2x ./shapetrace)
plain_twice=$(calls=$((2 * calls)) count plain-2x ./plain)
printf '%-22s %14d %18.1f   (%d with 2 x calls; plain %d)\n' throttled "$throttled_once" \
  "$(echo "(($throttled_twice - $throttled_once) - ($plain_twice - $plain)) / $calls" | bc -l)" \
  "$throttled_twice" "$plain_twice"
shapetrace_rows gate ./gate
shapetrace_rows args-elsewhere ./args-elsewhere
shapetrace_rows args-chosen ./args-chosen
[ -z "$baseline" ] || shapetrace_rows baseline ./shapetrace-baseline "$baseline_path"
row xray-unpatched "$(XRAY_OPTIONS='patch_premain=false' count xray-unpatched ./xray)"
row xray-basic "$(XRAY_OPTIONS="patch_premain=true xray_mode=xray-basic xray_logfile_base=$work/xray-log. verbosity=0" count xray-basic ./xray)"
if command -v uftrace > /dev/null; then
  row uftrace "$(count uftrace uftrace record --no-libcall -d "$work/uftrace.data" ./pg)"
fi
