#!/bin/sh
# bench-profile.sh BENCH -- where the time of the costly stages goes: perf's top symbols for one
# sample of each, run alone on one thread (bench --only), as Markdown for results/bench.md.
# Prints a line saying so, and nothing else, when perf is not installed or not permitted.
bench=$1
echo "## Where the time goes (perf, one stage at a time on one thread)"
echo
if ! command -v perf >/dev/null 2>&1 || ! perf record -o /dev/null true >/dev/null 2>&1; then
    echo "perf is not installed or not permitted here: no profile."
    exit 0
fi
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
for s in golden base fa3-fp8 base:acc=tc-hopper flashmla flashmla-sparse fa2 fastattn-fp16acc; do
    perf record -q -o "$t/p" "$bench" --only "$s" --reps 12 >/dev/null 2>&1 || continue
    echo "**$s** (12 samples after the input's generation, which the profile includes; symbols above 3%):"
    echo
    perf report -q -i "$t/p" --no-children --sort sym --stdio 2>/dev/null |
        awk '$1 ~ /%$/ && $1 + 0 >= 3 { sub(/^ +/, ""); pct = $1; $1 = ""; $2 = ""; sub(/^ +/, ""); printf "- %s %s\n", pct, $0 }'
    echo
done
