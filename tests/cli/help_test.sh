#!/bin/sh
# Every `--help` is plain text (issue #31): `shapetrace --help` and the --help of each command it
# lists hold no control byte other than newline and tab (no NUL, no 0x01 from an option's
# validator printing enum values as bytes), and each exits 0.
#   help_test.sh SHAPETRACE
set -eu
shapetrace=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
failures=0
check() {
  if ! "$@" > "$out" 2>&1; then
    echo "FAIL: '$*' exits non-zero"
    failures=$((failures + 1))
  elif [ "$(LC_ALL=C tr -d '\n\t\040-\176\200-\377' < "$out" | wc -c)" -ne 0 ]; then
    echo "FAIL: '$*' prints control bytes:"
    LC_ALL=C grep -a -n '[[:cntrl:]]' "$out" | od -c | head -8
    failures=$((failures + 1))
  fi
}
check "$shapetrace" --help
commands=$("$shapetrace" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && NF { print $1 }')
[ -n "$commands" ] || { echo "FAIL: no commands listed by '$shapetrace --help'"; exit 1; }
count=0
for command in $commands; do
  check "$shapetrace" "$command" --help
  count=$((count + 1))
done
[ "$failures" -eq 0 ] || exit 1
echo "ok: --help and $count commands' --help, no control bytes"
