#!/bin/sh
# serving-check.sh [OUT [CAPTURES]] -- OUT (default results/serving-check.md): the captures of
# scripts/device/capture_flashmla_serving.py in CAPTURES (default the committed ones: tests/data/flashmla-9241ae3,
# FlashMLA 9241ae3's dense decode, tests/data/flashmla-dense-fp8, vLLM's FlashMLA fork's dense FP8 decode,
# tests/data/triton-mla, vLLM's Triton MLA decode in its three forms, and tests/data/triton-mla-sglang, SGLang's: one
# folder a case and meta.json each; a folder without q.npy, such as code/, is not a case) checked with
# `amla-lab check`'s default candidates: the best candidate and its share of bit-identical elements and lse rows.
# Reads meta.json with Python's json module.
set -e
cd "$(dirname "$0")/../.."
out=${1:-results/serving-check.md}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- tests/data/flashmla-9241ae3 tests/data/flashmla-dense-fp8 tests/data/triton-mla \
    tests/data/triton-mla-sglang
py=/usr/bin/python3; [ -x "$py" ] || py=python3
{
    echo "# The MLA decode kernels vLLM and SGLang serve with, against the lab"
    echo
    echo "Produced by \`scripts/checks/serving-check.sh\` from $* (\`scripts/device/capture_flashmla_serving.py\`: FlashMLA"
    echo "9241ae3's dense decode with the scheduler metadata it made, d*; vLLM's FlashMLA fork 46d64a8's dense FP8 decode, e4m3"
    echo "q and cache with per-tensor descales, e*; dv*, ev* taken as validation) and \`scripts/device/capture_triton_mla.py\`"
    echo "(vLLM's Triton MLA decode, t*, w* as validation; splits: num_kv_splits; triton/: CutieillFusion/vllm-kimi-k3"
    echo "e46a1de's file called without is_mla, vllm0/: vllm-project/vllm 0155494's as its forward_mqa calls it, vllmmla/:"
    echo "e46a1de's called with is_mla=True, v_scale = k_scale; e4m3h: an fp16 query) and \`scripts/device/capture_sglang_decode.py\`"
    echo "(SGLang's Triton MLA decode, g*, gv* as validation; splits: each request's num_kv_splits, get_num_kv_splits's or a"
    echo "static count; SGLang returns no lse). Each case checked with \`amla-lab check\`'s"
    echo "default candidates (--dv 512, the scale the call used, an SGLang call's static split count as --sm-parts; FP8: the"
    echo "codes beside their scale files)."
    echo
    echo "| case | device | dtype | B | Sq | Hq | keys | causal | splits per entry | best candidate | bit-identical | lse rows identical |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    for caps in "$@"; do
        for dir in $(ls -d "$caps"/*/ | sort -V); do
            [ -f "$dir/q.npy" ] || continue
            n=$(basename "$dir")
            eval "$($py -c "
import json, sys
m = json.load(open(sys.argv[1])); c = m['cases'][sys.argv[2]]
ns = c.get('num_splits'); nk = c.get('num_kv_splits'); per = [ns[i + 1] - ns[i] for i in range(len(ns) - 1)] if ns else nk if isinstance(nk, list) else [nk]
st = c.get('splits'); static = st if isinstance(st, int) else 0
print('dt=%s b=%d sq=%d hq=%d keys=%s causal=%d splits=%s static=%d scale=%r dev=\"%s\"' % (c['dtype'], c['B'], c.get('Sq', 1), c['Hq'], ','.join(map(str, c['seqlens'])), c.get('causal', 0), ','.join(map(str, per)), static, c['softmax_scale'], m['device']))" "$caps/meta.json" "$n")"
            row="| $(basename "$caps")/$n | $dev | $dt | $b | $sq | $hq | $keys | $([ "$causal" = 1 ] && echo yes || true) | $splits"
            o="--dv 512 --scale $scale"; [ "$causal" = 1 ] && o="$o --causal"
            [ "$static" -gt 0 ] && o="$o --sm-parts $static"   # SGLang's static splits: the server's count
            if [ -f "$dir/q_scale.npy" ]; then o="$o --in-format e4m3 --out-format bf16"   # FlashMLA dense FP8: q and cache
            elif [ "$dt" = e4m3 ]; then o="$o --in-format bf16 --out-format bf16"          # Triton: a bf16 q, an e4m3 cache
            elif [ "$dt" = e4m3h ]; then o="$o --in-format fp16 --out-format fp16"         # an fp16 q, an e4m3 cache
            else o="$o --in-format $dt --out-format $dt"; fi
            # shellcheck disable=SC2086
            r=$(./amla-lab check "$dir" $o 2>&1 | awk '/^candidate/ {getline; print "`" $1 "`|" $2 " " $3 "|" (/no lse.npy/ ? "(no lse)" : $(NF-3) " of " $(NF-1)); exit} /error/ {print "(" $0 ")||"; exit}')
            echo "$row | $(echo "$r" | sed 's/|/ | /g') |"
        done
    done
    echo
    echo "On an e4m3 cache the vLLM files differ (docs/REFERENCES.md): 0155494's (u9) dequantizes V in fp32 and runs P.V in TF32;"
    echo "the is_mla call (m9) uses the K tile as V; e46a1de's without is_mla (t5) leaves V as the codes"
    echo "(forward_mqa passes k_scale only, v_scale stays 1), so its output is 1 / k_scale times the attention (kernel"
    echo "against golden: rel_fro 87 at k_scale 0.0113; vLLM's default k_scale of 1.0 hides it). Every FP8 dot runs in"
    echo "the order Triton gives an 8-bit operand."
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
