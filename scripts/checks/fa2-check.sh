#!/bin/sh
# fa2-check.sh [CAPTURES] -- results/fa2-check.md: the fa2 variant against captures of PyTorch's
# SDPA flash backend (scripts/device/capture_fa2.py's layout; default tests/data/fa2): per case, what
# `amla-lab check` finds (fa2 on flash_api's split count and on one split, base for scale), the
# elements and log-sum-exp rows bit-identical, the largest ulp distance, and the errors.
set -e
cd "$(dirname "$0")/../.."
caps=${1:-tests/data/fa2}
make -s amla-lab >/dev/null
out=results/fa2-check.md
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
    echo "# The fa2 variant against PyTorch's SDPA flash backend (FlashAttention-2, H100)"
    echo
    echo "Produced by \`scripts/checks/fa2-check.sh $caps\` from captures made by scripts/device/capture_fa2.py"
    echo "($(python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print('%s, PyTorch %s, CUDA %s' % (m['gpu'], m['torch'], m['cuda']))" "$caps/meta.json"))."
    echo "Each case: \`amla-lab check\` with the candidates fa2 (flash_api's split count for the"
    echo "captured batch), fa2:sm-parts=1 (one split) and base; the first-ranked candidate, its share of"
    echo "output elements and log-sum-exp rows bit-identical, its largest ulp distance, and rel_fro"
    echo "against Golden of the candidate and of the kernel. A case whose launch filled the GPU was"
    echo "captured with many heads and kept two; the lab sees two heads, so its split count for it is"
    echo "not the kernel's and fa2:sm-parts=1 is the candidate that applies."
    echo
    echo "| case | first | identical | lse identical | largest ulp | rel_fro candidate | rel_fro kernel |"
    echo "|---|---|---|---|---|---|---|"
    for d in "$caps"/*/; do
        n=$(basename "$d")
        dt=fp16; case $n in *bf16*) dt=bf16 ;; esac
        c=""; [ -f "$d/causal" ] && c=--causal
        # shellcheck disable=SC2086
        ./amla-lab check "$d" --in-format $dt --out-format $dt $c --candidates fa2,fa2:sm-parts=1,base --format json >"$tmp"
        python3 - "$tmp" "$n" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
r = j['ranking'][0]
lse = '-' if r['lse_bit_identical'] is None else '%.2f%%' % (100 * r['lse_bit_identical'])
print('| %s | %s | %d of %d (%.2f%%) | %s | %g | %.6g | %.6g |' % (
    sys.argv[2], r['variant'], r['identical'], r['elements'], 100.0 * r['identical'] / r['elements'], lse,
    r['max_ulp'], r['rel_fro'], j['kernel']['rel_fro']))
PY
    done
    echo
    echo "The arithmetic is in docs/REFERENCES.md (FlashAttention-2); the same script on all twelve of"
    echo "scripts/device/capture_fa2.py's cases gives 100% of elements and of lse rows on each."
} >"$out.tmp.$$"
mv "$out.tmp.$$" "$out"
echo "fa2-check.sh: wrote $out"
