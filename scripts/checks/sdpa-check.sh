#!/bin/sh
# sdpa-check.sh [OUT [CAPTURES...]] -- OUT (default results/sdpa-check.md): every PyTorch SDPA backend in the
# captures against Golden and `amla-lab check`'s default candidates: the kernels each backend launched, the best
# candidate, its share of bit-identical output elements and of log-sum-exp rows where the backend returns one.
# CAPTURES: folders of NAME.npz files and a meta.json, as scripts/device/capture_sdpa.py, capture_sdpa_probe.py and
# probe_cudnn_stats.py write them (every backend of a capture in one .npz), or (the default) tests/data/sdpa, one
# folder of .npy files per capture and backend, described by its meta.json. Needs numpy (Debian's python3-numpy).
set -e
cd "$(dirname "$0")/../.."
out=${1:-results/sdpa-check.md}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- tests/data/sdpa
caps=$1
. scripts/checks/captures-lib.sh
{
    echo "# PyTorch's SDPA backends against the lab's models"
    echo
    echo "Produced by \`scripts/checks/sdpa-check.sh\` from the captures in $* ($(meta x "m['device'] + ', torch ' + m['torch'] + ', CUDA ' + m['cuda'] + ', cuDNN ' + str(m['cudnn'])")$(meta x "'; math backend: allow_fp16_bf16_reduction_math_sdp %s, TF32 %s' % (m['allow_fp16_bf16_reduction_math_sdp'], m['matmul_allow_tf32']) if 'matmul_allow_tf32' in m else ''"))."
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
        meta_json=$caps/meta.json
        for d in $(case_names); do
            [ -d "$caps/$d" ] || continue # one capture and backend, as tests/data keeps them
            dt=$(meta "$d" "c['dtype']")
            causal=""; [ "$(meta "$d" "c['causal']")" = True ] && causal="--causal=top-left"
            scale=$(meta "$d" "c['scale'] if c.get('scale') is not None else ''")
            b=$(meta "$d" "c['backend'] if 'backend' in c else list(c['backends'])[0]")
            kern=$(meta "$d" "', '.join(sorted({k.replace('void ', '').replace('(anonymous namespace)::', '').split('<')[0].split('(')[0].split('_stage')[0].split('_execute')[0] for k in (c['kernels'] if 'kernels' in c else c['backends']['$b']['kernels']) if k.strip() and not any(w in k for w in ('elementwise', 'reduce_kernel', 'Memset', 'triu_tril', 'at::native::')) and k.strip() != 'void'}))")
            # shellcheck disable=SC2086
            ./amla-lab check "$caps/$d" --in-format "$dt" --out-format "$dt" $causal ${scale:+--scale $scale} >"$tmp/chk" 2>&1 || true
            line=$(awk '/^candidate/ {getline; print; exit}' "$tmp/chk")
            lse=$(echo "$line" | awk '{ if ($(NF-1) == "-") print ""; else print $(NF-3), "of", $(NF-1) }')
            echo "| $d | $dt | $(meta "$d" "'%d/%d' % (c['hq'], c['hkv']) if 'hq' in c else '%d/%d' % (c['heads'], c['heads'])") | $(meta "$d" "c['L'] if c.get('Lk', c['L']) == c['L'] else '%d/%d' % (c['L'], c['Lk'])") | $(meta "$d" "c['D']") | ${causal:+yes} | ${scale:-default} | $b | $kern | $(echo "$line" | awk '{print $1}') | $(echo "$line" | awk '{print $2, $3}') | $lse |"
        done
        for f in $(ls "$caps"/*.npz 2>/dev/null | sort -V); do
            n=$(basename "$f" .npz)
            dt=$(meta "$n" "c['dtype']")
            causal=""; [ "$(meta "$n" "c['causal']")" = True ] && causal="--causal=top-left" # PyTorch's is_causal
            scale=$(meta "$n" "c['scale'] if c['scale'] is not None else ''")
            for b in $(meta "$n" "' '.join(c['backends'])"); do
                err=$(meta "$n" "c['backends']['$b'].get('error', '')")
                kern=$(meta "$n" "', '.join(sorted({k.replace('void ', '').replace('(anonymous namespace)::', '').split('<')[0].split('(')[0].split('_stage')[0].split('_execute')[0] for k in c['backends']['$b'].get('kernels', []) if k.strip() and not any(w in k for w in ('elementwise', 'reduce_kernel', 'Memset', 'triu_tril', 'at::native::')) and k.strip() != 'void'}))")
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
    echo
    echo "The flash backend is \`fa2\`, the memory-efficient backend \`sdpa-efficient\`, the cuDNN backend \`sdpa-cudnn\` and"
    echo "the math backend \`sdpa-math\` (with cuBLAS's split-K count for P.V where cuBLAS splits it, which check searches)."
    echo "Where several candidates tie (q = 0, whose p are all 1), the first listed is shown. One capture these models"
    echo "were written on is not matched: a math-backend P.V of 8192 keys that cuBLAS splits inside one kernel (xmma"
    echo "SIMT with a memset workspace) and whose four partials it adds in the order 0, 2, 3, 1, which the lab's split-K"
    echo "does not model (99.98% of its elements)."
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
