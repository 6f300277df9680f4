#!/bin/sh
# bench-ab.sh REV STAGES [ROUNDS] -- this tree's bench against revision REV's, the two run in turn ROUNDS times
# (default 4) on one core: `build/bench --stages STAGES --reps 3 --threads 1`, OpenBLAS on the kernels make bench
# picks. Prints each round's ratio (the stage over the BLAS attention run just before it) for REV and for this
# tree, then each stage's median over the rounds: a machine whose speed drifts is compared with itself, run
# against run. For speed changes (scripts/dev/regress.sh shows their bits).
set -e
rev=${1:?usage: scripts/dev/bench-ab.sh REV STAGES [ROUNDS]}
stages=${2:?usage: scripts/dev/bench-ab.sh REV STAGES [ROUNDS]}
rounds=${3:-4}
case $rounds in '' | *[!0-9]*) echo "bench-ab.sh: ROUNDS must be a whole number, not '$rounds'" >&2; exit 2 ;; esac
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/src" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
git -C "$root" worktree add -f "$tmp/src" "$rev" >/dev/null 2>&1
make -s -C "$tmp/src" BUILD="$tmp/build" BIN="$tmp/amla-old" "$tmp/build/bench" >/dev/null
make -s -C "$root" build/bench >/dev/null
core=""; command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -gt 1 ] && core="taskset -c 1"
# one run: "stage ratio" per line (the bench's table rows whose third field is the ratio)
run() {
    # shellcheck disable=SC2086
    (cd "$root" && env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 $core "$1" --reps 3 --threads 1 \
        --stages "$stages" 2>/dev/null) | awk '$3 ~ /^[0-9.]+$/ && $1 != "blas" && $1 != "stage" {print $1, $3}'
}
: >"$tmp/all"
for _ in $(seq "$rounds"); do
    run "$tmp/build/bench" | sed "s/^/$rev /" | tee -a "$tmp/all"
    run "$root/build/bench" | sed 's/^/this /' | tee -a "$tmp/all"
done
echo "medians over $rounds rounds (ratio against the FP32 BLAS attention; Golden against the FP64 one):"
awk '{v[$2 " " $1] = v[$2 " " $1] " " $3} END {for (k in v) print k, v[k]}' "$tmp/all" | sort | while read -r st who vals; do
    med=$(echo "$vals" | tr ' ' '\n' | sort -n | awk '{a[NR] = $1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}')
    echo "  $st $who $med"
done
