#!/bin/sh
# run.sh BUILD_DIR AMLA_BIN -- run every unit test and the command-line tests; add up their
# "N passed, N failed" lines; exit non-zero if anything failed.
build=${1:-build}
bin=${2:-./amla-lab}
pass=0 fail=0 broken=0
out=$(mktemp)
for t in "$build"/tests/t-*; do
    [ -x "$t" ] || continue
    $AMLA_WRAP "$t" >"$out" 2>&1
    rc=$?
    cat "$out"
    line=$(grep -E '^[a-z-]+: [0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
    if [ -z "$line" ] || { [ $rc -ne 0 ] && ! echo "$line" | grep -q ', [1-9][0-9]* failed'; }; then
        echo "$t: exited $rc without a summary"; broken=$((broken + 1))
    fi
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/'); f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0}))
done
AMLA_BIN="$bin" sh "$(dirname "$0")/cli.sh" >"$out" 2>&1
rc=$?
cat "$out"
line=$(grep -E '^cli: [0-9]+ passed' "$out" | tail -n 1)
[ -n "$line" ] || { echo "cli.sh: exited $rc without a summary"; broken=$((broken + 1)); }
p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/'); f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0} + broken))
rm -f "$out"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
