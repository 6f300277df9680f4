#!/bin/sh
# regress.sh REV -- are this tree's outputs bit-identical to revision REV's? Builds REV in a
# temporary worktree, runs every variant (and Golden) on five configurations with both
# builds, and compares the dumped arrays byte for byte. For changes meant to be speed-only.
set -e
rev=${1:?usage: scripts/dev/regress.sh REV}
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/src" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
git -C "$root" worktree add -f "$tmp/src" "$rev" >/dev/null 2>&1
make -s -C "$tmp/src" BUILD="$tmp/build" BIN="$tmp/amla-old" >/dev/null
# AMLA_NEW=BINARY compares that build instead of building this tree's ./amla-lab
if [ -n "$AMLA_NEW" ]; then new=$AMLA_NEW; else make -s -C "$root" >/dev/null; new="$root/amla-lab"; fi
# the variants both builds have (a revision older than a variant does not know it)
names() { "$1" list | awk '/^variants:/{f=1;next} f&&/^  [a-z]/{print $1} f&&/^[a-z]/{exit}' | grep -v '^golden$' | sort; }
names "$tmp/amla-old" >"$tmp/old.names"
names "$new" >"$tmp/new.names"
vars=$(comm -12 "$tmp/old.names" "$tmp/new.names" | tr '\n' ',' | sed 's/,$//')
only=$(comm -13 "$tmp/old.names" "$tmp/new.names" | tr '\n' ' ')
[ -z "$only" ] || echo "not in $rev (not compared): $only"
bad=0
for cfg in "--dist normal --sigma 4 --acc fp32-fma" "--dist normal --sigma 4 --acc tc-hopper" \
    "--dist mla --acc tc-hopper-fp8" "--dist uniform --low -60 --high 60 --in-format fp16 --out-format fp16" \
    "--dist mla --causal --acc fp32-mul-add"; do
    # shellcheck disable=SC2086
    "$tmp/amla-old" run $cfg --heads 8 --ctx 1100 --samples 1 --variants "$vars" --dump "$tmp/old" >/dev/null
    # shellcheck disable=SC2086
    "$new" run $cfg --heads 8 --ctx 1100 --samples 1 --variants "$vars" --dump "$tmp/new" >/dev/null
    same=0 differ=0
    for f in "$tmp"/old/*.npy; do
        if cmp -s "$f" "$tmp/new/$(basename "$f")"; then same=$((same + 1)); else differ=$((differ + 1)); echo "  differs: $(basename "$f")"; fi
    done
    echo "$cfg: $same arrays identical, $differ differ"
    bad=$((bad + differ))
    rm -rf "$tmp/old" "$tmp/new"
done
[ "$bad" -eq 0 ]
