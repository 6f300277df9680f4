#!/bin/sh
# sdpa-check.sh [CAPTURES [OUT]] -- OUT (default results/sdpa-check.md): every PyTorch SDPA backend that
# scripts/capture_sdpa.py captured (default .cap/sdpa: NAME.npz and meta.json) against Golden and the lab's
# default candidates (`amla-lab check`): the kernels each backend launched, the best candidate and its share of
# bit-identical output elements. Where no candidate reaches 100%, the backend still needs its own model
# (sdpa-math, sdpa-efficient, sdpa-cudnn). Needs numpy (Debian's python3-numpy) to unpack the .npz files.
set -e
cd "$(dirname "$0")/.."
caps=${1:-.cap/sdpa}
out=${2:-results/sdpa-check.md}
. scripts/captures-lib.sh
{
    echo "# PyTorch's SDPA backends against the lab's candidates"
    echo
    echo "Produced by \`scripts/sdpa-check.sh\` from the captures in $caps ($(meta x "m['device'] + ', torch ' + m['torch'] + ', CUDA ' + m['cuda'] + ', cuDNN ' + str(m['cudnn'])"); \`scripts/capture_sdpa.py\`; math backend: allow_fp16_bf16_reduction_math_sdp $(meta x "m['allow_fp16_bf16_reduction_math_sdp']"), TF32 $(meta x "m['matmul_allow_tf32']"))."
    echo "Each backend's output is checked with \`amla-lab check\` and its default candidates (every run deterministic"
    echo "over three runs on the GPU). Kernels: what the profiler saw, the elementwise and reduction kernels left out."
    echo
    echo "| case | dtype | heads q/kv | L | D | causal | scale | backend | kernels | best candidate | bit-identical |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
    for f in "$caps"/*.npz; do
        n=$(basename "$f" .npz)
        dt=$(meta "$n" "c['dtype']")
        causal=""; [ "$(meta "$n" "c['causal']")" = True ] && causal="--causal"
        scale=$(meta "$n" "c['scale'] if c['scale'] is not None else ''")
        for b in math efficient cudnn flash; do
            err=$(meta "$n" "c['backends']['$b'].get('error', '')")
            kern=$(meta "$n" "', '.join(k.replace('void ', '').split('<')[0].split('_stage')[0] for k in c['backends']['$b'].get('kernels', []) if k.strip() and not any(w in k for w in ('elementwise', 'reduce_kernel', 'Memset', 'triu_tril')) and k.strip() != 'void' and not k.startswith('void at::native::'))")
            row="| $n | $dt | $(meta "$n" "'%d/%d' % (c['hq'], c['hkv'])") | $(meta "$n" "c['L']") | $(meta "$n" "c['D']") | ${causal:+yes} | ${scale:-default} | $b"
            if [ -n "$err" ]; then
                echo "$row | refused: $err | | |"
                continue
            fi
            rm -rf "$tmp/case" && mkdir -p "$tmp/case"
            $py - "$f" "$tmp/case" "$b" <<'PY'
import sys
import numpy as np
z = np.load(sys.argv[1])
for k in ('q', 'k', 'v'):
    np.save('%s/%s.npy' % (sys.argv[2], k), z[k][0])
np.save('%s/out.npy' % sys.argv[2], z['out_' + sys.argv[3]][0])
PY
            # shellcheck disable=SC2086
            ./amla-lab check "$tmp/case" --in-format "$dt" --out-format "$dt" $causal ${scale:+--scale $scale} >"$tmp/chk" 2>&1 || true
            best=$(awk '/^candidate/ {getline; print $1; exit}' "$tmp/chk")
            share=$(awk '/^candidate/ {getline; print $2, $3; exit}' "$tmp/chk")
            [ -n "$best" ] || { best="(check failed: $(head -n 1 "$tmp/chk"))"; share=""; }
            echo "$row | $kern | $best | $share |"
        done
    done
    echo
    echo "The flash backend is \`fa2\` bit for bit on every case here (GQA, an explicit scale, head dims 64 to 256,"
    echo "lengths 77 to 4096), ten captures the model had not seen. The math backend upcasts to fp32 (its GEMMs are"
    echo "cuBLAS's FFMA SGEMMs, sm80_xmma_gemm_f32f32, one of them split-K at L 4096) and is explained on 60-83%"
    echo "of its elements; the memory-efficient (CUTLASS fmha_cutlassF) and cuDNN (sm90 flash fprop WGMMA) kernels on"
    echo "88-100%: each still needs its own model."
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
