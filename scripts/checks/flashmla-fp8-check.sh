#!/bin/sh
# flashmla-fp8-check.sh [CAPTURES [OUT]] -- OUT (default results/flashmla-fp8-check.md): the flashmla-sparse
# variant against every capture of FlashMLA's FP8 sparse decoding kernel in CAPTURES (default tests/data/flashmla-sparse,
# folders of .npy files; or the NAME.npz files and meta.json scripts/device/capture_flashmla_fp8.py wrote), each run as the kernel ran it (the
# whole batch, so that the scheduler sees every entry), on both paths: the elements bit-identical in O and
# the LSE, the largest ulp distance, the kernel's and Base's error against Golden, check's verdict with its
# default candidates, and the lab's cache quantizer against the bytes FlashMLA's tests/quant.py wrote.
# Needs numpy (Debian's python3-numpy) to unpack the .npz files.
set -e
cd "$(dirname "$0")/../.."
caps=${1:-tests/data/flashmla-sparse}
out=${2:-results/flashmla-fp8-check.md}
. scripts/checks/captures-lib.sh
make -s build/tests/t-kvcache >/dev/null
names=$(case_names)
dirs=""
for n in $names; do
    if [ -f "$caps/$n.npz" ]; then
        $py scripts/checks/flashmla_fp8_case.py "$caps/$n.npz" "$tmp/$n" && $py scripts/checks/flashmla_fp8_case.py "$caps/$n.npz" "$tmp/$n-1" nosplit
        $py -c "import numpy as np, sys; z = np.load(sys.argv[1]); np.save(sys.argv[2], z['k_bf16'])" "$caps/$n.npz" "$tmp/$n/k_bf16.npy"
    else # a committed folder: the no-split path's outputs beside the default path's
        case_unpack "$n" "$tmp/$n"
        case_unpack "$n" "$tmp/$n-1"
        mv "$tmp/$n-1/out_nosplit.npy" "$tmp/$n-1/out.npy"
        mv "$tmp/$n-1/lse_nosplit.npy" "$tmp/$n-1/lse.npy"
    fi
    dirs="$dirs $tmp/$n"
