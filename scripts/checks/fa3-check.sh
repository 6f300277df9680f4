#!/bin/sh
# fa3-check.sh [OUT [CAPTURES...]] -- OUT (default results/fa3-check.md): every FlashAttention-3 capture in CAPTURES
# (default .cap/captures/fa3 and .cap/captures/fa3h, two builds of scripts/device/capture_fa3.py: one folder a case
# and meta.json) checked with
# `amla-lab check` on the fa3 variant as the case was called (flash_attn_func, or a varlen / kvcache call:
# fa3-varlen=yes; its page size; an explicit num_splits as sm-parts): the share of bit-identical output
# elements and log-sum-exp rows. FP8 cases are listed as not modelled. Needs numpy (Debian's python3-numpy).
set -e
cd "$(dirname "$0")/../.."
out=${1:-results/fa3-check.md}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- .cap/captures/fa3 .cap/captures/fa3h
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
    echo "build: its flags in its row)."
    echo
    echo "| case | API | dtype | B | Sq | heads q/kv | D / Dv | keys | causal | splits ran | candidate | bit-identical | lse rows identical |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    for caps in "$@"; do
    echo "| $caps | $($py -c "import json,sys; m=json.load(open(sys.argv[1])); b=m['build']; print(m['device'] + ', torch ' + m['torch'] + ', CUDA ' + m['cuda'] + '; flash-attention ' + str(b['FA3_COMMIT']) + ', CUTLASS ' + str(b['CUTLASS_COMMIT']) + ', built with ' + str(b['FA3_BUILD_FLAGS']).replace('FLASH_ATTENTION_', ''))" "$caps/meta.json") | | | | | | | | | | | |"
    for dir in $(ls -d "$caps"/*/ | sort -V); do
        n=$(basename "$dir")
        eval "$(meta "$n" "'dt=%s api=%s page=%d causal=%d scale=%r ns=%d dv=%d d=%d b=%d sq=%d hq=%d hk=%d nsa=%d keys=%s' % (c['dtype'], c['api'], c['page_size'], c['causal'], c['softmax_scale'], c['num_splits_run'], c['Dv'], c['D'], c['B'], c['Sq'], c['Hq'], c['Hkv'], c['num_splits_asked'], ','.join(map(str, c['seqlens'])))")"
        row="| $n | $api | $dt | $b | $sq | $hq/$hk | $d / $dv | $keys | $([ "$causal" = 1 ] && echo yes || true) | $ns"
        if [ "$dt" = e4m3 ]; then echo "$row | (FP8: no model yet) | | |"; continue; fi
        o="--in-format $dt --out-format $dt"
        [ "$causal" = 1 ] && o="$o --causal"
        [ "$api" = qv ] && o="$o --dv 512 --scale $scale"
        v=fa3; [ "$api" != func ] && v="$v:fa3-varlen=yes"; [ "$page" != 0 ] && v="$v:page-size=$page"
        [ "$nsa" -ge 1 ] && v="$v:sm-parts=$nsa" # an explicit num_splits (0: the kernel's choice)
        # shellcheck disable=SC2086
        r=$(./amla-lab check "$dir" $o --candidates "$v" | awk '/^candidate/ {getline; print $2, $3 "|" $(NF-3), "of", $(NF-1); exit}')
        echo "$row | \`$v\` | ${r%%|*} | ${r#*|} |"
    done
    done
    echo
    echo "Every BF16 and FP16 capture (flash_attn_func; GQA and MQA; causal; designed rows; varlen / kvcache decodes of 3 to 21"
    echo "splits; paged caches of 16 and 64 tokens; explicit num_splits; the q_v MLA decode as vLLM and SGLang call it;"
    echo "the v* validation captures) is matched on every output element and log-sum-exp row. The FP8 cases (f*, v5) wait"
    echo "for the FP8 model (tests/data/pending/fa3 keeps f4)."
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
