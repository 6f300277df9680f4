#!/bin/sh
# sdpa-check.sh [OUT [CAPTURES...]] -- OUT (default results/sdpa-check.md): every PyTorch SDPA backend in the
# captures (default .cap/sdpa, from scripts/device/capture_sdpa.py, .cap/sdpa-probe, from scripts/device/capture_sdpa_probe.py,
# .cap/cudnn-probe, from scripts/device/probe_cudnn_stats.py, and .cap/sdpa-valid, capture_sdpa.py's v* cases: NAME.npz and
# meta.json in each) against Golden and `amla-lab check`'s default
# candidates: the kernels each backend launched, the best candidate, its share of bit-identical output
# elements and of log-sum-exp rows where the backend returns one. Needs numpy (Debian's python3-numpy).
set -e
cd "$(dirname "$0")/../.."
out=${1:-results/sdpa-check.md}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- .cap/sdpa .cap/sdpa-probe .cap/cudnn-probe .cap/sdpa-valid
caps=$1
. scripts/checks/captures-lib.sh
{
    echo "# PyTorch's SDPA backends against the lab's models"
    echo
    echo "Produced by \`scripts/checks/sdpa-check.sh\` from the captures in $* ($(meta x "m['device'] + ', torch ' + m['torch'] + ', CUDA ' + m['cuda'] + ', cuDNN ' + str(m['cudnn'])"); math backend: allow_fp16_bf16_reduction_math_sdp $(meta x "m['allow_fp16_bf16_reduction_math_sdp']"), TF32 $(meta x "m['matmul_allow_tf32']"))."
    echo "Each backend's output (and log-sum-exp, where its op returns one) is checked with \`amla-lab check\` and its"
    echo "default candidates; every GPU run was deterministic. Kernels: what the profiler saw, elementwise and"
    echo "reduction kernels left out. s*: \`scripts/device/capture_sdpa.py\` (N(0,1) and outlier inputs, GQA, an explicit scale);"
    echo "e*, z*, r*, m*: \`scripts/device/capture_sdpa_probe.py\` (lengths about the kernels' blocks, q = 0, rising and falling"
    echo "scores, the math path's long rows), taken after the sdpa-math and sdpa-efficient models were written;"
    echo "o128, o250: \`scripts/device/probe_cudnn_stats.py\` (designed rows for the order of cuDNN's row sums); v*:"
    echo "\`scripts/device/capture_sdpa.py\`'s validation cases (new shapes and seeds, GQA, an explicit scale), taken after every"
    echo "model here was written."
    echo
    echo "| case | dtype | heads q/kv | L | D | causal | scale | backend | kernels | best candidate | bit-identical | lse rows identical |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    for caps in "$@"; do
        for f in $(ls "$caps"/*.npz | sort -V); do
            n=$(basename "$f" .npz)
            dt=$(meta "$n" "c['dtype']")
            causal=""; [ "$(meta "$n" "c['causal']")" = True ] && causal="--causal=top-left" # PyTorch's is_causal
            scale=$(meta "$n" "c['scale'] if c['scale'] is not None else ''")
            for b in $(meta "$n" "' '.join(c['backends'])"); do
                err=$(meta "$n" "c['backends']['$b'].get('error', '')")
                kern=$(meta "$n" "', '.join(sorted({k.replace('void ', '').split('<')[0].split('(')[0].split('_stage')[0].split('_execute')[0] for k in c['backends']['$b'].get('kernels', []) if k.strip() and not any(w in k for w in ('elementwise', 'reduce_kernel', 'Memset', 'triu_tril', 'at::native::')) and k.strip() != 'void'}))")
                row="| $n | $dt | $(meta "$n" "'%d/%d' % (c['hq'], c['hkv'])") | $(meta "$n" "c['L']") | $(meta "$n" "c['D']") | ${causal:+yes} | ${scale:-default} | $b"
                if [ -n "$err" ]; then
                    echo "$row | refused: $err | | | |"
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
if 'lse_' + sys.argv[3] in z:  # [1, H, L(padded), (1)] as the op returns it -> [H, L]
    h, n = z['q'].shape[1], z['q'].shape[2]
    np.save('%s/lse.npy' % sys.argv[2], z['lse_' + sys.argv[3]][0].reshape(h, -1)[:, :n].astype(np.float32))
PY
                # shellcheck disable=SC2086
                ./amla-lab check "$tmp/case" --in-format "$dt" --out-format "$dt" $causal ${scale:+--scale $scale} >"$tmp/chk" 2>&1 || true
                line=$(awk '/^candidate/ {getline; print; exit}' "$tmp/chk")
                best=$(echo "$line" | awk '{print $1}')
                share=$(echo "$line" | awk '{print $2, $3}')
                lse=$(echo "$line" | awk '{ if ($(NF-1) == "-") print ""; else print $(NF-3), "of", $(NF-1) }')
                [ -n "$best" ] || { best="(check failed: $(head -n 1 "$tmp/chk"))"; share=""; }
                echo "$row | $kern | $best | $share | $lse |"
            done
        done
    done
    echo
    echo "Summary: the flash backend is \`fa2\`, the memory-efficient backend \`sdpa-efficient\`, the cuDNN backend"
    echo "\`sdpa-cudnn\` and the math backend \`sdpa-math\` (with cuBLAS's split-K count for P.V where cuBLAS splits it,"
    echo "which check searches) on every element and log-sum-exp row of these captures but one: m5, whose P.V cuBLAS"
    echo "splits inside one kernel (xmma SIMT with a memset workspace) and adds the four partials in the order 0, 2, 3, 1"
    echo "(found on its fp32 replay), which the lab's split-K does not model: 99.98%. Where several candidates tie (the"
    echo "q = 0 cases, whose p are all 1), the first listed is shown."
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
