#!/bin/sh
# prefill-builds.sh [SAMPLES] -- results/dsa-prefill.md: (1) the exact answer for a DSA prefill: FlashMLA's sparse
# prefill kernel (flashmla-sparse-prefill) against Golden beside FlashMLA's dense decode kernel (flashmla:sm-parts=1)
# and Base (tc-hopper) over the same 2048 keys (a token's top-k), per layer profile of the mla distribution, V3.2's
# d_qk 576 and V4's 512; (2) what vLLM's build costs: each FlashMLA kernel built with --use_fast_math (its setup.py,
# SGLang) and without (vLLM's CMake), its error against Golden and the bits the two builds disagree on. SAMPLES
# (default 8) per row; everything from generated inputs, on this machine, in a few minutes.
set -e
cd "$(dirname "$0")/../.."
n=${1:-8}
out=results/dsa-prefill.md
make -s amla-lab >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
A=./amla-lab
scale=0.07216878364870323 # DeepSeek's softmax scale 192^-0.5 (q/k nope 128 + rope 64)
# mean COLUMN VARIANT < CSV: the mean of a column over the variant's rows (%.4e); maxof: the largest (%.3e)
col() { awk -F, -v c="$1" -v v="$2" -v how="$3" 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == c) k = i; if ($i == "variant") w = i }; next }
    $w == v { s += $k; m++; if ($k > x) x = $k }
    END { if (how == "max") printf "%.3e", x; else printf "%.4e", m ? s / m : 0 }'; }
mean() { col "$1" "$2" mean; }
maxof() { col "$1" "$2" max; }
# differ A B: the elements (rows) of two dumped arrays whose bits differ, as "d of n"
differ() { $A compare "$1" "$2" | awk '/^identical/ { printf "%d of %d", $4 - $2, $4 }'; }
{
    echo "# DeepSeek's sparse attention prefill against the exact answer, and what the build costs"
    echo
    echo "Produced by \`scripts/results/prefill-builds.sh\` ($n samples a row, generated inputs; the kernels' arithmetic"
    echo "as the lab models it bit for bit: results/flashmla-prefill-check.md). Softmax scale 192^-0.5 (DeepSeek's);"
    echo "one query token a sample over its 2048 selected keys (the DSA top-k), 64 query heads and 8 query tokens a"
    echo "sample; \`--dist mla --layer-profile P\`. rel_fro: mean over the samples against Golden (exact attention"
    echo "over the same keys, MPFR-bounded); lse: the largest |lse - Golden's| (natural log)."
    echo
    echo "## 1. The sparse prefill beside a dense kernel over the same keys"
    echo
    echo "flashmla-sparse-prefill is FlashMLA's flash_mla_sparse_fwd (9241ae3, its setup.py's build) given the top-k list"
    echo "of the 2048 keys in order; flashmla:sm-parts=1 is FlashMLA's dense decode kernel run on exactly those keys (its"
    echo "no-split path); base:acc=tc-hopper the plain tiled attention with Hopper's tensor-core accumulation. 'bits"
    echo "differ' counts the output elements (of sample 0) where the sparse prefill's bf16 O differs from the dense"
    echo "decode's. FlashMLA's dense decode kernel runs d_qk 576 only: its d_qk 512 rows are its arithmetic extrapolated."
    echo
    echo "| d_qk | profile | rel_fro sparse prefill | rel_fro dense decode | rel_fro base | lse sparse prefill | lse dense decode | bits differ |"
    echo "|---|---|---|---|---|---|---|---|"
    for d in 576 512; do
        for p in 1 2 3 4 5 6 7 8; do
            rm -rf "$tmp/d"
            $A run --dist mla --layer-profile $p --dk $d --dv 512 --heads 64 --sq 8 --ctx 2048 --scale $scale \
                --samples "$n" --variants flashmla-sparse-prefill,flashmla:sm-parts=1,base:acc=tc-hopper \
                --format csv --dump "$tmp/d" >"$tmp/c.csv"
            echo "| $d | $p | $(mean rel_fro flashmla-sparse-prefill <"$tmp/c.csv") | $(mean rel_fro flashmla:sm-parts=1 <"$tmp/c.csv") | $(mean rel_fro base:acc=tc-hopper <"$tmp/c.csv") | $(maxof lse_max_abs flashmla-sparse-prefill <"$tmp/c.csv") | $(maxof lse_max_abs flashmla:sm-parts=1 <"$tmp/c.csv") | $(differ "$tmp/d/flashmla-sparse-prefill.npy" "$tmp/d/flashmla:sm-parts=1.npy") |"
        done
    done
    echo
    echo "## 2. FlashMLA built with and without --use_fast_math"
    echo
    echo "Each kernel as its repository's setup.py builds it (\`--use_fast_math\`: FTZ, ex2/lg2/rcp.approx) and as"
    echo "vLLM's CMake builds it (\`build=ieee\`: subnormals kept, exp2f's fix-up, libdevice's logf and log2f, IEEE"
    echo "division); both models match H200 captures of their build bit for bit (results/flashmla-prefill-check.md)."
    echo "'O differ' and 'lse differ' count the output elements and rows (sample 0) where the two builds disagree."
    echo "dense decode: 128 heads, one query token, 4096 keys (its split-KV path and combine); FP8 sparse decode: V32"
    echo "cache, 128 heads, top-k 2048 of the keys, no split; sparse prefill: as in section 1, d_qk 576."
    echo
    echo "| kernel | inputs | rel_fro fast-math | rel_fro ieee | lse fast-math | lse ieee | O differ | lse differ |"
    echo "|---|---|---|---|---|---|---|---|"
    for k in "flashmla|dense decode|--dk 576 --dv 512 --heads 128 --ctx 4096" \
             "flashmla-sparse:sm-parts=1|FP8 sparse decode|--dk 576 --dv 512 --heads 128 --ctx 2048" \
             "flashmla-sparse-prefill|sparse prefill|--dk 576 --dv 512 --heads 64 --sq 8 --ctx 2048"; do
        v=${k%%|*} rest=${k#*|} name=${rest%%|*} shape=${rest#*|}
        w=$v:build=ieee
        for dist in "--dist normal|normal 1" "--dist normal --sigma 4|normal 4" "--dist mla --layer-profile 3|mla profile 3" \
                    "--dist mla --layer-profile 8|mla profile 8"; do
            dopt=${dist%%|*} dname=${dist#*|}
            rm -rf "$tmp/d"
            # shellcheck disable=SC2086
            $A run $dopt $shape --scale $scale --samples "$n" --variants "$v,$w" --format csv --dump "$tmp/d" >"$tmp/c.csv"
            echo "| $name | $dname | $(mean rel_fro "$v" <"$tmp/c.csv") | $(mean rel_fro "$w" <"$tmp/c.csv") | $(maxof lse_max_abs "$v" <"$tmp/c.csv") | $(maxof lse_max_abs "$w" <"$tmp/c.csv") | $(differ "$tmp/d/$v.npy" "$tmp/d/$w.npy") | $(differ "$tmp/d/$v.lse.npy" "$tmp/d/$w.lse.npy") |"
        done
    done
} >"$tmp/out.md"
mv "$tmp/out.md" "$out"
echo "wrote $out"
