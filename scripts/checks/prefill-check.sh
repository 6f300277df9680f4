#!/bin/sh
# prefill-check.sh [OUT] -- OUT (default results/flashmla-prefill-check.md): FlashMLA 9241ae3's kernels against
# their two builds' models on every committed capture: the sparse prefill (tests/data/flashmla-prefill, built by its
# setup.py with --use_fast_math; tests/data/flashmla-ieee's s*, built without it as vLLM's CMake does) and the dense
# and FP8 sparse decodes of the build without fast math (tests/data/flashmla-ieee's d* and v*, m*): the share of O
# elements, lse rows and max_logits rows each build's model reproduces bit for bit, and check's verdict with its
# default candidates. Needs numpy (Debian's python3-numpy) to draw the captures' inputs again.
set -e
cd "$(dirname "$0")/../.."
out=${1:-results/flashmla-prefill-check.md}
make -s amla-lab >/dev/null
sh scripts/checks/inputs.sh
py=/usr/bin/python3
[ -x $py ] || py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# row DIR VARIANT OPTIONS...: the variant's share of O, lse and max_logits rows bit-identical, from check's JSON
row() {
    d=$1 v=$2
    shift 2
    ./amla-lab check "$d" --candidates "$v,$v:build=ieee" --exhaustive --format json "$@" >"$tmp/c.json"
    $py - "$tmp/c.json" "$v" <<'PY'
import json, sys
r = {c['variant']: c for c in json.load(open(sys.argv[1]))['ranking']}
cells = []
for v in (sys.argv[2], sys.argv[2] + ':build=ieee'):
    c = r[v]
    pct = lambda x: '-' if x is None or x != x else '%.2f%%' % (100 * x) if x < 1 else '100%'
    cells.append('%s / %s / %s' % (pct(c['bit_identical']), pct(c['lse_bit_identical']),
                                    pct(c.get('max_logits_bit_identical', float('nan')))))
print(' | '.join(cells))
PY
}
meta() { $py -c "import json, sys; c = json.load(open(sys.argv[1]))['cases'][sys.argv[2]]; print(eval(sys.argv[3]))" "$@"; }
{
    echo "# FlashMLA's sparse prefill, and FlashMLA built without --use_fast_math, against the lab's models"
    echo
    echo "Produced by \`scripts/checks/prefill-check.sh\` from the committed captures of FlashMLA 9241ae3 on an H200"
    echo "(scripts/device/build-captures.sh: its setup.py with FLASH_MLA_DISABLE_SM100=1, once as it is and once without"
    echo "\`--use_fast_math\`, which is how vLLM's CMake compiles its \`_flashmla_C\`). Each cell: the share of O elements /"
    echo "lse rows / max_logits rows the model reproduces bit for bit (\`check --exhaustive\` with both builds as"
    echo "candidates). The verdict is \`check\`'s with its default candidates."
    echo
    echo "| capture | kernel | build | case | fast-math model (O / lse / max_logits) | ieee model | verdict |"
    echo "|---|---|---|---|---|---|---|"
    for set in flashmla-prefill flashmla-ieee; do
        caps=tests/data/$set
        build=fast-math; [ $set = flashmla-ieee ] && build=ieee
        for d in "$caps"/*/; do
            n=$(basename "$d")
            [ -f "$d/out.npy" ] || continue
            kind=$(meta "$caps/meta.json" "$n" "c.get('kernel', 'sparse prefill')")
            o="" v=flashmla-sparse-prefill
            [ -f "$d/args" ] && o=$(cat "$d/args")
            case $kind in
            "dense decode")
                v=flashmla
                fmt=bf16; [ -f "$d/fp16" ] && fmt=fp16
                o="--dv 512 --in-format $fmt --out-format $fmt"
                what=$(meta "$caps/meta.json" "$n" "'%s, %d entries, %d heads, keys %s' % (c['dtype'], c['B'], c['Hq'], ','.join(map(str, c['seqlens'])))") ;;
            "FP8 sparse decode")
                v=flashmla-sparse
                what=$(meta "$caps/meta.json" "$n" "'%s, b %d x s_q %d, %d heads, top-k %d' % (c['layout'], c['b'], c['s_q'], c['h_q'], c['topk'])") ;;
            *)
                what=$(meta "$caps/meta.json" "$n" "'d_qk %d, s_q %d, %d heads, s_kv %d, top-k %d%s%s%s' % (c['d_qk'], c['s_q'], c['h_q'], c['s_kv'], c['topk'], ', topk_length ' + ','.join(map(str, c['topk_length'])) if c['topk_length'] else '', ', sink ' + ','.join(c['attn_sink']) if isinstance(c['attn_sink'], list) else ', sink N(0, 1)' if c['attn_sink'] else '', ', last token all invalid' if c['invalid_fraction'] < 0 else ', %g%% invalid, %g%% out of range' % (100 * c['invalid_fraction'], 100 * c['out_of_range_fraction']) if c['invalid_fraction'] or c['out_of_range_fraction'] else '')") ;;
            esac
            # shellcheck disable=SC2086
            cells=$(row "$d" $v $o)
            # shellcheck disable=SC2086
            verdict=$(./amla-lab check "$d" $o 2>&1 | sed -n 's/^verdict: //p')
            echo "| $set/$n | $kind | $build | $what | $cells | $verdict |"
        done
    done
    echo
    echo "The FP8 sparse decode's captures are its default (split) output; their no-split outputs (out_nosplit.npy) match"
    echo "\`flashmla-sparse:sm-parts=1:build=ieee\` likewise (tests/cli.sh)."
} >"$tmp/out.md"
mv "$tmp/out.md" "$out"
echo "wrote $out"
