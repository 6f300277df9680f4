#!/bin/sh
# [VARIANT=flashmla-etap] flashmla-check.sh [CAPTURES [OUT [NOTE]]] -- OUT (default
# results/flashmla-check.md): the flashmla variant (or VARIANT, a kernel with FlashMLA's API:
# flashmla-etap) against every capture of the real kernel (default ../shared/captures/flashmla,
# or a directory scripts/device/capture_flashmla.py or scripts/device/capture_etap.py wrote; keys in its
# meta.json), each run as one batch: the elements bit-identical to the kernel's no-split output
# and to its default (split-KV) output, the same for the log-sum-exp the kernel returns, and the
# variant's error beside the kernel's.
set -e
cd "$(dirname "$0")/../.."
var=${VARIANT:-flashmla}
case $var in
flashmla) kernel="FlashMLA" pin="FlashMLA 9c5dfab" var=flashmla:flashmla-sched=9c5dfab ;; # the captures' scheduler
flashmla-etap) kernel="FlashMLA-ETAP" pin="FlashMLA-ETAP 39e6160" ;;
*) echo "flashmla-check.sh: VARIANT is flashmla or flashmla-etap, not $var" >&2; exit 2 ;;
esac
caps=${1:-../shared/captures/flashmla}
. scripts/checks/captures-lib.sh
out=${2:-results/flashmla-check.md}
note=$3 # a paragraph after the introduction (where the captures came from)
{
    echo "# The $var variant against the real $kernel kernel (H100)"
    echo
    echo "Produced by \`${VARIANT:+VARIANT=$var }scripts/checks/flashmla-check.sh\` (\`make results\`) from"
    echo "the captures in $(echo "$caps" | sed "s,^\.\./,,") ($pin, an H100, their meta.json). Each"
    echo "capture is run as the kernel ran it: the whole batch at once (\`--load\` reads the case's q.npy,"
    echo "k.npy and seqlens.npy in FlashMLA's layout), so the split-KV scheduler sees every entry."
    echo "Columns: elements of the lab's \`$var:sm-parts=1\` output bit-identical to the kernel's"
    echo "no-split output (num_sm_parts = 1), of the lab's \`$var\` (the kernel's own num_sm_parts,"
    echo "split-KV and the combine kernel) to its default output, the same for the log-sum-exp (natural"
    echo "log, fp32) the kernel returns beside O and the one the variant computes the kernel's way"
    echo "(\`--dump\` writes it as NAME.lse.npy), and rel_fro against Golden of the no-split outputs (the"
    echo "lab's and the kernel's). Largest ulp distance: the most units in the last place (of the output"
    echo "format for O, of fp32 for the lse) between the lab's value and the kernel's, for O no-split /"
    echo "O default / lse no-split / lse default (\`scripts/checks/ulp_dist.py\`; 0 where every element is"
    echo "bit-identical)."
    [ -z "$note" ] || printf '\n%s\n' "$note"
    echo
    echo "| capture | batch | keys | no-split: identical | default path: identical | lse no-split | lse default | largest ulp distance | rel_fro $var | rel_fro kernel (no-split) |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    for c in $(case_names); do
        # only the cases meta.json describes (capture_etap.py's table1.npz holds outputs alone)
        [ "$(meta "$c" "sys.argv[2] in m['cases']")" = True ] || continue
        dtype=$(meta "$c" "c['dtype']")
        causal=$(meta "$c" "'--causal' if c['causal'] else ''")
        keys=$(meta "$c" "','.join(map(str, c['seqlens']))")
        batch=$(meta "$c" "len(c['seqlens'])")
        d="$tmp/$c"
        case_unpack "$c" "$d"
        # shellcheck disable=SC2086
        ./amla-lab run --load "$d" --dv 512 --in-format "$dtype" --out-format "$dtype" $causal \
            --variants "$var,$var:sm-parts=1" --dump "$d/o" --format csv >"$d/run.csv"
        ident() { ./amla-lab compare "$1" "$2" --in-format "$dtype" | awk '/^identical/{printf "%s of %s (%.2f%%)", $2, $4, 100 * $2 / $4}'; }
        ns=$(ident "$d/o/$var:sm-parts=1.npy" "$d/out_nosplit.npy")
        df=$(ident "$d/o/$var.npy" "$d/out.npy")
        lns=$(./amla-lab compare "$d/o/$var:sm-parts=1.lse.npy" "$d/lse_nosplit.npy" | awk '/^identical/{printf "%s of %s", $2, $4}')
        ldf=$(./amla-lab compare "$d/o/$var.lse.npy" "$d/lse.npy" | awk '/^identical/{printf "%s of %s", $2, $4}')
        ulp=""
        for pair in "$var:sm-parts=1.npy out_nosplit.npy $dtype" "$var.npy out.npy $dtype" \
            "$var:sm-parts=1.lse.npy lse_nosplit.npy fp32" "$var.lse.npy lse.npy fp32"; do
            # shellcheck disable=SC2086
            set -- $pair
            src="$d/o/$1"
            if [ "$3" != fp32 ]; then
                ./amla-lab cast --to "$3" --in "$src" --out "$d/codes.npy" >/dev/null
                src="$d/codes.npy"
            fi
            ulp="$ulp${ulp:+ / }$($py scripts/checks/ulp_dist.py "$src" "$d/$2" "$3")"
        done
        lab=$(awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) {if ($i == "rel_fro") r = i; if ($i == "variant") v = i}; next}
            $v == want {print $r}' want="$var:sm-parts=1" "$d/run.csv")
        hw=$(./amla-lab compare "$d/out_nosplit.npy" "$d/o/golden.npy" --in-format "$dtype" | awk '$1 == "rel_fro" {print $2}')
        echo "| $c | $batch | $keys | $ns | $df | $lns | $ldf | $ulp | $lab | $hw |"
        # the scheduler: the lab's metadata (--dump) against the one get_mla_metadata wrote, where the capture kept it
        [ -f "$d/tile_scheduler_metadata.npy" ] && $py - "$d" "$c" "$var" >>"$tmp/sched" <<'PY'