done
row() { grep "^$2 " "$1" | head -n 1; }
{
    echo "# The flashmla-sparse variant against FlashMLA's FP8 sparse decoding kernel"
    echo
    echo "Produced by \`scripts/checks/flashmla-fp8-check.sh\` from the captures in $caps ($($py -c "import json, sys; m = json.load(open(sys.argv[1])); print('FlashMLA ' + m['commit'] + ', CUTLASS ' + m['cutlass'][:7] + ', ' + m['device'] + ', ' + m['nvcc'])" "$caps/meta.json");"
    echo "scripts/device/capture_flashmla_fp8.py wrote them)."
    echo "Each capture is loaded whole (\`--load\`: q.npy, the cache's bytes kcache.npy, indices.npy, topk_length.npy),"
    echo "and \`amla-lab check\` runs its default candidates for an FP8 cache against the kernel's default output"
    echo "(the API's own scheduler: split-KV and the combine kernel) and against its single-split output (part 0"
    echo "given every entry: the split kernel writes bf16 O and the LSE itself). Columns: elements of O bit-identical"
    echo "to \`flashmla-sparse\` (default path) and \`flashmla-sparse:sm-parts=1\` (no-split path), the LSE rows"
    echo "likewise, the largest ulp distance (bf16 for O) of the two, rel_fro against Golden of the kernel's default"
    echo "output and of \`base\` on the same dequantized cache, and the cache's bytes as the lab's quantizer writes"
    echo "them from the capture's BF16 values against the bytes tests/quant.py wrote on the GPU."
    $py -c "import json, sys; m = json.load(open(sys.argv[1])); print('\\n' + m['second_round'] + ' (other page sizes: 2, 69, 576, 61; s_q 3; half the indices invalid).' if 'second_round' in m else '')" "$caps/meta.json"
    echo
    echo "| capture | layout | b x s_q x h_q | top-k (lengths) | invalid | inputs | splits | O default | O no-split | LSE default | LSE no-split | ulp | rel_fro kernel | rel_fro base | cache bytes |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    for n in $names; do
        ./amla-lab check "$tmp/$n" >"$tmp/d.txt" 2>&1 || true
        ./amla-lab check "$tmp/$n-1" >"$tmp/s.txt" 2>&1 || true
        d=$(row "$tmp/d.txt" flashmla-sparse) s=$(row "$tmp/s.txt" flashmla-sparse:sm-parts=1)
        kern=$(sed -n 's/^kernel against golden: rel_fro \([^ ]*\).*/\1/p' "$tmp/d.txt")
        base=$(row "$tmp/d.txt" base | awk '{print $6}')
        bytes=identical
        if [ ! -f "$tmp/$n/k_bf16.npy" ]; then
            bytes="(no k_bf16.npy)"
        elif ! AMLA_KVFP8_DIRS="$tmp/$n" build/tests/t-kvcache >"$tmp/q.txt" 2>&1; then
            bytes=$(grep -o '[0-9]* of [0-9]* cache bytes differ' "$tmp/q.txt" | head -n 1)
        fi
        echo "| $n | $(meta "$n" "c['layout']") | $(meta "$n" "'%d x %d x %d' % (c['b'], c['s_q'], c['h_q'])") | $(meta "$n" "str(c['topk']) + (' (' + ','.join(map(str, c['topk_length'])) + ')' if c['topk_length'] else '')") | $(meta "$n" "'none' if c['invalid_fraction'] == 0 else 'last entry all' if c['invalid_fraction'] < 0 else '%g%%' % (100 * c['invalid_fraction'])") | $(meta "$n" "'%s %g' % tuple(c['distribution'])") | $(meta "$n" "' '.join(map(str, c['num_splits']))") | $(echo "$d" | awk '{print $2, $3}') | $(echo "$s" | awk '{print $2, $3}') | $(echo "$d" | awk '{print $8, $9, $10}') | $(echo "$s" | awk '{print $8, $9, $10}') | $(echo "$d" | awk '{print $4}') / $(echo "$s" | awk '{print $4}') | $kern | $base | $bytes |"
    done
    echo
    echo "Verdicts of \`amla-lab check\` (default candidates for an FP8 cache: flashmla-sparse, its no-split path, base"
    echo "and standard with and without tc-hopper, all on the cache as the kernel dequantizes it):"
    echo
    echo "| capture | path | verdict |"
    echo "|---|---|---|"
    for n in $names; do
        for p in default no-split; do
            dir="$tmp/$n"; [ $p = no-split ] && dir="$tmp/$n-1"
            echo "| $n | $p | $(./amla-lab check "$dir" 2>&1 | sed -n 's/^verdict: //p') |"
        done
    done
    echo
    for n in $names; do
        b=$(./amla-lab run --load "$tmp/$n-1" --variants base 2>/dev/null | awk '$1 == "base" {print $2}')
        k=$(./amla-lab run --load "$tmp/$n-1" --variants flashmla-sparse:sm-parts=1 2>/dev/null | awk '$1 ~ /^flashmla/ {print $2}')
        awk -v k="$k" -v b="$b" 'BEGIN {exit !(k > 3 * b)}' || continue
        line="| $n | $k"
        for site in p_cast p_exp l_sum; do
            line="$line | $(./amla-lab run --load "$tmp/$n-1" --variants flashmla-sparse:sm-parts=1 --exact $site 2>/dev/null | awk '$1 ~ /^flashmla/ {print $2}')"
        done
        echo "$line | $b |" >>"$tmp/exact"
    done
    if [ -f "$tmp/exact" ]; then
        echo "Where the kernel is far behind Base on the same cache (rel_fro above), \`run --load\` on the no-split case"
        echo "with one site computed exactly names the rounding responsible (rel_fro against Golden; \`--exact SITE\`):"
        echo
        echo "| capture | flashmla-sparse:sm-parts=1 | --exact p_cast | --exact p_exp | --exact l_sum | base |"
        echo "|---|---|---|---|---|---|"
        cat "$tmp/exact"
        echo
        echo "Computing P's cast or the exponent exactly each brings the kernel to Base's error, computing the row sums"
        echo "exactly does not. The cause: the kernel scales the raw-score maximum in fp32, m = fl32(max s scale_log2),"
        echo "but exponentiates p = ex2(fma(s, scale_log2, -m)) with the exact product, so where the logits are large"
        echo "(an fp32 ulp of m up to 0.25 where the LSEs reach 2e6) the largest p of a row is 2^d with |d| up to"
        echo "half an ulp of m instead of 1. P then goes to bf16 for P V while the row sum keeps the fp32 p, and the"
        echo "dominant term, no longer a bf16 value, is biased by up to 2^-9. Base's largest p is exp(s - m) = 1 exactly."
    else
        echo "On none of these captures is the kernel's error more than 3 times Base's on the same cache; where it is"
        echo "(large logits), docs/ARITHMETIC.md (flashmla-sparse) gives the cause, and this script names the site."
    fi
    echo
    echo "Every capture was deterministic over three runs on the GPU (meta.json's deterministic_3_runs: $($py -c "import json, sys; print(all(c['deterministic_3_runs'] for c in json.load(open(sys.argv[1]))['cases'].values()))" "$caps/meta.json"))."
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
