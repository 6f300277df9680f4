#!/bin/sh
# gpu-check.sh [DIR] -- every captured GEMM in DIR (default tests/data/gpu, from
# scripts/device/capture_gpu.py) recomputed with `amla-lab matmul` under the Hopper models, and the
# captured FP16 attention against Base; writes results/gpu-check.md.
set -e
cd "$(dirname "$0")/../.."
dir=${1:-tests/data/gpu}
bin=./amla-lab
out=results/gpu-check.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
    echo "# Tensor-core models against captured H100 outputs"
    echo
    echo "Produced by \`scripts/checks/gpu-check.sh\` (\`make results\`) from the captures in $dir"
    echo "($(tr -d '\n ' <"$dir/meta.json" | sed 's/"arrays".*//; s/[{}"]//g; s/,$//')). Each row: \`amla-lab matmul A B --in-format F --acc MODEL\`"
    echo "against the GPU's float32 C, element by element."
    echo
    echo "| capture | model | bit-identical |"
    echo "|---|---|---|"
    for c in "$dir"/gemm-*.c.npy "$dir"/gemm-*.cfast.npy; do
        f=$(basename "$c"); n=${f%.c.npy}; n=${n%.cfast.npy}
        dt=$(echo "$n" | cut -d- -f2)
        case $n in gemm-fp16-wide-*) continue ;; esac # its fp16 inputs overflow to inf
        case $f in
        *cfast*) acc=tc-hopper-fp8-fast ;;
        *) if [ "$dt" = e4m3 ] || [ "$dt" = e5m2 ]; then acc=tc-hopper-fp8; else acc=tc-hopper; fi ;;
        esac
        bf=$dt; [ "$dt" = e5m2 ] && bf=e4m3
        $bin matmul "$dir/$n.a.npy" "$dir/$n.b.npy" --in-format "$dt" --b-format "$bf" --acc "$acc" -o "$tmp/c.npy"
        echo "| $f | $acc | $($bin compare "$tmp/c.npy" "$c" | awk '/^identical/{print $2 " of " $4}') |"
    done
    mkdir -p "$tmp/attn"
    for p in q k v; do cp "$dir/attn.$p.npy" "$tmp/attn/$p.npy"; done
    $bin run --load "$tmp/attn" --in-format fp16 --out-format fp16 --samples 1 --variants golden,fa2,base:block=64:acc=tc-hopper,base:block=128:acc=tc-hopper,base:block=64 --dump "$tmp/d" --format csv >/dev/null
    g=$($bin compare "$dir/attn.flash.npy" "$tmp/d/golden.npy" | awk '/^rmse/{print $2}')
    echo
    echo "## FP16 attention: N(0,1) Q, K, V [4 heads, 256 tokens, head dim 128], prefill, not causal"
    echo
    echo "| output | RMSE against Golden | ratio to the GPU flash kernel | bit-identical to flash |"
    echo "|---|---|---|---|"
    for o in flash efficient math; do
        r=$($bin compare "$dir/attn.$o.npy" "$tmp/d/golden.npy" | awk '/^rmse/{print $2}')
        echo "| GPU $o | $r | $(awk -v a="$r" -v b="$g" 'BEGIN{printf "%.3f", a/b}') | $($bin compare "$dir/attn.$o.npy" "$dir/attn.flash.npy" | awk '/^identical/{print $2 " of " $4}') |"
    done
    for f in "$tmp"/d/fa2.npy "$tmp"/d/base*.npy; do
        r=$($bin compare "$f" "$tmp/d/golden.npy" | awk '/^rmse/{print $2}')
        echo "| lab $(basename "$f" .npy) | $r | $(awk -v a="$r" -v b="$g" 'BEGIN{printf "%.3f", a/b}') | $($bin compare "$f" "$dir/attn.flash.npy" | awk '/^identical/{print $2 " of " $4}') |"
    done
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
