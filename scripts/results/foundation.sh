#!/bin/sh
# foundation.sh [SAMPLES] -- Base (and standard) at AMLA Table 3's N(0,1) and N(0,16) cells:
# ctx 8192, G 128, Dk 576, Dv 512, BF16 in and out. Writes results/foundation.{csv,md}.
set -e
cd "$(dirname "$0")/../.."
n=${1:-100}
bin=./amla-lab
out=results/foundation
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
$bin run --dist normal --sigma 1 --samples "$n" --variants golden,standard,base --csv "$tmp/n1.csv" >"$tmp/n1.txt"
$bin run --dist normal --sigma 4 --samples "$n" --variants golden,standard,base --csv "$tmp/n16.csv" >"$tmp/n16.txt"
end=$(date +%s)
{ cat "$tmp/n1.csv"; tail -n +2 "$tmp/n16.csv"; } >"$tmp/all.csv"
mv "$tmp/all.csv" "$out.csv"
# mean rel_fro of base per sigma, next to AMLA Table 3's Base row
cmp_row() { # sigma paper
    awk -F, -v s="$1" -v p="$2" '$18=="base" && $4==s {t+=$19; n++}
        END {printf "| N(0, %g) | %.4e | %.2e | %.3f |\n", s*s, t/n, p, t/n/p}' "$out.csv"
}
{
    echo "# Base against Golden at AMLA Table 3's N(0,1) and N(0,16) cells"
    echo
    echo "Produced by \`scripts/results/foundation.sh $n\` (\`make results\`); $(nproc) cores, $((end - start)) s in all."
    echo "Setting: ctx 8192, G 128, Dk 576, Dv 512, BF16 Q/K/V (V = K[:, :512]) and output, KV block 512,"
    echo "FP32 sequential-FMA accumulation, $n samples per distribution, seed 1."
    echo
    echo "| distribution | lab Base rel_fro (mean) | paper Base (Table 3) | lab / paper |"
    echo "|---|---|---|---|"
    cmp_row 1 1.77e-3
    cmp_row 4 1.51e-3
    echo
    echo "## N(0, 1)"
    echo '```'; cat "$tmp/n1.txt"; echo '```'
    echo "## N(0, 16)"
    echo '```'; cat "$tmp/n16.txt"; echo '```'
} >"$out.md.tmp"
mv "$out.md.tmp" "$out.md"
cat "$out.md"
