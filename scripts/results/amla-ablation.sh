#!/bin/sh
# amla-ablation.sh -- results/amla-ablation.md from the per-sample CSVs of AMLA Tables 3
# and 4 (run `amla-lab sweep experiments/amla-table{3,4}.exp` first): what the compensation,
# its form, pre-multiplication and the naive Eq. (3) do to the error, relative to Base.
set -e
cd "$(dirname "$0")/../.."
for t in 3 4; do
    [ -f "results/amla-table$t.csv" ] || { echo "amla-ablation.sh: results/amla-table$t.csv missing" >&2; exit 2; }
done
out=results/amla-ablation.md
summarize() { # CSV TITLE: one markdown table, rows = variants, columns = distributions
    awk -F, -v title="$2" '
    NR == 1 { next }
    $18 == "golden" { next }
    {
        pt = ($2 == "normal") ? sprintf("N(0,%g)", $4 * $4) : sprintf("U(%g,%g)", $5, $6)
        if (!(pt in seenp)) { seenp[pt] = 1; pts[++np] = pt }
        if (!($18 in seenv)) { seenv[$18] = 1; vs[++nv] = $18 }
        k = pt SUBSEP $18
        n[k]++
        if ($19 == "nan" || $19 == "-nan" || $19 == "inf") bad[k]++; else s[k] += $19
        if ($24 == 0 && $25 == 0) { s2[k] += $19; n2[k]++ } else evs[k]++
        nf[k] += $24; ev[k] += $25
    }
    END {
        printf "## %s: mean rel_fro against Golden (ratio to base)\n\n| variant |", title
        for (i = 1; i <= np; i++) printf " %s |", pts[i]
        printf "\n|---|"; for (i = 1; i <= np; i++) printf "---|"; printf "\n"
        for (j = 1; j <= nv; j++) {
            printf "| %s |", vs[j]
            for (i = 1; i <= np; i++) {
                k = pts[i] SUBSEP vs[j]; b = pts[i] SUBSEP "base"
                if (bad[k] > 0) printf " NaN/Inf in %d of %d samples (%d non-finite outputs, %d overflows) |", bad[k], n[k], nf[k], ev[k]
                else if (evs[k] > 0) printf " %.3e (×%.3g); without the %d sample(s) with events: %.3e (×%.2f) |", s[k] / n[k], (s[k] / n[k]) / (s[b] / n[b]), evs[k], s2[k] / n2[k], (s2[k] / n2[k]) / (s[b] / n[b])
                else printf " %.3e (×%.2f) |", s[k] / n[k], (s[k] / n[k]) / (s[b] / n[b])
            }
            printf "\n"
        }
        printf "\n"
    }' "$1"
}
{
    echo "# AMLA ablations: what each part of Algorithm 2 does to the error"
    echo
    echo "Produced by \`scripts/results/amla-ablation.sh\` (\`make results\`) from results/amla-table3.csv and"
    echo "results/amla-table4.csv (100 samples per cell, ctx 8192, G 128, Dk 576, Dv 512, BF16)."
    echo
    echo "- \`amla\`: the CANN kernel's form (the default), epsilon = 1.5 (c_{i-1}/c_i - 1), half-away casts, |O| > 1e10 -> 0."
    echo "- \`amla:amla-form=paper\`: Algorithm 2 as printed, epsilon = 1.5 (c_i/c_{i-1} - 1) with c_i = S32/S16."
    echo "- \`amla-nocomp\`: epsilon = 0: the accumulator keeps each block's (1/r)_BF16 error when rescaled."
    echo "- \`amla-premul\`: P pre-multiplied by (1/r)_BF16 and the result divided by l * S32 (Appendix A item 2):"
    echo "  no compensation and the wrong final scale."
    echo "- \`amla-naive\`: Eq. (3), O += exp(m_i) P_i V_i without the safe-softmax shift."
    echo
    echo "Events (the CSV's \`events\` column) are INT32 adds outside Lemma 3.1's range: in the few samples"
    echo "where one occurs, an element of O was exactly zero when the add reached it (two BF16 products of"
    echo "P V cancelled exactly in FP32), the add turned its bits into a huge value, and the output element is"
    echo "wrong by many orders of magnitude; CANN's |O| > 1e10 -> 0 guard catches it only while it stays"
    echo "above 1e10 (later -30 rescales can shrink it below). Cells with such samples also give the mean"
    echo "without them. amla-naive's events are exp(m_i) overflows."
    echo
    summarize results/amla-table3.csv "Gaussian inputs (Table 3)"
    summarize results/amla-table4.csv "Uniform inputs (Table 4)"
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
