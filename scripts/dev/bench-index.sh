#!/bin/sh
# bench-index.sh [DIR] -- results/bench.md: one line per processor whose `make bench` run is kept
# under DIR (results/bench-KIND.md), with what it says of the processor, the BLAS and the targets.
dir=${1:-results}
echo "# Speed on each processor (\`make bench\`)"
echo
echo "Written by \`make bench\` (scripts/dev/bench-index.sh) from the runs kept beside it; do not edit. Each run"
echo "is against the BLAS that processor runs, measured in the same run: ratios compare only within one"
echo "file. The machines this project runs on vary from one run to another."
echo
echo "| run | processor | reference BLAS kernels | targets met |"
echo "| --- | --- | --- | --- |"
for f in "$dir"/bench-*.md; do
    [ -f "$f" ] || continue
    name=$(basename "$f")
    cpu=$(sed -n 's/.*medians of [0-9]* runs on \(.*\), [0-9]* cores\..*/\1/p' "$f" | head -n 1)
    blas=$(grep -o 'ran its [A-Za-z0-9]* kernels' "$f" | head -n 1 | sed 's/ran its \(.*\) kernels/\1/')
    met=$(grep -o '^[0-9]* of [0-9]* speed targets met' "$f" | head -n 1 | sed 's/ speed targets met//')
    echo "| [$name]($name) | ${cpu:-?} | OpenBLAS ${blas:-?} | ${met:-?} |"
done
