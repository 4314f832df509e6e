#!/usr/bin/env bash
# Real code no one here wrote: builds GoogleTest and its sample tests from Debian's sources
# (/usr/src/googletest) twice, once with clang++-19 and once with shapetrace-c++, runs every
# sample both ways and checks that
#   - the instrumented run prints the same output (timings removed) and exits the same way;
#   - every thread of the instrumented run is balanced (each enter has its exit or unwind exit),
#     no event was dropped, and the process end arrived (shapetrace-test-dump --balance).
#
#   googletest_samples.sh <shapetrace build dir> <work dir> [googletest source dir]
set -euo pipefail

build="$(cd "$1" && pwd)"
work="$2"
source="${3:-/usr/src/googletest}"
[ -f "$source/CMakeLists.txt" ] || { echo "no GoogleTest sources in $source (install googletest)" >&2; exit 2; }

configure() { # <dir> <c compiler> <c++ compiler>
  cmake -S "$source" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_GMOCK=OFF \
    -Dgtest_build_samples=ON -DINSTALL_GTEST=OFF \
    -DCMAKE_C_COMPILER="$2" -DCMAKE_CXX_COMPILER="$3" > "$1.configure.log"
  cmake --build "$1" > "$1.build.log"
}

rm -rf "$work"
mkdir -p "$work"
configure "$work/plain" clang-19 clang++-19
configure "$work/traced" "$build/bin/shapetrace-cc" "$build/bin/shapetrace-c++"

# GoogleTest prints how long tests took: the only output allowed to differ.
normalise() { sed -E 's/ \([0-9]+ ms( total)?\)//'; }

samples=$(cd "$work/plain" && find . -maxdepth 2 -name 'sample*_unittest' -type f | sort)
[ -n "$samples" ] || { echo "no samples were built" >&2; exit 1; }
failures=0
count=0
for sample in $samples; do
  name=$(basename "$sample")
  count=$((count + 1))
  set +e
  "$work/plain/$sample" > "$work/$name.plain.out" 2>&1
  plain_status=$?
  "$build/tests/pass/shapetrace-test-dump" --balance -o "$work/$name.balance" -- \
    "$work/traced/$sample" > "$work/$name.traced.out" 2>&1
  dump_status=$?
  set -e
  if ! diff <(normalise < "$work/$name.plain.out") <(normalise < "$work/$name.traced.out") > "$work/$name.diff"; then
    echo "FAIL $name: output differs from the uninstrumented run:"; cat "$work/$name.diff"
    failures=$((failures + 1))
  fi
  if [ "$(head -1 "$work/$name.balance")" != "exit status $plain_status" ]; then
    echo "FAIL $name: uninstrumented exit status $plain_status, instrumented: $(head -1 "$work/$name.balance")"
    failures=$((failures + 1))
  fi
  if [ "$dump_status" -ne 0 ] || grep -q "NOT balanced" "$work/$name.balance"; then
    echo "FAIL $name: events not balanced, lost or incomplete:"; cat "$work/$name.balance"
    failures=$((failures + 1))
  fi
  if ! grep -q "^thread main: [1-9][0-9]* enters" "$work/$name.balance"; then
    echo "FAIL $name: no events recorded on the main thread"; cat "$work/$name.balance"
    failures=$((failures + 1))
  fi
  echo "$name: exit status $plain_status; $(grep '^thread' "$work/$name.balance" | tr '\n' ';')"
done
echo "$count samples, $failures failures"
[ "$failures" -eq 0 ]
