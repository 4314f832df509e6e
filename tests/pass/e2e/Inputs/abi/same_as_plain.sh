#!/usr/bin/env bash
# same_as_plain.sh SOURCE OUT COMPILER WRAPPER SHAPETRACE [FLAGS...]
# Builds SOURCE with the plain COMPILER and with the shapetrace WRAPPER (the same FLAGS), runs both
# (the instrumented one detached, then recorded by `shapetrace record`), and fails unless every
# run prints what the plain build prints and exits as it does, the recording lost nothing and
# `shapetrace analyze` reads it.
set -eu
source=$1 out=$2 compiler=$3 wrapper=$4 shapetrace=$5
shift 5
$compiler "$@" "$source" -o "$out.plain" -lpthread  # "clang --driver-mode=g++" splits
"$wrapper" "$@" "$source" -o "$out.traced" -lpthread
status() { "$@" > "$out.stdout" 2>/dev/null && echo 0 || echo $?; }
plain_status=$(status "$out.plain"); mv "$out.stdout" "$out.plain.stdout"
traced_status=$(SHAPETRACE_ENDPOINT="ipc://$out.absent.sock" status "$out.traced")
diff "$out.plain.stdout" "$out.stdout"
[ "$plain_status" = "$traced_status" ] || { echo "exit $traced_status, plain $plain_status"; exit 1; }
rm -rf "$out.rec"
recorded_status=$(status "$shapetrace" record -o "$out.rec" -- "$out.traced")
diff "$out.plain.stdout" "$out.stdout"
[ "$plain_status" = "$recorded_status" ] || { echo "recorded: exit $recorded_status, plain $plain_status"; exit 1; }
"$shapetrace" info "$out.rec" --json > "$out.info.json"
python3 - "$out.info.json" <<'PY'
import json, sys
info = json.load(open(sys.argv[1]))
assert info["missing_events"] == 0 and info["processes_without_end"] == 0 and not info["problems"], info
PY
"$shapetrace" analyze "$out.rec" > /dev/null
echo "same as plain: $(basename "$source")"
