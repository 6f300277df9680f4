#!/bin/sh
# serving-check.sh [OUT [CAPTURES]] -- OUT (default results/serving-check.md): the captures of
# scripts/device/capture_flashmla_serving.py in CAPTURES (default .cap/captures/fmla, FlashMLA 9241ae3's dense decode,
# and .cap/captures/fork, vLLM's FlashMLA fork's dense FP8 decode: one folder a case and meta.json each) checked with
# `amla-lab check`'s default candidates: the best candidate and its share of bit-identical elements and lse rows.
# Reads meta.json with Python's json module.
set -e
cd "$(dirname "$0")/../.."
out=${1:-results/serving-check.md}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- .cap/captures/fmla .cap/captures/fork
py=/usr/bin/python3; [ -x "$py" ] || py=python3
{
    echo "# The MLA decode kernels vLLM serves with, against the lab"
    echo
    echo "Produced by \`scripts/checks/serving-check.sh\` from $* (\`scripts/device/capture_flashmla_serving.py\`: FlashMLA"
    echo "9241ae3's dense decode with the scheduler metadata it made, d*; vLLM's FlashMLA fork 46d64a8's dense FP8 decode, e4m3"
    echo "q and cache with per-tensor descales, e*; dv*, ev* taken as validation). Each case checked with \`amla-lab check\`'s"
    echo "default candidates (d*: --in-format as captured, --dv 512; e*: --in-format e4m3 --out-format bf16 --dv 512)."
    echo
    echo "| case | device | dtype | B | Sq | Hq | keys | causal | splits per entry | best candidate | bit-identical | lse rows identical |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    for caps in "$@"; do
        for dir in $(ls -d "$caps"/*/ | sort -V); do
            n=$(basename "$dir")
            eval "$($py -c "
import json, sys
m = json.load(open(sys.argv[1])); c = m['cases'][sys.argv[2]]
ns = c['num_splits']; per = [ns[i + 1] - ns[i] for i in range(len(ns) - 1)]
print('dt=%s b=%d sq=%d hq=%d keys=%s causal=%d splits=%s dev=\"%s\"' % (c['dtype'], c['B'], c['Sq'], c['Hq'], ','.join(map(str, c['seqlens'])), c['causal'], ','.join(map(str, per)), m['device']))" "$caps/meta.json" "$n")"
            row="| $n | $dev | $dt | $b | $sq | $hq | $keys | $([ "$causal" = 1 ] && echo yes || true) | $splits"
            o="--dv 512"; [ "$causal" = 1 ] && o="$o --causal"
            if [ "$dt" = e4m3 ]; then o="$o --in-format e4m3 --out-format bf16"; else o="$o --in-format $dt --out-format $dt"; fi
            # shellcheck disable=SC2086
            r=$(./amla-lab check "$dir" $o 2>&1 | awk '/^candidate/ {getline; print "`" $1 "`|" $2 " " $3 "|" $(NF-3) " of " $(NF-1); exit} /error/ {print "(" $0 ")||"; exit}')
            echo "$row | $(echo "$r" | sed 's/|/ | /g') |"
        done
    done
    echo
    echo "d6 and dv1 hold an entry of no keys, which FlashMLA runs (O 0, lse +inf) and --load refuses (seqlens 1 to the"
    echo "cache's rows): not checked."
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
