#!/bin/sh
# The example service explained without its annotation (issue #35's "done when"): kvstore built
# with the plugin and SHAPETRACE_PASS_ARGS='kv::RequestGenerator::makeValue@arg2' (the value size
# a put hands to makeValue, a call inside each put's RequestHandler::serve) and recorded once;
# `explain --input kv::RequestGenerator::makeValue@arg2` must find exactly the model that
# `--input value_size` (the source's annotation, made in the same calls) finds: the same points,
# inputs, clusters and tree. Then the values are checked in `dump`: every put's makeValue shows its
# size on its enter line.
#   explain_args_test.sh SHAPETRACE SHAPETRACE_CXX KVSTORE_SOURCE_DIR WORK_DIR
set -eu
shapetrace=$1 cxx=$2 source=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
SHAPETRACE_PASS_ARGS='kv::RequestGenerator::makeValue@arg2' cmake -S "$source" -B "$work/build" \
  -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$work/configure.out"
SHAPETRACE_PASS_ARGS='kv::RequestGenerator::makeValue@arg2' cmake --build "$work/build" -j2 \
  > "$work/build.out"
"$shapetrace" record -o "$work/rec" -- "$work/build/bin/kvstore" --seconds 2 --threads 2 \
  --data-dir "$work/data" > "$work/record.out" 2>&1
common="--function kv::RequestHandler::serve --clusters 2 --trim 0 --max-points 1000000"
# shellcheck disable=SC2086 # $common is a list of options
"$shapetrace" explain "$work/rec" $common --input value_size --json "$work/annotation.json" \
  > "$work/annotation.txt"
# shellcheck disable=SC2086
"$shapetrace" explain "$work/rec" $common --input kv::RequestGenerator::makeValue@arg2 \
  --json "$work/value.json" > "$work/value.txt"
python3 - "$work/annotation.json" "$work/value.json" <<'CHECK'
import json, sys
annotation, value = (json.load(open(path)) for path in sys.argv[1:3])
problems = []
if value.get("input") != "kv::RequestGenerator::makeValue@arg2":
    problems.append("input named %r" % value.get("input"))
for model in (annotation, value):
    model.pop("input", None)
if annotation.get("points", 0) < 100:
    problems.append("only %s puts explained" % annotation.get("points"))
for key in sorted(set(annotation) | set(value)):
    if annotation.get(key) != value.get(key):
        problems.append("%s differs: %s against %s" % (key, json.dumps(annotation.get(key))[:300],
                                                         json.dumps(value.get(key))[:300]))
if problems:
    print("\n".join(problems))
    sys.exit(1)
print("same model: %d puts, tree %s" % (annotation["points"], annotation["tree"]["nodes"][0].get("predicate", "(a leaf)")))
CHECK
# In dump, each makeValue under a put carries its size: as many as the puts explained.
puts=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['points'])" "$work/annotation.json")
"$shapetrace" dump "$work/rec" > "$work/dump.txt"
shown=$(grep -c -- '-> kv::RequestGenerator::makeValue\[abi:cxx11\](unsigned long, unsigned int, unsigned long) arg2=[0-9][0-9]*$' "$work/dump.txt" || true)
if [ "$shown" -lt "$puts" ]; then
  echo "dump shows $shown makeValue calls with their size, fewer than the $puts puts" >&2
  exit 1
fi
echo "dump: $shown makeValue calls with their size (the service's initial load included)"