import array, sys
sys.path.insert(0, 'scripts/checks')
from flashmla_case import read_npy
d, c, v = sys.argv[1], sys.argv[2], sys.argv[3]
def load(path):
    head, data = read_npy(open(path, 'rb').read())
    a = array.array({'<i4': 'i', '<f8': 'd'}[head['descr']])
    a.frombytes(data)
    return head['shape'], [int(x) for x in a]
(pk, mk), (pl, ml) = load(d + '/tile_scheduler_metadata.npy'), load(d + '/o/' + v + '.tile_scheduler_metadata.npy')
same = pk[0] == pl[0] and all(mk[p * pk[1] + i] == ml[p * 5 + i] for p in range(pk[0]) for i in range(5))
nk, nl = load(d + '/num_splits.npy')[1], load(d + '/o/' + v + '.num_splits.npy')[1]
print('| %s | %d | %s | %s |' % (c, pk[0], 'identical' if same else 'DIFFERS', 'identical' if nk == nl else 'DIFFERS'))
PY
        # amla-lab check on the capture as it is: which candidate it ranks first, for each path
        mkdir -p "$d/ns"
        for f in q k seqlens; do [ -f "$d/$f.npy" ] && ln -s "../$f.npy" "$d/ns/$f.npy"; done
        ln -s ../out_nosplit.npy "$d/ns/out.npy"
        ln -s ../lse_nosplit.npy "$d/ns/lse.npy"
        for path in default:"$d" no-split:"$d/ns"; do
            # shellcheck disable=SC2086
            verdict=$(./amla-lab check "${path#*:}" --in-format "$dtype" --out-format "$dtype" $causal | sed -n 's/^verdict: //p')
            echo "| $c | ${path%%:*} | $verdict |" >>"$tmp/check"
        done
        # the split kernel's own outputs, where the capture has them: each split's normalized O
        # (oaccum) and log2-domain LSE (lse_accum) before the combine kernel
        if [ -f "$d/oaccum.npy" ] && [ -f "$d/o/$var.oaccum.npy" ]; then
            oa=$(./amla-lab compare "$d/o/$var.oaccum.npy" "$d/oaccum.npy" | awk '/^identical/{printf "%s of %s (%.2f%%)", $2, $4, 100 * $2 / $4}')
            la=$(./amla-lab compare "$d/o/$var.lse_accum.npy" "$d/lse_accum.npy" | awk '/^identical/{printf "%s of %s (%.2f%%)", $2, $4, 100 * $2 / $4}')
            echo "| $c | $oa | $la |" >>"$tmp/splits"
        fi
        rm -rf "$d"
    done
    if [ -f "$tmp/sched" ]; then
        echo
        echo "The split-KV scheduler: the lab's tile_scheduler_metadata (begin_idx, begin_seqlen, end_idx,"
        echo "end_seqlen, begin_n_split_idx per SM part; \`--dump\` writes it) and num_splits against the"
        echo "ones the kernel's get_mla_metadata wrote for the capture."
        echo
        echo "| capture | SM parts | tile_scheduler_metadata | num_splits |"
        echo "|---|---|---|---|"
        cat "$tmp/sched"
    fi
    echo
    echo "\`amla-lab check\` on each capture as it is (its q, k, seqlens and the kernel's out and lse;"
    echo "for the no-split path out_nosplit and lse_nosplit), with its default candidates: the verdict."
    echo
    echo "| capture | path | verdict of amla-lab check |"
    echo "|---|---|---|"
    cat "$tmp/check"
    if [ -f "$tmp/splits" ]; then
        echo
        echo "The split kernel and the combine kernel apart: the per-split arrays the split kernel writes"
        echo "for the combine (oaccum: fp32 [splits, s_q h_q, 512], each split's O times rcp(L); lse_accum:"
        echo "fp32 [splits, s_q h_q], lg2(L) + the running max), against the lab's (\`--dump\` writes them"
        echo "as flashmla.oaccum.npy and flashmla.lse_accum.npy on the split path)."
        echo
        echo "| capture | oaccum identical | lse_accum identical |"
        echo "|---|---|---|"
        cat "$tmp/splits"
    fi
} >"$out.tmp.$$"
mv "$out.tmp.$$" "$out"
echo "flashmla-check.sh: wrote $out"
