#!/bin/sh
# run.sh BUILD_DIR AMLA_BIN -- run every unit test and the command-line tests; add up their
# "N passed, N failed" lines; exit non-zero if anything failed.
build=${1:-build}
bin=${2:-./amla-lab}
pass=0 fail=0 broken=0
out=$(mktemp) uout=$(mktemp)
# the committed captures' inputs that their seeds draw again (scripts/checks/rebuild_inputs.py; numpy)
sh "$(dirname "$0")/../scripts/checks/inputs.sh" || exit 1
# the unit tests in the background while the command-line tests run (two cores: about a third less time
# under valgrind); their output and counts (a last line "units: P F B") read back after
(
    p=0 f=0 b=0 one=$(mktemp)
    for t in "$build"/tests/t-*; do
        [ -x "$t" ] || continue
        $AMLA_WRAP "$t" >"$one" 2>&1
        rc=$?
        cat "$one"
        line=$(grep -E '^[a-z-]+: [0-9]+ passed, [0-9]+ failed' "$one" | tail -n 1)
        if [ -z "$line" ] || { [ $rc -ne 0 ] && ! echo "$line" | grep -q ', [1-9][0-9]* failed'; }; then
            echo "$t: exited $rc without a summary"; b=$((b + 1))
        fi
        n=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/'); m=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
        p=$((p + ${n:-0})); f=$((f + ${m:-0}))
    done
    rm -f "$one"
    echo "units: $p $f $b"
) >"$uout" 2>&1 &
units=$!
AMLA_BIN="$bin" sh "$(dirname "$0")/cli.sh" >"$out" 2>&1
rc=$?
wait $units
grep -v '^units: [0-9]* [0-9]* [0-9]*$' "$uout"
set -- $(grep '^units: [0-9]* [0-9]* [0-9]*$' "$uout" | tail -n 1 | cut -d' ' -f2-)
[ $# -eq 3 ] || { echo "unit tests: no summary"; set -- 0 0 1; }
pass=$((pass + $1)); fail=$((fail + $2)); broken=$((broken + $3))
cat "$out"
line=$(grep -E '^cli: [0-9]+ passed' "$out" | tail -n 1)
[ -n "$line" ] || { echo "cli.sh: exited $rc without a summary"; broken=$((broken + 1)); }
p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/'); f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0} + broken))
# the layout's measures (docs/ARCHITECTURE.md): file sizes, module cycles, the reference's independence
if command -v python3 >/dev/null 2>&1; then
    if python3 "$(dirname "$0")/../scripts/dev/layout-check.py" >"$out" 2>&1; then
        pass=$((pass + 1)); echo "layout-check: ok"
    else
        fail=$((fail + 1)); echo "FAIL: layout-check"; grep FAIL "$out"
    fi
fi
# the bench program's bad arguments: exit 2 and one line naming what is wrong, before any timing (make test builds it)
if [ -x "$build/bench" ]; then
    for args in "--reps x" "--reps 0" "--threads 2x" "--stages base,nosuch" "--frobnicate"; do
        # shellcheck disable=SC2086
        "$build/bench" $args >/dev/null 2>"$out"; rc=$?
        n=$(grep -vc 'running on its .* kernels instead' "$out")
        if [ "$rc" -eq 2 ] && [ "$n" -eq 1 ]; then pass=$((pass + 1)); else
            fail=$((fail + 1)); echo "FAIL: bench $args: exit $rc, $n lines: $(cat "$out")"; fi
    done
    echo "bench: bad arguments rejected"
fi
# the Python helper (python/amla_lab.py) against the lab, with Debian's numpy and pytest (the
# interpreter that has them: Debian's, whatever python3 is first on PATH)
py=""
for cand in /usr/bin/python3 python3; do
    if "$cand" -c "import numpy, pytest" >/dev/null 2>&1; then py=$cand; break; fi
done
if [ -n "$py" ]; then
    if AMLA_BIN="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" "$py" -m pytest -q -p no:cacheprovider \
        "$(dirname "$0")/test_amla_lab.py" "$(dirname "$0")/test_bad_input.py" "$(dirname "$0")/test_varlen.py" \
        "$(dirname "$0")/test_prefill.py" "$(dirname "$0")/test_indexer.py" "$(dirname "$0")/test_numpy_ref.py" >"$out" 2>&1; then
        pass=$((pass + 1)); echo "pytest (python/amla_lab.py, bench/numpy_ref.py): $(tail -n 1 "$out")"
    else
        fail=$((fail + 1)); echo "FAIL: pytest (python/amla_lab.py, bench/numpy_ref.py)"; tail -n 30 "$out"
    fi
else
    echo "pytest (python/amla_lab.py, bench/numpy_ref.py): skipped, no numpy and pytest (python3-numpy python3-pytest)"
fi
# a short run of every fuzz harness (make test sets AMLA_FUZZ_SMOKE_S): no crash, no leak
if [ -n "$AMLA_FUZZ_SMOKE_S" ]; then
    root=$(dirname "$0")/..
    for f in "$root"/build-fuzz/fuzz-*; do
        [ -x "$f" ] || continue
        name=${f##*/fuzz-}
        corpus=$(mktemp -d)
        if ASAN_OPTIONS=detect_leaks=1 "$f" -max_total_time="$AMLA_FUZZ_SMOKE_S" -max_len=4096 -print_final_stats=1 \
            "$corpus" "$root/fuzz/seeds/$name" >"$out" 2>&1; then
            pass=$((pass + 1))
            echo "fuzz-$name: $(grep -o 'number_of_executed_units: [0-9]*' "$out" | tail -n 1 | cut -d' ' -f2) runs, no crash"
        else
            fail=$((fail + 1))
            echo "FAIL: fuzz-$name"; grep -E 'ERROR|SUMMARY|Test unit written' "$out" | head -5
        fi
        rm -rf "$corpus"
    done
fi
rm -f "$out" "$uout"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
