#!/bin/sh
# flashmla-check.sh [CAPTURES] -- results/flashmla-check.md: the flashmla variant against every
# capture of the real FlashMLA kernel (default ../shared/captures/flashmla; keys in its
# meta.json): per capture and batch entry, the elements bit-identical to the kernel's no-split
# output and to its default (split-KV) output, the same for the log-sum-exp the kernel returns,
# and the variant's error beside the kernel's.
set -e
cd "$(dirname "$0")/.."
caps=${1:-../shared/captures/flashmla}
[ -f "$caps/meta.json" ] || { echo "flashmla-check.sh: no captures in $caps" >&2; exit 2; }
make -s amla-lab >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=results/flashmla-check.md
{
    echo "# The flashmla variant against the real FlashMLA kernel (H100)"
    echo
    echo "Produced by \`scripts/flashmla-check.sh\` (\`make results\` when ../shared/captures is there) from"
    echo "the captures in shared/captures/flashmla (FlashMLA 9c5dfab, an H100, their meta.json). For each"
    echo "batch entry: elements of the lab's \`flashmla:sm-parts=1\` output bit-identical to the kernel's"
    echo "no-split output (num_sm_parts = 1), of the lab's \`flashmla\` (the kernel's own num_sm_parts,"
    echo "split-KV and the combine kernel) to its default output, and rel_fro against Golden of the"
    echo "no-split outputs (the lab's and the kernel's). The lse columns compare the log-sum-exp"
    echo "(natural log, fp32) the kernel returns beside O with the one the variant computes the"
    echo "kernel's way (\`--dump\` writes it as NAME.lse.npy). Largest ulp distance: the most units in the"
    echo "last place (of the output format for O, of fp32 for the lse) between the lab's value and the"
    echo "kernel's over the entry, for O no-split / O default / lse no-split / lse default"
    echo "(\`scripts/ulp_dist.py\`; 0 where every element is bit-identical)."
    echo
    echo "| capture | entry | keys | no-split: identical | default path: identical | lse no-split | lse default | largest ulp distance | rel_fro flashmla | rel_fro kernel (no-split) |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    for npz in "$caps"/*.npz; do
        c=$(basename "$npz" .npz)
        dtype=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['cases'][sys.argv[2]]['dtype'])" "$caps/meta.json" "$c")
        causal=$(python3 -c "import json,sys; print('--causal' if json.load(open(sys.argv[1]))['cases'][sys.argv[2]]['causal'] else '')" "$caps/meta.json" "$c")
        python3 scripts/flashmla_case.py "$npz" "$tmp/$c" "$dtype" >/dev/null
        for d in "$tmp/$c"/b*; do
            mkdir -p "$d/in"
            cp "$d/q.npy" "$d/k.npy" "$d/in/"
            # shellcheck disable=SC2086
            ./amla-lab run --load "$d/in" --dv 512 --in-format "$dtype" --out-format "$dtype" $causal \
                --variants flashmla,flashmla:sm-parts=1 --dump "$d/o" --format csv >"$d/run.csv"
            keys=$(tail -n 1 "$d/run.csv" | cut -d, -f7)
            ns=$(./amla-lab compare "$d/o/flashmla:sm-parts=1.npy" "$d/out_nosplit.npy" | awk '/^identical/{printf "%s of %s (%.2f%%)", $2, $4, 100 * $2 / $4}')
            df=$(./amla-lab compare "$d/o/flashmla.npy" "$d/out.npy" | awk '/^identical/{printf "%s of %s (%.2f%%)", $2, $4, 100 * $2 / $4}')
            lns=$(./amla-lab compare "$d/o/flashmla:sm-parts=1.lse.npy" "$d/lse_nosplit.npy" | awk '/^identical/{printf "%s of %s", $2, $4}')
            ldf=$(./amla-lab compare "$d/o/flashmla.lse.npy" "$d/lse.npy" | awk '/^identical/{printf "%s of %s", $2, $4}')
            ulp=""
            for pair in "flashmla:sm-parts=1.npy out_nosplit.npy $dtype" "flashmla.npy out.npy $dtype" \
                "flashmla:sm-parts=1.lse.npy lse_nosplit.npy fp32" "flashmla.lse.npy lse.npy fp32"; do
                # shellcheck disable=SC2086
                set -- $pair
                src="$d/o/$1"
                if [ "$3" != fp32 ]; then
                    ./amla-lab cast --to "$3" --in "$src" --out "$d/codes.npy" >/dev/null
                    src="$d/codes.npy"
                fi
                ulp="$ulp${ulp:+ / }$(python3 scripts/ulp_dist.py "$src" "$d/$2" "$3")"
            done
            lab=$(grep ',flashmla:sm-parts=1,' "$d/run.csv" | cut -d, -f19)
            hw=$(./amla-lab compare "$d/out_nosplit.npy" "$d/o/golden.npy" | awk '$1 == "rel_fro" {print $2}')
            echo "| $c | $(basename "$d") | $keys | $ns | $df | $lns | $ldf | $ulp | $lab | $hw |"
        done
    done
    echo
    echo "Each batch entry is run on its own: the scheduler's parts are those the entry gets alone,"
    echo "which for these captures are the ones the batch gave it (every part boundary falls on an"
    echo "entry's boundary)."
} >"$out.tmp.$$"
mv "$out.tmp.$$" "$out"
echo "flashmla-check.sh: wrote $out"
