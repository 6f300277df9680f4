#!/bin/sh
# fa3-check.sh [OUT [CAPTURES...]] -- OUT (default results/fa3-check.md): every FlashAttention-3 capture in CAPTURES
# (default tests/data/fa3, the committed ones, from two builds of scripts/device/capture_fa3.py: one folder a case and
# meta.json) checked with
# `amla-lab check` on the fa3 variant as the case was called (flash_attn_func, or a varlen / kvcache call:
# fa3-varlen=yes; its page size; an explicit num_splits as sm-parts): the share of bit-identical output
# elements and log-sum-exp rows (FP8 cases: e4m3 codes in, bf16 out, their *_descale.npy beside them). Needs numpy.
set -e
cd "$(dirname "$0")/../.."
sh scripts/checks/inputs.sh
out=${1:-results/fa3-check.md}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- tests/data/fa3
py=/usr/bin/python3; [ -x "$py" ] || py=python3
meta() { $py -c "import json,sys; c=json.load(open(sys.argv[1]))['cases'][sys.argv[2]]; print($2)" "$caps/meta.json" "$1"; }
{
    echo "# FlashAttention-3 on Hopper against the lab's fa3"
    echo
    echo "Produced by \`scripts/checks/fa3-check.sh\` from $*,"
    echo "taken by \`scripts/device/capture_fa3.py\` (inputs and the API calls: its CASES and meta.json). The variant setting is"
    echo "the call's: \`fa3-varlen=yes\` for flash_attn_with_kvcache (seqused_k), \`page-size\` for a paged cache, \`sm-parts\` for"
    echo "an explicit num_splits; splits ran = the number of split accumulators the kernel returned. v* were taken as"
    echo "validation (shapes and seeds the model was not written against), and so were h* (FP16 and head dim 256, a second"
    echo "build: its flags in its row). varlen: flash_attn_varlen_func in FlashAttention's packed layout (q [total_q, H, D],"
    echo "cu_seqlens_q.npy and cu_seqlens_k.npy; Sq and keys per sequence), num_splits 1 (its default): \`fa3:sm-parts=1\`;"
    echo "p* are DeepSeek's MLA prefill (q/k head dim 192, v 128) from a third build (head dims 192 and 192/128 alone), taken"
    echo "before the lab took the 192/128 pair; pv* of that build were taken as validation."
    echo
    echo "| case | API | dtype | B | Sq | heads q/kv | D / Dv | keys | causal | splits ran | candidate | bit-identical | lse rows identical |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    for caps in "$@"; do
    echo "| $caps | $($py -c "import json,sys; m=json.load(open(sys.argv[1])); b=m['build']; print(m['device'] + ', torch ' + m['torch'] + ', CUDA ' + m['cuda'] + '; flash-attention ' + str(b['FA3_COMMIT']) + ', CUTLASS ' + str(b['CUTLASS_COMMIT']) + ', built with ' + str(b['FA3_BUILD_FLAGS']).replace('FLASH_ATTENTION_', ''))" "$caps/meta.json") | | | | | | | | | | | |"
    for dir in $(ls -d "$caps"/*/ | sort -V); do
        n=$(basename "$dir")
        eval "$(meta "$n" "'dt=%s api=%s page=%d causal=%d scale=%r ns=%d dv=%d d=%d b=%d sq=%s hq=%d hk=%d nsa=%d keys=%s' % (c['dtype'], c['api'], c.get('page_size', 0), c['causal'], c['softmax_scale'], c['num_splits_run'], c['Dv'], c['D'], c['B'], ','.join(map(str, c['Sq'])) if isinstance(c['Sq'], list) else c['Sq'], c['Hq'], c['Hkv'], c['num_splits_asked'], ','.join(map(str, c['seqlens'])))")"
        row="| $n | $api | $dt | $b | $sq | $hq/$hk | $d / $dv | $keys | $([ "$causal" = 1 ] && echo yes || true) | $ns"
        o="--in-format $dt --out-format $dt"
        [ "$dt" = e4m3 ] && o="--in-format e4m3 --out-format bf16" # FP8 in, bf16 out; the descales beside the codes
        [ "$causal" = 1 ] && o="$o --causal"
        [ "$api" = qv ] && o="$o --dv 512 --scale $scale"
        v=fa3; [ "$api" != func ] && [ "$api" != varlen ] && v="$v:fa3-varlen=yes"; [ "$page" != 0 ] && v="$v:page-size=$page"
        [ "$nsa" -ge 1 ] && v="$v:sm-parts=$nsa" # an explicit num_splits (0: the kernel's choice)
        # shellcheck disable=SC2086
        r=$(./amla-lab check "$dir" $o --candidates "$v" | awk '/^candidate/ {getline; print $2, $3 "|" $(NF-3), "of", $(NF-1); exit}')
        echo "$row | \`$v\` | ${r%%|*} | ${r#*|} |"
    done
    done
    echo
    echo "Cases whose bit-identical column reads 100.00% and whose lse rows all agree are matched on every output element"
    echo "and log-sum-exp row. h* came from the second build (FP16 and head dim 256 enabled), p* and pv* from the third"
    echo "(head dims 192 and 192/128 only; its flags in the captures' meta.json), the others from the first."
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
