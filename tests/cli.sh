#!/bin/sh
# cli.sh -- command-line tests: outputs, file handling, and bad input (exit 2, one line).
# Uses $AMLA_BIN (default ./amla-lab); $AMLA_WRAP may prefix it (valgrind).
BIN=${AMLA_BIN:-./amla-lab}
A="$AMLA_WRAP $BIN"
# AH: the bit-identity checks on real captures (seconds natively, many minutes under valgrind);
# under valgrind they run unwrapped (the ASan run covers their memory use)
AH=$A; [ -n "$AMLA_WRAP" ] && AH=$BIN
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
SMALL="--ctx 256 --heads 4 --dk 64 --dv 32 --block 64 --samples 2"

# expect_err DESCRIPTION ARGS...: exit 2 and exactly one stderr line "amla-lab: error: ..."
expect_err() {
    desc=$1; shift
    $A "$@" >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    n=$(wc -l <"$T/err")
    if [ $rc -eq 2 ] && [ "$n" -eq 1 ] && grep -q '^amla-lab: error: ' "$T/err"; then ok
    else bad "$desc: exit $rc, stderr: $(head -c 300 "$T/err")"; fi
}
# csvcol NAME < CSV: the column NAME of every row (found by the header)
csvcol() { awk -F, -v n="$1" 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == n) c = i; next} {print $c}'; }
# expect_eq DESCRIPTION EXPECTED ACTUAL
expect_eq() { if [ "$2" = "$3" ]; then ok; else bad "$1: expected [$2], got [$3]"; fi; }

# ---- cast: the issue's examples, exactly
expect_eq "cast e4m3" "$(printf '0x7e 448\n0x7f nan')" "$(echo 464 465 | $A cast --to e4m3)"
expect_eq "cast e4m3 sat" "0x7e 448" "$(echo 1e6 | $A cast --to e4m3 --saturate)"
expect_eq "cast e5m2" "$(printf '0x7b 57344\n0x7c inf')" "$(echo 61439 61440 | $A cast --to e5m2)"
expect_eq "cast bf16 forms" "$(printf '0x4049 3.140625\n0x4140 12\n0x7fc0 nan\n0xff80 -inf')" \
    "$(printf '3.14\n0x1.8p+3 nan\t-inf' | $A cast --to bf16)"
expect_eq "cast --bits" "0x3c00 1" "$(echo 0x3f800000 | $A cast --to fp16 --bits)"
# cast on arrays: a float32 .npy [1, 3.14159, 464, 465] to e4m3 codes (|u1): 1 is 0x38; 3.14159
# is nearer 3.25 (0x45) than 3.0; 464 ties to even 448 (0x7e); 465 overflows to NaN (0x7f)
npyhdr() { # DESCR SHAPE: a version-1 header padded to 128 bytes
    d="{'descr': '$1', 'fortran_order': False, 'shape': ($2,), }"
    printf '\223NUMPY\001\000\166\000%-117s\n' "$d"
}
{ npyhdr '<f4' 4; printf '\000\000\200\077\320\017\111\100\000\000\350\103\000\200\350\103'; } >"$T/cx.npy"
$A cast --to e4m3 --in "$T/cx.npy" --out "$T/cy.npy" || bad "cast --in"
expect_eq "cast array e4m3 codes" "38 45 7e 7f" "$(tail -c 4 "$T/cy.npy" | od -An -tx1 | tr -s ' ' | sed 's/^ //')"
head -c 64 "$T/cy.npy" | grep -q "'|u1'" && ok || bad "cast codes npy dtype"
$A cast --to bf16 --in "$T/cx.npy" --out "$T/cv.npy" --values || bad "cast --values"
expect_eq "cast array bf16 values" "3f800000 40490000 43e80000 43e80000" "$(tail -c 16 "$T/cv.npy" | od -An -tx4 | tr -s ' ' | sed 's/^ //')"
expect_err "cast --in without --out" cast --to bf16 --in "$T/cx.npy"
expect_err "cast --values without --in" cast --to bf16 --values
expect_err "cast --in with --bits" cast --to bf16 --in "$T/cx.npy" --out "$T/x.npy" --bits
[ ! -e "$T/x.npy" ] && ok || bad "a refused cast left an output file"
expect_err "cast --in missing" cast --to bf16 --in "$T/none.npy" --out "$T/x.npy"
expect_err "cast --out unwritable" cast --to bf16 --in "$T/cx.npy" --out /nonexistent/x.npy
head -c 134 "$T/cx.npy" >"$T/ct.npy"
expect_err "cast --in truncated" cast --to bf16 --in "$T/ct.npy" --out "$T/x.npy"
expect_eq "cast rz" "0x3f80 1" "$(echo 1.0078 | $A cast --to bf16 --rounding rz)"
expect_eq "cast ru" "0x3f81 1.0078125" "$(echo 1.0001 | $A cast --to bf16 --rounding ru)"
expect_eq "cast tf32" "0x3f802000 1.00097656" "$(echo 1.0009765625 | $A cast --to tf32)"
expect_eq "cast fp32" "0x3eaaaaab 0.333333343" "$(echo 0.333333333333 | $A cast --to fp32)"
expect_eq "cast odd" "0x3f81 1.0078125" "$(echo 1.001 | $A cast --to bf16 --rounding odd)"
expect_err "cast without --to" cast
expect_err "cast bad format" cast --to fp12
expect_err "cast bad mode" cast --to bf16 --rounding up
echo "1 abc 2" | $A cast --to bf16 >"$T/out" 2>"$T/err"; rc=$?
if [ $rc -eq 2 ] && grep -q "abc" "$T/err" && [ "$(wc -l <"$T/err")" -eq 1 ]; then ok; else bad "cast bad token: $rc"; fi
echo "0x3f80" | $A cast --to bf16 --bits >"$T/out" 2>"$T/err"; rc=$?
if [ $rc -eq 2 ]; then ok; else bad "cast short bit pattern accepted"; fi

# ---- run: rows, formats, files
$A run $SMALL >"$T/table" 2>"$T/err" || bad "run small: $(cat "$T/err")"
for v in standard base; do grep -q "^$v " "$T/table" && ok || bad "table lacks $v row"; done
grep -q "^golden " "$T/table" && bad "table: golden's row of zeros is back" || ok
grep -q "^# golden (the reference, MPFR-bounded): [0-9.]* s/sample$" "$T/table" && ok || bad "table: golden's time line"
# the variant column fits the longest spec: the metrics start in one column on every row
$A run $SMALL --variants base,fastattn-fp16acc,amla:amla-form=paper:block=128 >"$T/wide" 2>&1
expect_eq "table columns aligned" "1" "$(grep -E '^(variant|base|fastattn|amla)' "$T/wide" | awk '{print index($0, $2)}' | sort -u | wc -l | tr -d ' ')"
$A run $SMALL --format csv >"$T/stdout.csv" || bad "run csv"
expect_eq "csv header" "experiment,version,dist,mean,sigma,low,high,rope_dims,rope_scale,outlier_rate,outlier_scale,token_spread,load,ctx,heads,kv_heads,sq,dk,dv,causal,block,kv,in_format,out_format,acc_qk,acc_pv,scale,amla_form,exact,only,row_block,sub_block,fa3_block,fa3_hadamard,sm_count,sm_parts,fa3_varlen,page_size,flashmla_sched,triton_decode,build,seed,kernel_note,sample,variant,rel_fro,rmse,cos_sim,cos_diff,max_abs,nonfinite,events,lse_max_abs" \
    "$(head -n 1 "$T/stdout.csv")"
# the build column: --build's on a FlashMLA variant (and its own per-variant setting), empty on a variant that
# models its kernel's own build
$A run $SMALL --build ieee --variants flashmla,flashmla:build=fast-math,fa2 --format csv >"$T/build.csv" 2>"$T/err" ||
    bad "build column run: $(cat "$T/err")"
expect_eq "csv build column" "ieee|fast-math|" "$(csvcol build <"$T/build.csv" | head -n 3 | tr '\n' '|' | sed 's/|$//')"
# every setting that changes a number is in every row: --acc tc-hopper --causal --kv-heads 2
# --scale and --exact differ from a default run's columns; the kernels' own models are named
$A run --ctx 64 --heads 4 --dk 32 --dv 16 --samples 1 --acc tc-hopper --causal --kv-heads 2 --scale 0.25 \
    --exact p_cast,o_div --variants base,flashmla,amla:amla-form=paper --format csv >"$T/cfg.csv" 2>"$T/err" || bad "config columns run: $(cat "$T/err")"
for c in kv_heads causal acc_qk acc_pv scale exact amla_form version; do
    printf '%s=%s\n' "$c" "$(csvcol "$c" <"$T/cfg.csv" | tr '\n' ' ')"
done >"$T/cfg.txt"
expect_eq "configuration columns" "$(printf 'kv_heads=2 2 2 \ncausal=yes yes yes \nacc_qk=tc-hopper tc-hopper tc-hopper \nacc_pv=tc-hopper tc-hopper tc-hopper \nscale=0.25 0.25 0.25 \nexact=p_cast;o_div p_cast;o_div p_cast;o_div \namla_form=cann cann paper \nversion=%s %s %s ' "$($A --version | cut -d' ' -f2)" "$($A --version | cut -d' ' -f2)" "$($A --version | cut -d' ' -f2)")" "$(cat "$T/cfg.txt")"
expect_eq "fixed models named" "fp32-fma tc-hopper" "$($A run --ctx 64 --heads 2 --dk 32 --dv 16 --samples 1 --variants base,flashmla --format csv | csvcol acc_qk | tr '\n' ' ' | sed 's/ $//')"
$A run --ctx 64 --heads 2 --dk 32 --dv 16 --samples 1 --variants flashmla,base --format json >"$T/cfg.json"
python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
f, b = d['variants']
assert d['version'] and f['settings']['acc_qk'] == 'tc-hopper' and f['settings']['block'] == 64, f['settings']
assert len(f['rows']) == 1 and f['rows'][0]['rel_fro'] == f['rel_fro']['mean'] and f['lse_max_abs'] < 1e-5
assert b['lse_max_abs'] is None and b['settings']['acc_qk'] == 'fp32-fma'
" "$T/cfg.json" && ok || bad "json: settings, rows and lse_max_abs per variant"
# formats under the names users already type (PyTorch, ml_dtypes)
expect_eq "format aliases: cast" "$(echo 1.1 300 | $A cast --to e4m3) $(echo 1.1 | $A cast --to bf16) $(echo 1.1 | $A cast --to fp16)" \
    "$(echo 1.1 300 | $A cast --to float8_e4m3fn) $(echo 1.1 | $A cast --to bfloat16) $(echo 1.1 | $A cast --to half)"
expect_eq "format aliases: run" "$($A run $SMALL --in-format fp16 --out-format fp32 --format csv)" \
    "$($A run $SMALL --in-format float16 --out-format float32 --format csv)"
expect_eq "csv rows (2 samples x 7: golden and the six of the default lineup)" "15" "$(wc -l <"$T/stdout.csv" | tr -d ' ')"
$A run $SMALL --csv "$T/file.csv" >/dev/null || bad "run --csv"
cmp -s "$T/file.csv" "$T/stdout.csv" && ok || bad "--csv file differs from --format csv"
ls "$T" | grep -q 'tmp\.' && bad "temporary file left behind" || ok
$A run $SMALL --threads 1 --format csv >"$T/t1.csv" && $A run $SMALL --threads 2 --format csv >"$T/t2.csv"
cmp -s "$T/t1.csv" "$T/t2.csv" && ok || bad "--threads 1 and 2 differ"
$A run $SMALL --format json >"$T/out.json" || bad "run json"
if command -v python3 >/dev/null; then
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert [v['variant'] for v in d['variants']]==['golden','standard','base','amla','flashmla','snapmla','etap']; assert d['variants'][2]['rel_fro']['mean']>0" "$T/out.json" && ok || bad "json not valid"
fi
# dump, compare, load: the same numbers three ways
$A run $SMALL --samples 1 --variants base --dump "$T/d" --format csv >"$T/d.csv" || bad "dump"
for f in q k v golden base; do [ -f "$T/d/$f.npy" ] && ok || bad "dump lacks $f.npy"; done
want=$(csvcol rel_fro <"$T/d.csv" | tail -n 1)
got=$($A compare "$T/d/base.npy" "$T/d/golden.npy" | awk '$1=="rel_fro"{print $2}')
expect_eq "compare = run's rel_fro" "$want" "$got"
$A run --load "$T/d" --variants base --block 64 --samples 1 --format csv >"$T/l.csv" || bad "load"
expect_eq "load reproduces rel_fro" "$want" "$(csvcol rel_fro <"$T/l.csv" | tail -n 1)"
$A compare "$T/d/golden.npy" "$T/d/golden.npy" --format json | grep -q '"rel_fro": 0' && ok || bad "compare self"
$A list | grep -q "^  base " && ok || bad "list lacks base"
$A list | grep -q "^  e4m3 " && ok || bad "list lacks e4m3"
$A list --sites base | grep -q "^p_cast " && ok || bad "list --sites base lacks p_cast"
$A run $SMALL --exact all --variants base --format csv | csvcol rel_fro | tail -n 1 | awk '{exit !($1 < 1e-12)}' && ok || bad "--exact all not exact"
$A --help | grep -q "usage" && ok || bad "--help"
$A run --help | grep -q -- "--sigma" && ok || bad "run --help"
$A --version | grep -q "amla-lab" && ok || bad "--version"

# ---- attribution: --only, --attribute
$A run $SMALL --variants base --attribute >"$T/attr.txt" || bad "run --attribute"
grep -q "attribution of base's rel_fro" "$T/attr.txt" && ok || bad "no attribution table"
grep -q "^out_cast " "$T/attr.txt" && grep -q "^p_cast " "$T/attr.txt" && ok || bad "attribution lacks sites"
expect_eq "attribution csv rows (2 samples x (golden + base + 2 x 9 sites))" "41" \
    "$($A run $SMALL --variants golden,base --attribute --format csv | wc -l | tr -d ' ')"
$A run $SMALL --variants base:only=out_cast,base:exact=out_cast --format csv >/dev/null && ok || bad "per-variant only/exact"
expect_err "unknown --only site" run --only warp

# ---- sweep: outputs, resume after kill -9 gives the identical CSV, malformed files
cat >"$T/s.exp" <<'EXP'
# a small experiment
name small
title small sweep
set ctx 300
set heads 4
set dk 32
set dv 16
set block 64
set samples 3
set variants golden,base,amla,amla:amla-form=cann
grid sigma 1 4
paper base rel_fro 1.8e-3 1.5e-3
plot rel_fro sigma logy
note a note
EXP
$A sweep "$T/s.exp" --out "$T/full" --no-plot >/dev/null 2>"$T/err" || bad "sweep: $(cat "$T/err")"
for f in small.csv small.md; do [ -f "$T/full/$f" ] && ok || bad "sweep lacks $f"; done
[ -f "$T/full/.small.samples" ] && ok || bad "no sample store after a finished sweep"
# a finished sweep run again only rewrites its reports (the sample store is complete)
rm "$T/full/small.csv"; $A sweep "$T/s.exp" --out "$T/full" --no-plot >/dev/null 2>&1 && [ -f "$T/full/small.csv" ] && ok || bad "rerun of a finished sweep"
expect_eq "sweep csv rows (2 points x 3 samples x 4)" "25" "$(wc -l <"$T/full/small.csv" | tr -d ' ')"
grep -q "| base | .* / 0.0018 / ×" "$T/full/small.md" && ok || bad "md lacks the paper comparison"
# a quick try: --samples and --set replace the file's settings, and the report says so
$A sweep "$T/s.exp" --samples 1 --set heads=2 --set ctx=100 --out "$T/quick" --no-plot >/dev/null 2>"$T/err" || bad "quick sweep: $(cat "$T/err")"
expect_eq "quick sweep: 2 points x 1 sample x 4 rows" "9" "$(wc -l <"$T/quick/small.csv" | tr -d ' ')"
expect_eq "quick sweep: the overrides in every row" "2 100" "$(csvcol heads <"$T/quick/small.csv" | sort -u) $(csvcol ctx <"$T/quick/small.csv" | sort -u)"
grep -q "quick run (sweep --samples 1 --set heads=2 --set ctx=100): not the experiment as written" "$T/quick/small.md" && ok || bad "quick sweep: the report does not say so"
$A sweep "$T/s.exp" --set heads=2 --check | grep -q "ok, experiment small" && ok || bad "sweep --check with --set"
expect_err "sweep --set a grid option" sweep "$T/s.exp" --set sigma=2 --out "$T/quick2"
expect_err "sweep --set without =" sweep "$T/s.exp" --set heads --out "$T/quick2"
expect_err "sweep --set unknown option" sweep "$T/s.exp" --set frob=2 --out "$T/quick2"
expect_err "sweep --samples 0" sweep "$T/s.exp" --samples 0
expect_err "matmul --format (a number format is --in-format)" matmul tests/data/gpu/mma/mma-fp16-normal.a.npy tests/data/gpu/mma/mma-fp16-normal.b.npy --format fp16 -o "$T/mm.npy"
AMLA_SWEEP_KILL_AFTER=2 $A sweep "$T/s.exp" --out "$T/part" --no-plot >/dev/null 2>&1
expect_eq "killed sweep exit" "137" "$?"
[ -f "$T/part/.small.samples" ] && [ ! -e "$T/part/small.csv" ] && ok || bad "killed sweep left no sample store, or a csv"
# cut the sample store in the middle of its last line, as a kill during a write would
sz=$(wc -c <"$T/part/.small.samples"); head -c $((sz - 7)) "$T/part/.small.samples" >"$T/cut" && mv "$T/cut" "$T/part/.small.samples"
AMLA_SWEEP_KILL_AFTER=2 $A sweep "$T/s.exp" --out "$T/part" --no-plot >/dev/null 2>&1
$A sweep "$T/s.exp" --out "$T/part" --no-plot >/dev/null 2>&1 || bad "resumed sweep failed"
cmp -s "$T/full/small.csv" "$T/part/small.csv" && ok || bad "resumed sweep csv differs from the uninterrupted one"
# the plot of a two-dimensional grid: one panel per value of the other grid line, ticks at the
# x values, axes in words, every series in the key once (only where gnuplot is installed)
if command -v gnuplot >/dev/null 2>&1; then
    sed -e 's/^name small/name small2d/' -e 's/^grid sigma 1 4/grid dk,dv 32,16 16,16\ngrid sigma 1 4/' \
        -e 's/^set samples 3/set samples 2/' -e 's/^paper base rel_fro .*/paper base rel_fro 1.8e-3 1.5e-3 - 1.5e-3/' \
        "$T/s.exp" >"$T/s2.exp"
    AMLA_KEEP_PLOT_SCRIPT=1 $A sweep "$T/s2.exp" --out "$T/p2" >/dev/null 2>"$T/err" || bad "2-D sweep: $(cat "$T/err")"
    gp="$T/p2/.small2d.plot.gp"
    head -c 8 "$T/p2/small2d.png" 2>/dev/null | grep -q PNG && ok || bad "no png for the 2-D sweep"
    expect_eq "one plot command per panel" "2" "$(grep -c '^plot ' "$gp")"
    grep -q "set title 'dk = 32, dv = 16'" "$gp" && grep -q "set title 'dk = 16, dv = 16'" "$gp" && ok || bad "panel titles"
    grep -q "set xtics ('1' 1, '4' 4)" "$gp" && ok || bad "x ticks at the grid's values"
    grep -q "set xlabel 'σ" "$gp" && grep -q "set ylabel 'relative Frobenius error against Golden'" "$gp" && ok || bad "axis words"
    expect_eq "key entries (3 lab + 1 paper, first panel only)" "4" "$(grep -o "title '[^']*'" "$gp" | grep -v ' = ' | grep -vc "title ''")"
fi
$A sweep "$T/s.exp" --check >"$T/chk" && ok || bad "sweep --check"
grep -q "^$T/s.exp: ok, experiment small: 2 grid points" "$T/chk" && ok || bad "sweep --check says nothing: $(cat "$T/chk")"
$A sweep "$T/s.exp" --out "$T/full" --no-plot 2>/dev/null | tail -n 1 >"$T/last"
grep -q "^small: wrote $T/full/small.csv, $T/full/small.md (6 samples, " "$T/last" && ok || bad "sweep: no final line naming what it wrote ($(cat "$T/last"))"
# the same CSV for any --threads, and (MPI) for any number of ranks, which take the samples
# in another order; a resumed store is shared out too. Not under valgrind/ASan (AMLA_QUICK):
# OpenMPI's own allocations are not ours to check.
$A sweep "$T/s.exp" --out "$T/thr1" --threads 1 --no-plot >/dev/null 2>&1
cmp -s "$T/full/small.csv" "$T/thr1/small.csv" && ok || bad "sweep csv differs between --threads 1 and all cores"
if command -v mpirun >/dev/null 2>&1 && [ -z "$AMLA_QUICK" ]; then
    MPI="env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 mpirun --oversubscribe"
    for n in 2 3; do
        $MPI -n $n $A sweep "$T/s.exp" --out "$T/mpi$n" --no-plot >/dev/null 2>"$T/err" || bad "mpirun -n $n sweep: $(head -3 "$T/err")"
        cmp -s "$T/full/small.csv" "$T/mpi$n/small.csv" && ok || bad "sweep csv from $n MPI ranks differs from one process"
    done
    AMLA_SWEEP_KILL_AFTER=2 $A sweep "$T/s.exp" --out "$T/mpires" --no-plot >/dev/null 2>&1
    $MPI -n 2 $A sweep "$T/s.exp" --out "$T/mpires" --no-plot >/dev/null 2>&1 || bad "mpirun resume failed"
    cmp -s "$T/full/small.csv" "$T/mpires/small.csv" && ok || bad "MPI-resumed sweep csv differs"
    $MPI -n 2 $A run --samples 1 --ctx 64 >/dev/null 2>"$T/err"
    expect_eq "run under mpirun exit" "2" "$?"
    grep -q "only 'sweep' splits" "$T/err" && ok || bad "run under mpirun: no clear message"
    printf 'name badmpi\nset frob 3\n' >"$T/badmpi.exp"
    $MPI -n 2 $A sweep "$T/badmpi.exp" --out "$T/badmpi" >/dev/null 2>"$T/err"
    expect_eq "malformed experiment under mpirun: one error line" "1" "$(grep -c 'amla-lab: error:' "$T/err")"
fi
bad_exp() { # DESCRIPTION LINE-TEXT WANTED-IN-MESSAGE
    printf 'name x\nset samples 1\n%s\n' "$2" >"$T/bad.exp"
    expect_err "$1" sweep "$T/bad.exp" --out "$T/badout"
    grep -q "$3" "$T/err" && ok || bad "$1: message lacks '$3': $(cat "$T/err")"
}
bad_exp "unknown keyword" "frobnicate 3" "bad.exp:3:"
bad_exp "bad set value" "set ctx abc" "bad.exp:3: --ctx"
bad_exp "unknown set option" "set warp 9" "bad.exp:3:"
bad_exp "bad grid value" "grid sigma 1 -2" "bad.exp:3:"
bad_exp "grid tuple" "grid low,high -1,1 -3" "bad.exp:3:"
bad_exp "paper count" "paper base rel_fro 1e-3 2e-3" "gives 2 values"
bad_exp "paper variant" "paper seesaw rel_fro 1e-3" "not in the variants"
bad_exp "paper number" "paper base rel_fro abc" "bad.exp:3:"
bad_exp "plot axis" "plot rel_fro ctx" "not a grid option"
# 66 grid values: more than a line may hold (found by fuzz-exp, which once wrote past the grid)
bad_exp "too many values" "grid ctx $(seq -s ' ' 64 64 4224)" "more than 64 values"
bad_exp "bad attribute value" "set attribute maybe" "bad.exp:3: --attribute"
expect_err "sweep missing file" sweep "$T/none.exp"
expect_err "sweep no file" sweep
expect_err "sweep bad option" sweep "$T/s.exp" --frob
expect_err "sweep unwritable out" sweep "$T/s.exp" --out /proc/nonexistent/x

# ---- matmul: a captured H100 GEMM reproduced bit for bit; bad input
G=tests/data/gpu
if [ -f $G/gemm-bf16-normal-256.a.npy ]; then
    $A matmul $G/gemm-bf16-normal-256.a.npy $G/gemm-bf16-normal-256.b.npy --in-format bf16 --acc tc-hopper -o "$T/c.npy" || bad "matmul"
    expect_eq "matmul tc-hopper vs H100" "1024 of 1024" "$($A compare "$T/c.npy" $G/gemm-bf16-normal-256.c.npy | awk '/^identical/{print $2" of "$4}')"
    expect_err "matmul K mismatch" matmul $G/gemm-bf16-normal-256.a.npy $G/gemm-bf16-normal-16.b.npy -o "$T/x.npy"
    expect_err "matmul bad model" matmul $G/gemm-bf16-normal-256.a.npy $G/gemm-bf16-normal-256.b.npy --acc tc-blackwell -o "$T/x.npy"
    expect_err "matmul no output" matmul $G/gemm-bf16-normal-256.a.npy $G/gemm-bf16-normal-256.b.npy
    expect_err "matmul unwritable" matmul $G/gemm-bf16-normal-256.a.npy $G/gemm-bf16-normal-256.b.npy -o /nonexistent/c.npy
    expect_err "matmul non-finite" matmul $G/gemm-fp16-wide-16.a.npy $G/gemm-fp16-wide-16.b.npy --in-format fp16 -o "$T/x.npy"
fi

# ---- flashmla against the real kernel: captures of FlashMLA's dense decode on an H100 (a subset
# of shared/captures/flashmla, inputs and the outputs as bf16 codes; f2-fp16 is an FP16 capture of
# scripts/device/capture_flashmla.py, marked by its file fp16): the lab's outputs, cast to the codes of
# the capture's format, must be the kernel's byte for byte, on its no-split path (sm-parts=1) and
# on its default split-KV path with the combine kernel, and so must the log-sum-exp it returns
# (fp32, compared as values) (AMLA_QUICK: the smallest case only)
for d in tests/data/flashmla/*/; do
    [ -f "$d/q.npy" ] || continue
    case $d in *a4-b2*) ;; *) [ -n "$AMLA_QUICK" ] && continue ;; esac
    causal=""; [ -f "$d/causal" ] && causal="--causal"
    fmt=bf16; [ -f "$d/fp16" ] && fmt=fp16
    rm -rf "$T/fm"
    # shellcheck disable=SC2086
    # FlashMLA 9c5dfab's captures: its scheduler
    old=flashmla:flashmla-sched=9c5dfab
    $AH run --load "$d" --dv 512 $causal --in-format $fmt --out-format $fmt --variants $old,flashmla:sm-parts=1 \
        --dump "$T/fm" >/dev/null 2>"$T/err" || bad "flashmla on $d: $(cat "$T/err")"
    $A cast --to $fmt --in "$T/fm/flashmla:sm-parts=1.npy" --out "$T/fm.u2.npy" >/dev/null 2>&1
    cmp -s "$T/fm.u2.npy" "$d/out_nosplit.npy" && ok || bad "flashmla:sm-parts=1 on $d: not the H100's no-split bits"
    $A cast --to $fmt --in "$T/fm/$old.npy" --out "$T/fm.u2.npy" >/dev/null 2>&1
    cmp -s "$T/fm.u2.npy" "$d/out.npy" && ok || bad "$old on $d: not the H100's split-KV bits"
    for v in flashmla:sm-parts=1 $old; do
        want=lse; [ "$v" = $old ] || want=lse_nosplit
        $A compare "$T/fm/$v.lse.npy" "$d/$want.npy" >"$T/cmp" 2>&1
        awk '/^identical/ {exit !($2 == $4 && $2 > 0)}' "$T/cmp" && ok || bad "$v on $d: lse not the H100's ($(grep identical "$T/cmp"))"
    done
done
# FlashAttention-3 (tests/data/fa3: scripts/device/capture_fa3.py on an H100, its meta.json): check's default
# candidates name fa3 on every element and log-sum-exp row (a5 head dim 64 causal, a9 every key of a row equal,
# k8 a varlen decode of eight splits on one dominant key, m5 the q_v MLA decode: its args file gives --dv 512 and the scale;
# h3 head dim 256 causal, h5 an FP16 varlen decode: from a second build, taken after the model was written)
for d in tests/data/fa3/*/; do
    c=""; [ -f "$d/causal" ] && c=--causal
    f=bf16; [ -f "$d/fp16" ] && f=fp16
    # shellcheck disable=SC2046
    $AH check "$d" --in-format $f --out-format $f $c $(cat "$d/args" 2>/dev/null) --format json >"$T/f3.json" 2>"$T/err" ||
        bad "check $d: $(cat "$T/err")"
    python3 -c "
import json, sys
j = json.load(open(sys.argv[1])); r = j['ranking'][0]
assert r['variant'].split(':')[0] == 'fa3' and r['bit_identical'] == 1 and r['lse_bit_identical'] == 1, r
assert j['verdict'].endswith('fa3 is FlashAttention-3'), j['verdict']
" "$T/f3.json" && ok || bad "fa3 on $d: $(head -c 300 "$T/f3.json")"
done
# vLLM's FlashMLA fork's dense FP8 decode (tests/data/flashmla-dense-fp8: scripts/device/capture_flashmla_serving.py on an
# H100; e4m3 q and cache beside q_scale.npy and k_scale.npy): check's default candidates name flashmla-dense-fp8 on every
# element and log-sum-exp row (e1 four splits of one entry, e3 a causal two-token decode)
for d in tests/data/flashmla-dense-fp8/*/; do
    c=""; [ -f "$d/causal" ] && c=--causal
    # shellcheck disable=SC2046
    $AH check "$d" $c $(cat "$d/args") --format json >"$T/f8.json" 2>"$T/err" || bad "check $d: $(cat "$T/err")"
    python3 -c "
import json, sys
j = json.load(open(sys.argv[1])); r = j['ranking'][0]
assert r['variant'] == 'flashmla-dense-fp8' and r['bit_identical'] == 1 and r['lse_bit_identical'] == 1, r
" "$T/f8.json" && ok || bad "flashmla-dense-fp8 on $d: $(head -c 300 "$T/f8.json")"
done
# vLLM's Triton MLA decode (tests/data/triton-mla: scripts/device/capture_triton_mla.py on an H100): check's default
# candidates name the candidate in its expect file first, on every element and log-sum-exp row (t3: four splits of 1,
# 33 and 100 keys, two empty; e4m3 caches beside k_scale.npy, whose dots run in Triton's 8-bit orders: t5 e46a1de's
# file, u9 0155494's (P.V in TF32), m9 the is_mla call)
for d in tests/data/triton-mla/*/; do
    [ -f "$d/args" ] || continue
    # shellcheck disable=SC2046
    $AH check "$d" $(cat "$d/args") --format json >"$T/tm.json" 2>"$T/err" || bad "check $d: $(cat "$T/err")"
    python3 -c "
import json, sys
j = json.load(open(sys.argv[1])); r = j['ranking'][0]
assert r['variant'] == sys.argv[2] and r['bit_identical'] == 1 and r['lse_bit_identical'] == 1, r
" "$T/tm.json" "$(cat "$d/expect")" && ok || bad "triton-mla on $d: $(head -c 300 "$T/tm.json")"
done
# SGLang's Triton MLA decode (tests/data/triton-mla-sglang: scripts/device/capture_sglang_decode.py on an H200): check's
# default candidates name triton-mla:triton-decode=sglang on every element, and its kernel in the verdict (g3: bf16,
# static 8 splits; g6: an e4m3 cache, P.V in e4m3, get_num_kv_splits's splits)
for d in tests/data/triton-mla-sglang/*/; do
    [ -f "$d/args" ] || continue
    # shellcheck disable=SC2046
    $AH check "$d" $(cat "$d/args") --format json >"$T/sg.json" 2>"$T/err" || bad "check $d: $(cat "$T/err")"
    python3 -c "
import json, sys
j = json.load(open(sys.argv[1])); r = j['ranking'][0]
assert r['variant'].startswith('triton-mla:triton-decode=sglang') and r['bit_identical'] == 1, r
assert \"SGLang's Triton MLA decode kernel\" in j['verdict'], j['verdict']
" "$T/sg.json" && ok || bad "triton-mla (SGLang) on $d: $(head -c 300 "$T/sg.json")"
done
expect_err "--triton-decode names one of its four" run $SMALL --variants triton-mla --triton-decode sgl
# on an FP8 cache every form with all its sites exact is Golden (rel_fro at binary64's level), but e46a1de's without
# is_mla, whose V is the codes (its output 1 / k_scale times the attention: a kernel's choice, not a rounding)
for dec in vllm vllm-mla sglang vllm-e46a1de; do
    $A run --load tests/data/triton-mla/u9 --dv 512 --in-format fp16 --out-format fp16 --exact all --format csv \
        --variants "triton-mla:triton-decode=$dec" >"$T/ex.csv" 2>"$T/err" || bad "triton-mla $dec --exact all: $(cat "$T/err")"
    python3 -c "
import csv, sys
r = [x for x in csv.DictReader(open(sys.argv[1])) if x['variant'] != 'golden'][0]
e = float(r['rel_fro'])
assert (e > 10) if sys.argv[2] == 'vllm-e46a1de' else (e < 1e-12), (sys.argv[2], e)
" "$T/ex.csv" "$dec" && ok || bad "triton-mla $dec with every site exact on an FP8 cache: $(tail -c 300 "$T/ex.csv")"
done
# FP8 scale files: a scale that is not positive, or of a shape that is neither [1] nor [B, Hkv], is refused in one line
for bad_s in neg shape; do
    rm -rf "$T/s8" && cp -r tests/data/fa3/f4 "$T/s8"
    python3 - "$T/s8/q_descale.npy" $bad_s <<'PY'
import array, sys
sys.path.insert(0, 'scripts/checks')
from flashmla_case import write_npy
if sys.argv[2] == 'neg':
    write_npy(sys.argv[1], (1, 2), '<f4', array.array('f', [1.0, -2.0]))
else:
    write_npy(sys.argv[1], (3,), '<f4', array.array('f', [1.0, 1.0, 1.0]))
PY
    expect_err "q_descale.npy: $bad_s" check "$T/s8" --in-format e4m3 --out-format bf16
done
# FlashMLA 9241ae3's dense decode (tests/data/flashmla-9241ae3, scripts/device/capture_flashmla_serving.py on an H100):
# its scheduler (no payload floor: d1's 200 keys in four splits, 9c5dfab's one) and the same arithmetic; check
# names the default flashmla (today's scheduler) on every element and log-sum-exp row, and 9c5dfab's is not it
for d in tests/data/flashmla-9241ae3/*/; do
    fmt=bf16; [ -f "$d/fp16" ] && fmt=fp16
    $AH check "$d" --dv 512 --in-format $fmt --out-format $fmt --candidates flashmla,flashmla:flashmla-sched=9c5dfab \
        --format json >"$T/f9.json" 2>"$T/err" || bad "check $d: $(cat "$T/err")"
    python3 -c "
import json, sys
j = json.load(open(sys.argv[1])); r = j['ranking'][0]
assert r['variant'] == 'flashmla' and r['bit_identical'] == 1 and r['lse_bit_identical'] == 1, r
" "$T/f9.json" && ok || bad "flashmla (9241ae3's scheduler) on $d: $(head -c 300 "$T/f9.json")"
done
# kernel variants outside their kernel: a note in the CSV (kernel_note) and under the table;
# inside (MLA shapes in bf16) no note
$A run --ctx 64 --heads 2 --dk 64 --dv 32 --samples 1 --variants flashmla,fa2,base --format csv >"$T/kn.csv" 2>&1
expect_eq "kernel_note: flashmla, fa2 and base on dk 64 dv 32" \
    "FlashMLA runs dk 576 and dv 512 only (here 64 and 32)|PyTorch's flash backend takes one head dim for Q and K and V that is a multiple of 8 up to 256 (here 64 and 32)|" \
    "$(csvcol kernel_note <"$T/kn.csv" | tr '\n' '|' | sed 's/|$//')"
$A run --ctx 64 --heads 2 --samples 1 --variants flashmla-etap,flashmla --in-format fp32 >"$T/kn.txt" 2>&1
grep -q "^# flashmla-etap: not a case the real kernel runs: FlashMLA-ETAP takes bf16 or fp16 inputs only (here fp32); the row extrapolates its arithmetic$" "$T/kn.txt" && ok ||
    bad "kernel note under the table ($(cat "$T/kn.txt"))"
expect_eq "kernel_note empty on the kernel's own case" "|" \
    "$($A run --ctx 64 --heads 2 --samples 1 --variants flashmla,flashmla-etap --format csv | csvcol kernel_note | tr '\n' '|' | sed 's/|$//')"

# ---- flashmla-etap against the real FlashMLA-ETAP kernel: whole-batch captures of
# scripts/device/capture_etap.py (tests/data/etap/meta.json) as run --load reads them: the lab's outputs,
# cast to the capture's codes, must be the kernel's byte for byte on both paths, and so must its
# log-sum-exp (AMLA_QUICK: e5 only); check must name the kernel
# kernel_bits CAPTURE DUMP VARIANT FMT: the dumped outputs of VARIANT (the kernel's own split count) and of
# VARIANT:sm-parts=1, cast to FMT's codes, equal the capture's out.npy and out_nosplit.npy byte for byte, and
# their log-sum-exps lse.npy and lse_nosplit.npy on every row
kernel_bits() {
    for v in "$3:sm-parts=1" "$3"; do
        sfx=""; [ "$v" = "$3" ] || sfx=_nosplit
        $A cast --to "$4" --in "$2/$v.npy" --out "$2.codes.npy" >/dev/null 2>&1
        cmp -s "$2.codes.npy" "$1/out$sfx.npy" && ok || bad "$v on $1: not the GPU's out$sfx bits"
        $A compare "$2/$v.lse.npy" "$1/lse$sfx.npy" >"$T/cmp" 2>&1
        awk '/^identical/ {exit !($2 == $4 && $2 > 0)}' "$T/cmp" && ok || bad "$v on $1: lse not the GPU's ($(grep identical "$T/cmp"))"
    done
}
for d in tests/data/etap/*/; do
    case $d in *e5*) ;; *) [ -n "$AMLA_QUICK" ] && continue ;; esac
    causal=""; [ -f "$d/causal" ] && causal="--causal"
    fmt=bf16; [ -f "$d/fp16" ] && fmt=fp16
    rm -rf "$T/fe"
    # shellcheck disable=SC2086
    $AH run --load "$d" --dv 512 $causal --in-format $fmt --out-format $fmt \
        --variants flashmla-etap,flashmla-etap:sm-parts=1 --dump "$T/fe" >/dev/null 2>"$T/err" || bad "flashmla-etap on $d: $(cat "$T/err")"
    kernel_bits "$d" "$T/fe" flashmla-etap $fmt
done
# shellcheck disable=SC2086
$AH check tests/data/etap/e5 --causal >"$T/chk" 2>&1
grep -q '^verdict: bit-identical to flashmla-etap on 100.00%' "$T/chk" && ok || bad "check does not name flashmla-etap on tests/data/etap/e5: $(grep verdict "$T/chk")"
# ---- flashmla-sparse against FlashMLA's FP8 sparse decoding kernel (9241ae3, an H200): captures of
# scripts/device/capture_flashmla_fp8.py (tests/data/flashmla-sparse/meta.json: V32 and MODEL1 caches, invalid
# indices, top-k lengths, an entry with no valid key) as run --load reads them: O and the log-sum-exp byte
# for byte on both paths (AMLA_QUICK: v5 only); check names the kernel; damaged caches are refused
for d in tests/data/flashmla-sparse/*/; do
    case $d in *v5*) ;; *) [ -n "$AMLA_QUICK" ] && continue ;; esac
    rm -rf "$T/fs"
    $AH run --load "$d" --variants flashmla-sparse,flashmla-sparse:sm-parts=1 --dump "$T/fs" >/dev/null 2>"$T/err" ||
        bad "flashmla-sparse on $d: $(cat "$T/err")"
    kernel_bits "$d" "$T/fs" flashmla-sparse bf16
done
$AH check tests/data/flashmla-sparse/v5 >"$T/chk" 2>&1
grep -q '^verdict: bit-identical to flashmla-sparse on 100.00% of 131072 elements, and its log-sum-exp on every row' "$T/chk" && ok ||
    bad "check does not name flashmla-sparse on tests/data/flashmla-sparse/v5: $(grep -E 'verdict|error' "$T/chk")"
# FlashMLA 9241ae3 built without --use_fast_math (as vLLM's CMake builds it; tests/data/flashmla-ieee, an H200): its
# FP8 sparse decode on both paths and its dense decode (four splits and the combine; fp16) byte for byte with
# build=ieee, which the fast-math model is not; the sparse prefill's cases are tests/test_prefill.py's
for d in tests/data/flashmla-ieee/[vm]*/; do
    rm -rf "$T/fi"
    $AH run --load "$d" --variants flashmla-sparse:build=ieee,flashmla-sparse:build=ieee:sm-parts=1 --dump "$T/fi" \
        >/dev/null 2>"$T/err" || bad "flashmla-sparse:build=ieee on $d: $(cat "$T/err")"
    kernel_bits "$d" "$T/fi" flashmla-sparse:build=ieee bf16
done
for d in tests/data/flashmla-ieee/d*/; do
    fmt=bf16; [ -f "$d/fp16" ] && fmt=fp16
    $AH check "$d" --dv 512 --in-format $fmt --out-format $fmt --candidates flashmla,flashmla:build=ieee \
        --format json >"$T/fi.json" 2>"$T/err" || bad "check $d: $(cat "$T/err")"
    python3 -c "
import json, sys
j = json.load(open(sys.argv[1])); r = j['ranking']
assert r[0]['variant'] == 'flashmla:build=ieee' and r[0]['bit_identical'] == 1 and r[0]['lse_bit_identical'] == 1, r[0]
assert r[1]['lse_bit_identical'] < 1, r[1]
" "$T/fi.json" && ok || bad "flashmla:build=ieee on $d: $(head -c 300 "$T/fi.json")"
done
# damaged cases: an index past the cache, a V32 scale of 3 (no power of two), a token size that is no layout
npy_data() { echo $((10 + $(od -An -tu2 -j8 -N2 "$1"))); } # where a .npy file's data begins
rm -rf "$T/fsb" && cp -r tests/data/flashmla-sparse/v1 "$T/fsb" && rm -f "$T/fsb/k_bf16.npy"
cp "$T/fsb/indices.npy" "$T/idx.keep"
printf '\237\206\001\000' | dd of="$T/fsb/indices.npy" bs=1 seek="$(npy_data "$T/fsb/indices.npy")" conv=notrunc 2>/dev/null
$A run --load "$T/fsb" --variants flashmla-sparse --samples 1 >/dev/null 2>"$T/err"
expect_eq "index past the cache" "2 1" "$? $(wc -l <"$T/err")"
grep -q "indices.npy: index \[0, 0, 0\] = 99999 is past the cache's 256 tokens" "$T/err" && ok || bad "index past the cache: $(cat "$T/err")"
cp "$T/idx.keep" "$T/fsb/indices.npy"
t0=$(od -An -td4 -j"$(npy_data "$T/fsb/indices.npy")" -N4 "$T/fsb/indices.npy" | tr -d ' ')
printf '\000\000\100\100' | dd of="$T/fsb/kcache.npy" bs=1 seek=$(($(npy_data "$T/fsb/kcache.npy") + t0 * 656 + 512)) conv=notrunc 2>/dev/null
$A check "$T/fsb" >/dev/null 2>"$T/err"
expect_eq "scale of 3" "2 1" "$? $(wc -l <"$T/err")"
grep -q "kcache.npy: token $t0 (index \[0, 0, 0\]): scale 0 is 3: not a positive finite power of two" "$T/err" && ok || bad "scale of 3: $(cat "$T/err")"
h="{'descr': '|u1', 'fortran_order': False, 'shape': (1, 64, 1, 600), }"
pad=$((63 - (10 + ${#h}) % 64))
{ printf '\223NUMPY\001\000'; printf "\\$(printf %03o $((${#h} + pad + 1)))\\000"; printf '%s%*s\n' "$h" "$pad" ""; head -c 38400 /dev/zero; } >"$T/fsb/kcache.npy"
$A run --load "$T/fsb" --variants flashmla-sparse --samples 1 >/dev/null 2>"$T/err"
expect_eq "no layout" "2 1" "$? $(wc -l <"$T/err")"
grep -q "kcache.npy: 600 bytes a token is no FP8 cache layout (V32: 656, MODEL1: 584)" "$T/err" && ok || bad "no layout: $(cat "$T/err")"
printf '\223NUMPY\001\000v\000%-117s\n' "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 1, 0), }" >"$T/fsb/indices.npy"
$A run --load "$T/fsb" --variants flashmla-sparse --samples 1 >/dev/null 2>"$T/err"
expect_eq "empty top-k" "2 1" "$? $(wc -l <"$T/err")"
grep -q "indices.npy: empty dimension in shape \[1, 1, 0\]" "$T/err" && ok || bad "empty top-k: $(cat "$T/err")"
# a generated run goes through the cache's quantizer: outside the kernel's shapes it is marked
$A run --ctx 100 --heads 64 --samples 1 --variants flashmla-sparse --format csv >"$T/fsg.csv" 2>"$T/err" && ok || bad "flashmla-sparse generated: $(cat "$T/err")"
expect_eq "generated flashmla-sparse in its envelope" "" "$(csvcol kernel_note <"$T/fsg.csv" | tail -n 1)"
$A run --ctx 100 --heads 16 --samples 1 --variants flashmla-sparse --format csv >"$T/fsg.csv" 2>/dev/null
csvcol kernel_note <"$T/fsg.csv" | tail -n 1 | grep -q "64 or 128 query heads" && ok || bad "flashmla-sparse on 16 heads not marked"
# ---- cuBLAS split-K (scripts/device/capture_splitk.py; tests/data/gpu/splitk-meta.json): 8 x 8 corners of two GEMMs
# cuBLAS split (bf16 K 16384 in 6, fp16 K 4096 in 3): --split-k gives the GPU's float32 C bit for bit, the
# plain tc-hopper chain does not, and --split-k search names the count
for c in bf16-256-k16384:6 fp16-256-k4096:3; do
    n=${c%:*} s=${c#*:} f=${n%%-*} g=tests/data/gpu/splitk-$n
    $A matmul "$g.a.npy" "$g.b.npy" --in-format "$f" --acc tc-hopper --split-k "$s" -o "$T/sk.npy" >/dev/null 2>&1
    expect_eq "split-k $s on $n" "64 of 64" "$($A compare "$T/sk.npy" "$g.c.npy" | awk '/^identical/ {print $2, $3, $4}')"
    $A matmul "$g.a.npy" "$g.b.npy" --in-format "$f" --acc tc-hopper -o "$T/sk.npy" >/dev/null 2>&1
    $A compare "$T/sk.npy" "$g.c.npy" | awk '/^identical/ {exit !($2 < $4)}' && ok || bad "unsplit tc-hopper matches the split $n"
    expect_eq "split-k search on $n" "split-k $s: 64 of 64 elements bit-identical to $g.c.npy" \
        "$($A matmul "$g.a.npy" "$g.b.npy" --in-format "$f" --acc tc-hopper --split-k search --ref "$g.c.npy" -o "$T/sk.npy")"
done
g=tests/data/gpu/splitk-e4m3-128-k8192 # FP8 with fast accumulation: K tiles of 128 e4m3, 3 splits
expect_eq "split-k search on e4m3 fast" "split-k 3: 64 of 64 elements bit-identical to $g.cfast.npy" \
    "$($A matmul "$g.a.npy" "$g.b.npy" --in-format e4m3 --acc tc-hopper-fp8-fast --split-k search --ref "$g.cfast.npy" -o "$T/sk.npy")"
$A matmul tests/data/gpu/splitk-fp16-256-k4096.a.npy tests/data/gpu/splitk-fp16-256-k4096.b.npy --split-k 0 -o "$T/sk.npy" 2>"$T/err"
expect_eq "split-k 0" "2 1" "$? $(wc -l <"$T/err")"
$A matmul tests/data/gpu/splitk-fp16-256-k4096.a.npy tests/data/gpu/splitk-fp16-256-k4096.b.npy --split-k search -o "$T/sk.npy" 2>"$T/err"
expect_eq "split-k search without --ref" "2 1" "$? $(wc -l <"$T/err")"
$A matmul tests/data/gpu/splitk-fp16-256-k4096.a.npy tests/data/gpu/splitk-fp16-256-k4096.b.npy --split-k search \
    --ref tests/data/gpu/splitk-fp16-256-k4096.a.npy -o "$T/sk.npy" 2>"$T/err"
expect_eq "split-k --ref of codes" "2 1" "$? $(wc -l <"$T/err")"
grep -q "integers or codes, but --ref is the GPU's float32 C" "$T/err" && ok || bad "split-k --ref of codes: $(cat "$T/err")"
# scripts/checks/ulp_dist.py (results/flashmla-check.md's ulp column) by hand: 1 against 1 + 3 ulp of
# fp32 and -0 against +0 (0 ulp): 3; the smallest bf16 subnormals 2^-133 of either sign: 2
python3 - "$T" <<'PY'
import array, sys
sys.path.insert(0, 'scripts/checks')
from flashmla_case import write_npy
write_npy(sys.argv[1] + '/ua.npy', (2,), '<f4', array.array('f', [1.0, -0.0]))
write_npy(sys.argv[1] + '/ub.npy', (2,), '<f8', array.array('d', [1.0 + 3 * 2.0 ** -23, 0.0]))
write_npy(sys.argv[1] + '/uc.npy', (1,), '<f4', array.array('f', [2.0 ** -133]))
write_npy(sys.argv[1] + '/ud.npy', (1,), '<f8', array.array('d', [-(2.0 ** -133)]))
PY
expect_eq "ulp_dist fp32" "3" "$(python3 scripts/checks/ulp_dist.py "$T/ua.npy" "$T/ub.npy" fp32)"
expect_eq "ulp_dist bf16 across zero" "2" "$(python3 scripts/checks/ulp_dist.py "$T/uc.npy" "$T/ud.npy" bf16)"
# a Fortran-order .npy (what numpy saves of a transposed view, e.g. FlashMLA's lse for s_q > 1)
# is read in C order: [2, 3] = [[1, 2, 3], [4, 5, 6]] stored column by column against the C file
python3 - "$T" <<'PY'
import array, sys
sys.path.insert(0, 'scripts/checks')
from flashmla_case import write_npy
write_npy(sys.argv[1] + '/c23.npy', (2, 3), '<f4', array.array('f', [1, 2, 3, 4, 5, 6]))
write_npy(sys.argv[1] + '/f23.npy', (2, 3), '<f4', array.array('f', [1, 4, 2, 5, 3, 6]))
with open(sys.argv[1] + '/f23.npy', 'r+b') as f:
    b = f.read().replace(b"'fortran_order': False", b"'fortran_order': True ")
    f.seek(0); f.write(b)
PY
$A compare "$T/f23.npy" "$T/c23.npy" >"$T/cmp" 2>&1
awk '/^identical/ {exit !($2 == 6)}' "$T/cmp" && ok || bad "a Fortran-order .npy is not read in C order: $(cat "$T/cmp")"
expect_eq "ulp_dist reads Fortran order" "0" "$(python3 scripts/checks/ulp_dist.py "$T/f23.npy" "$T/c23.npy" fp32)"
rm -rf "$T/fm"
$A run $SMALL --variants base,flashmla --dump "$T/fm" >/dev/null 2>&1
[ -f "$T/fm/golden.lse.npy" ] && [ -f "$T/fm/flashmla.lse.npy" ] && [ ! -e "$T/fm/base.lse.npy" ] && ok ||
    bad "--dump: NAME.lse.npy for Golden and flashmla, none for base (no model of it)"
# --dump writes flashmla's scheduler metadata (FlashMLA 9c5dfab's, as in the captures: its --flashmla-sched):
# a4's entry 2 alone (129 keys, 66 parts): part 0
# takes the whole entry [0, 0, 0, 129, 0], the other 65 are idle [1, 0, 0, 129, 0] (begin_idx = b,
# as get_mla_metadata leaves them: t-flashmla's a1), num_splits [0, 1]
rm -rf "$T/fm"
$A run --load tests/data/flashmla/a4-b2 --dv 512 --variants flashmla:flashmla-sched=9c5dfab --dump "$T/fm" >/dev/null 2>&1
python3 - "$T/fm" <<'PY' && ok || bad "--dump: flashmla's scheduler metadata"
import array, sys
sys.path.insert(0, 'scripts/checks')
from flashmla_case import read_npy
def load(p):
    h, d = read_npy(open(p, 'rb').read()); a = array.array('d'); a.frombytes(d); return h['shape'], [int(x) for x in a]
sm, m = load(sys.argv[1] + '/flashmla:flashmla-sched=9c5dfab.tile_scheduler_metadata.npy')
sn, n = load(sys.argv[1] + '/flashmla:flashmla-sched=9c5dfab.num_splits.npy')
assert sm == (66, 1, 5) and m[:5] == [0, 0, 0, 129, 0] and m[5:] == [1, 0, 0, 129, 0] * 65, (sm, m[:10])
assert n == [0, 1], n
PY
expect_err "uint16 codes of the wrong width" run --load tests/data/flashmla/a4-b2 --dv 512 --in-format e4m3
expect_err "compare: bit patterns without --in-format" compare tests/data/flashmla/a4-b2/out.npy tests/data/flashmla/a4-b2/out.npy
expect_err "compare: bf16 patterns as e4m3" compare tests/data/flashmla/a4-b2/out.npy tests/data/flashmla/a4-b2/out.npy --in-format e4m3
# the batch in FlashMLA's own layout (--load with seqlens.npy): a3 (1000 keys) and a4's entry 2
# (129 keys) as one batch, q [2, 1, 128, 576], k [2, 1000, 576] with entry 1's rows past its 129
# keys NaN (they must be ignored); on the no-split path every entry is its own, so the dump
# [2, 1, 128, 512] must be the two captured no-split outputs one after the other
python3 - "$T/bt" tests/data/flashmla <<'PY'
import array, os, sys
sys.path.insert(0, 'scripts/checks')
from flashmla_case import read_npy, write_npy
out, src = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
def load(case, name):
    a = array.array('H'); a.frombytes(read_npy(open(os.path.join(src, case, name + '.npy'), 'rb').read())[1]); return a
q = load('a3', 'q') + load('a4-b2', 'q')
k2 = load('a4-b2', 'k')
k = load('a3', 'k') + k2 + array.array('H', [0x7fc0]) * (1000 * 576 - len(k2))
write_npy(out + '/q.npy', (2, 1, 128, 576), '<u2', q)
write_npy(out + '/k.npy', (2, 1000, 576), '<u2', k)
write_npy(out + '/seqlens.npy', (2,), '<i4', array.array('i', [1000, 129]))
write_npy(out + '/want.npy', (2, 1, 128, 512), '<u2', load('a3', 'out_nosplit') + load('a4-b2', 'out_nosplit'))
PY
rm -rf "$T/fm"
$AH run --load "$T/bt" --variants flashmla:sm-parts=1 --dump "$T/fm" --format csv >"$T/bt.csv" 2>"$T/err" || bad "batched --load: $(cat "$T/err")"
$A compare "$T/fm/flashmla:sm-parts=1.npy" "$T/bt/want.npy" --in-format bf16 >"$T/cmp" 2>&1
awk '/^identical/ {exit !($2 == $4 && $4 == 131072)}' "$T/cmp" && ok || bad "batched --load: not the H100's no-split bits ($(grep identical "$T/cmp"))"
expect_eq "batched dump: layouts" "$(printf 'golden.lse.npy (2, 128, 1)\nk.npy (2, 1000, 1, 576)\nq.npy (2, 1, 128, 576)\nseqlens.npy (2,)')" \
    "$(cd "$T/fm" && for f in golden.lse.npy k.npy q.npy seqlens.npy; do printf '%s %s\n' "$f" "$(head -c 128 "$f" | tr -d '\000' | LC_ALL=C sed -n "s/.*'shape': \(([^)]*)\).*/\1/p")"; done)"
# the dump reloads as the same batch (rows past seqlens zero now): the same output
$AH run --load "$T/fm" --variants flashmla:sm-parts=1 --format csv >"$T/bt2.csv" 2>"$T/err" || bad "reloading a batched dump: $(cat "$T/err")"
expect_eq "batched dump reloads" "$(csvcol rel_fro <"$T/bt.csv") $(csvcol lse_max_abs <"$T/bt.csv")" \
    "$(csvcol rel_fro <"$T/bt2.csv") $(csvcol lse_max_abs <"$T/bt2.csv")"
cp "$T/bt/q.npy" "$T/bt/k.npy" "$T/bt/seqlens.npy" "$T/fm/" 2>/dev/null
python3 - "$T/bt" <<'PY'
import array, sys
sys.path.insert(0, 'scripts/checks')
from flashmla_case import write_npy
write_npy(sys.argv[1] + '/sl0.npy', (2,), '<i4', array.array('i', [1000, 1001]))
write_npy(sys.argv[1] + '/slf.npy', (2,), '<f4', array.array('f', [1000, 129]))
write_npy(sys.argv[1] + '/sl3.npy', (3,), '<i4', array.array('i', [1000, 129, 5]))
PY
for bad_sl in sl0 slf sl3; do
    mkdir -p "$T/b_$bad_sl" && cp "$T/bt/q.npy" "$T/bt/k.npy" "$T/b_$bad_sl/" && cp "$T/bt/$bad_sl.npy" "$T/b_$bad_sl/seqlens.npy"
    expect_err "batched --load: bad seqlens ($bad_sl)" run --load "$T/b_$bad_sl" --variants base
done
grep -q "seqlens\[1\] = 1001" "$T/err" 2>/dev/null || $A run --load "$T/b_sl0" 2>&1 | grep -q "seqlens\[1\] = 1001 is not 0 to k.npy's 1000" && ok || bad "batched --load: the seqlens message"
# an entry of no key (seqlens 0) runs: each kernel's convention for it (FlashMLA O 0 and lse +inf, FlashAttention-3
# 0 and -inf, vLLM's Triton decode 0/0 = NaN and -inf), the other entries as without it (fa3: no batch-wide split)
mkdir -p "$T/z0" "$T/z1" && cp tests/data/triton-mla/t3/q.npy tests/data/triton-mla/t3/k.npy "$T/z0/" && cp tests/data/triton-mla/t3/q.npy tests/data/triton-mla/t3/k.npy "$T/z1/"
python3 - "$T" <<'PY'
import array, sys
sys.path.insert(0, 'scripts/checks')
from flashmla_case import write_npy
write_npy(sys.argv[1] + '/z0/seqlens.npy', (3,), '<i4', array.array('i', [0, 33, 100]))
write_npy(sys.argv[1] + '/z1/seqlens.npy', (3,), '<i4', array.array('i', [1, 33, 100]))
PY
for z in z0 z1; do
    $A run --load "$T/$z" --dv 512 --variants flashmla,fa3:sm-parts=1,triton-mla --dump "$T/${z}d" >/dev/null 2>"$T/err" || bad "run --load with an empty entry: $(cat "$T/err")"
done
python3 - "$T" <<'PY' && ok || bad "an entry of no key: conventions or the other entries"
import array, math, sys
sys.path.insert(0, 'scripts/checks')
from flashmla_case import read_npy
t = sys.argv[1]
def arr(z, n):
    h, raw = read_npy(open('%s/%sd/%s.npy' % (t, z, n), 'rb').read())
    assert h['descr'] == '<f8', h
    return h['shape'], list(array.array('d', raw))
for n, ov, lv in (('golden', 0.0, math.inf), ('flashmla', 0.0, math.inf), ('fa3:sm-parts=1', 0.0, -math.inf),
                  ('triton-mla', math.nan, -math.inf)):
    (shape, o), (_, l) = arr('z0', n), arr('z0', n + '.lse')
    per, nl = len(o) // shape[0], len(l) // shape[0]
    assert all(x == ov or (x != x and ov != ov) for x in o[:per]), (n, o[:3])
    assert all(x == lv for x in l[:nl]), (n, l[:3])
    if n != 'flashmla':  # FlashMLA's scheduler counts the empty entry a block: its splits move
        assert o[per:] == arr('z1', n)[1][per:], n
PY
cp "$T/bt/k.npy" "$T/b_sl0/q.npy"
expect_err "batched --load: q.npy not [B, Sq, Hq, Dk]" run --load "$T/b_sl0" --variants base
# the whole batch of a shared capture with 4 entries, when ../shared is there: every entry's
# splits come from the scheduler of the whole batch
if [ -f ../shared/captures/flashmla/a4.npz ] && [ -z "$AMLA_QUICK" ]; then
    python3 -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" ../shared/captures/flashmla/a4.npz "$T/a4"
    rm -rf "$T/fm"
    $A run --load "$T/a4" --variants flashmla:flashmla-sched=9c5dfab,flashmla:sm-parts=1 --dump "$T/fm" >/dev/null 2>"$T/err" || bad "a4 batched: $(cat "$T/err")"
    for pair in "flashmla:flashmla-sched=9c5dfab out lse" "flashmla:sm-parts=1 out_nosplit lse_nosplit"; do
        # shellcheck disable=SC2086
        set -- $pair
        $A compare "$T/fm/$1.npy" "$T/a4/$2.npy" --in-format bf16 | awk '/^identical/ {exit !($2 == $4 && $4 == 262144)}' && ok || bad "a4 batched $1: not the H100's bits"
        $A compare "$T/fm/$1.lse.npy" "$T/a4/$3.npy" | awk '/^identical/ {exit !($2 == $4 && $4 == 512)}' && ok || bad "a4 batched $1: lse not the H100's"
    done
    rm -rf "$T/a4"
fi
# ---- fa2 against PyTorch's SDPA flash backend on an H100 (scripts/device/capture_fa2.py; two of its
# cases, and the FA-shape capture under tests/data/gpu): every output element and every
# log-sum-exp row bit-identical, and check ranks fa2 first. mma.sync
# m16n8k16 (scripts/device/mma_probe.cu) is the tc-hopper model, bit for bit, on one tile of each kind
for b in tests/data/gpu/mma/*.a.npy; do
    b=${b%.a.npy}; dt=$(basename "$b" | cut -d- -f2)
    $A matmul "$b.a.npy" "$b.b.npy" --in-format "$dt" --acc tc-hopper -o "$T/mma.npy" >/dev/null 2>&1
    $A compare "$T/mma.npy" "$b.c.npy" | awk '/^identical/ {exit !($2 == $4 && $4 == 128)}' && ok || bad "mma.sync probe $(basename "$b"): not tc-hopper's bits"
done
for d in tests/data/fa2/*/; do
    [ -n "$AMLA_QUICK" ] && case $d in *h128*) continue ;; esac
    dt=fp16; case $d in *bf16*) dt=bf16 ;; esac
    c=""; [ -f "$d/causal" ] && c=--causal
    # shellcheck disable=SC2086
    $AH check "$d" --in-format $dt --out-format $dt $c --candidates fa2,base,fa2:sm-parts=1 --format json >"$T/fa2.json" 2>"$T/err" || bad "check fa2 $d: $(cat "$T/err")"
    python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))['ranking'][0]
assert r['variant'] == 'fa2' and r['bit_identical'] == 1 and r['lse_bit_identical'] == 1, r
" "$T/fa2.json" && ok || bad "fa2 on $d: not first with every bit ($(head -c 300 "$T/fa2.json"))"
done
mkdir -p "$T/fa"
for x in q k v; do cp tests/data/gpu/attn.$x.npy "$T/fa/$x.npy"; done
cp tests/data/gpu/attn.flash.npy "$T/fa/out.npy"
if [ -z "$AMLA_QUICK" ]; then
    $A check "$T/fa" --in-format fp16 --out-format fp16 --candidates fa2,fa2:sm-parts=1 | grep -q "^verdict: bit-identical to fa2 on 100.00% of 131072 elements" && ok || bad "fa2 on tests/data/gpu's FA capture"
fi
# ---- PyTorch's other SDPA backends (tests/data/sdpa, scripts/checks/sdpa_sample.py from H200 captures of
# scripts/device/capture_sdpa.py and capture_sdpa_probe.py; meta.json): check's default candidates name the model
# of each with every output element (sdpa-math with cuBLAS's split-K count where it searched one), and the
# memory-efficient and cuDNN kernels' log-sum-exp on every row (cudnn-o250: scripts/device/probe_cudnn_stats.py's
# designed rows, which pin the order of cuDNN's row sums across two key blocks). The H100 FA-shape
# capture under tests/data/gpu: sdpa-math and sdpa-efficient bit for bit on a GPU they were not written from
for d in tests/data/sdpa/*/; do
    n=$(basename "$d"); dt=fp16; [ -f "$d/bf16" ] && dt=bf16
    c=""; [ -f "$d/causal" ] && c=--causal=top-left # PyTorch's is_causal (*-c*: fewer or more queries than keys)
    want=sdpa-${n%%-*}; cands=""
    if [ -n "$AMLA_QUICK" ]; then # under valgrind: two of them, three candidates
        case $n in efficient-s4 | math-r2) cands="--candidates $want,fa2,sdpa-math:split-k=5i" ;; *) continue ;; esac
    fi
    # shellcheck disable=SC2086
    $AH check "$d" --in-format $dt --out-format $dt $c $cands --format json >"$T/sdpa.json" 2>"$T/err" || bad "check $d: $(cat "$T/err")"
    python3 -c "
import json, sys
j = json.load(open(sys.argv[1])); r = j['ranking'][0]; want = sys.argv[2]
assert r['variant'].split(':')[0] == want and r['bit_identical'] == 1, r
assert r['lse_bit_identical'] is None or r['lse_bit_identical'] == 1, r
assert j['verdict'].endswith('; %s is PyTorch SDPA\'s %s backend' % (want, {'sdpa-math': 'math', 'sdpa-efficient': 'memory-efficient', 'sdpa-cudnn': 'cuDNN'}[want])), j['verdict']
" "$T/sdpa.json" "$want" && ok || bad "$want on $d: not named with every bit ($(head -c 400 "$T/sdpa.json"))"
done
for b in math efficient; do
    [ -n "$AMLA_QUICK" ] && break
    cp tests/data/gpu/attn.$b.npy "$T/fa/out.npy"
    $A check "$T/fa" --in-format fp16 --out-format fp16 --candidates sdpa-$b,fa2 | grep -q "^verdict: bit-identical to sdpa-$b on 100.00% of 131072 elements" && ok || bad "sdpa-$b on tests/data/gpu's FA-shape capture (H100)"
done
# causal alignment: PyTorch's is_causal on fewer queries than keys is top-left; FlashAttention's --causal
# (bottom-right) computes another attention there, and refuses more queries than keys
$A check tests/data/sdpa/efficient-c1 --in-format fp16 --out-format fp16 --causal --candidates sdpa-efficient \
    | grep -q "^verdict: bit-identical to sdpa-efficient on 100.00%" && bad "efficient-c1 matched with a bottom-right mask" || ok
expect_err "--causal (bottom-right) with more queries than keys" check tests/data/sdpa/math-c2 --in-format bf16 --out-format bf16 --causal
expect_err "--causal=sideways" run --causal=sideways --samples 1
$A run --sq 100 --ctx 50 --causal=top-left --dk 64 --dv 64 --heads 2 --kv separate --variants fa2,sdpa-math --samples 1 --format csv \
    >"$T/tl.csv" 2>"$T/err" || bad "run --causal=top-left: $(cat "$T/err")"
[ "$(csvcol causal <"$T/tl.csv" | sort -u)" = top-left ] && grep -q "refuses is_causal[^,]*,0,fa2," "$T/tl.csv" && ok \
    || bad "top-left: the CSV's causal column and fa2's kernel_note ($(head -c 300 "$T/tl.csv"))"
expect_err "--split-k 0" run --split-k 0 --samples 1
expect_err "--split-k 8x" run --split-k 8x --samples 1
# ---- check: a kernel's output against every candidate emulation. a3's capture as it is (inputs,
# the H100's default-path output and lse in the --load layout): flashmla ranks first, every bit
# (AMLA_QUICK, under valgrind: three candidates, not every default one)
cands=""; [ -n "$AMLA_QUICK" ] && cands="--candidates base,flashmla:sm-parts=1,flashmla:flashmla-sched=9c5dfab"
# shellcheck disable=SC2086
$AH check tests/data/flashmla/a3 --format json $cands >"$T/ck.json" 2>"$T/err" || bad "check a3: $(cat "$T/err")"
AMLA_QUICK="$AMLA_QUICK" python3 - "$T/ck.json" <<'PY' && ok || bad "check a3: flashmla not first with every bit ($(head -c 300 "$T/ck.json"))"
import json, os, sys
j = json.load(open(sys.argv[1]))
best = j['ranking'][0]
assert best['variant'] == 'flashmla:flashmla-sched=9c5dfab' and best['bit_identical'] == 1 and best['lse_bit_identical'] == 1, best
assert j['verdict'].startswith('bit-identical to flashmla:flashmla-sched=9c5dfab on 100.00% of 65536 elements'), j['verdict']
assert (os.environ.get('AMLA_QUICK') or len(j['ranking']) >= 10) and all(0 <= r['bit_identical'] < 1 for r in j['ranking'][1:] if not r['variant'].startswith('flashmla:sm-parts=') or r['variant'] == 'flashmla:sm-parts=1')
assert j['kernel']['rel_fro'] > 0 and j['kernel']['lse_max_abs'] < 1e-5
PY
# a deliberately broken kernel: head 5's output computed with the keys rotated by one 64-key
# block (the lab's flashmla on the rotated cache); check must point at head 5 alone
python3 - "$T" tests/data/flashmla/a3 <<'PY'
import array, os, shutil, sys
sys.path.insert(0, 'scripts/checks')
from flashmla_case import read_npy, write_npy
t, src = sys.argv[1], sys.argv[2]
h, d = read_npy(open(src + '/k.npy', 'rb').read())
k = array.array('H'); k.frombytes(d)
dk = h['shape'][2]
os.makedirs(t + '/roll', exist_ok=True); os.makedirs(t + '/broken', exist_ok=True)
write_npy(t + '/roll/k.npy', h['shape'], '<u2', k[64 * dk:] + k[:64 * dk])
for f in ('q', 'k'):
    shutil.copy('%s/%s.npy' % (src, f), '%s/broken/%s.npy' % (t, f))
shutil.copy(src + '/q.npy', t + '/roll/q.npy')
PY
$AH run --load "$T/roll" --dv 512 --variants flashmla:flashmla-sched=9c5dfab --dump "$T/roll/o" >/dev/null 2>&1
$A cast --to bf16 --in "$T/roll/o/flashmla:flashmla-sched=9c5dfab.npy" --out "$T/roll/codes.npy" >/dev/null 2>&1
python3 - "$T" tests/data/flashmla/a3 <<'PY'
import array, sys
sys.path.insert(0, 'scripts/checks')
from flashmla_case import read_npy, write_npy
t, src = sys.argv[1], sys.argv[2]
h, d = read_npy(open(src + '/out.npy', 'rb').read())
out = array.array('H'); out.frombytes(d)
r = array.array('H'); r.frombytes(read_npy(open(t + '/roll/codes.npy', 'rb').read())[1])
out[5 * 512:6 * 512] = r[5 * 512:6 * 512]
write_npy(t + '/broken/out.npy', h['shape'], '<u2', out)
PY
cands=flashmla:flashmla-sched=9c5dfab,flashmla:sm-parts=1,base; [ -n "$AMLA_QUICK" ] && cands=flashmla:flashmla-sched=9c5dfab,base
$AH check "$T/broken" --candidates $cands >"$T/ck" 2>"$T/err" || bad "check broken: $(cat "$T/err")"
grep -q "^verdict: no candidate reproduces the kernel's bits: closest is flashmla:flashmla-sched=9c5dfab, bit-identical on 99" "$T/ck" && ok || bad "check broken: verdict ($(grep verdict "$T/ck"))"
grep -q "^  heads         5 ([0-9]* of 512)$" "$T/ck" && ok || bad "check broken: head 5 not named ($(cat "$T/ck"))"
# bad input: out.npy of the wrong shape (both shapes named), values off the format, int32, no DIR
cp "$T/broken/q.npy" "$T/broken/out.npy"
expect_err "check: out.npy of the wrong shape" check "$T/broken" --dv 512
grep -q "shape \[128, 1, 576\], but the inputs give \[128, 1, 512\]" "$T/err" && ok || bad "check: both shapes ($(cat "$T/err"))"
python3 - "$T/broken" <<'PY'
import array, sys
sys.path.insert(0, 'scripts/checks')
from flashmla_case import write_npy
write_npy(sys.argv[1] + '/out.npy', (128, 1, 512), '<f4', array.array('f', [float('nan')] * 3 + [0.5] * 1021 + [float('inf')] + [0.5] * 64511))
PY
# a kernel that turns finite inputs into NaN or infinity is reported, exit 0: how many, where, and
# which candidates are finite there (head 0 token 0 columns 0-2 NaN, head 2 column 0 infinite)
$A check "$T/broken" --candidates base >"$T/ck" 2>"$T/err" && ok || bad "check: NaN in out.npy refused: $(cat "$T/err")"
grep -q "^kernel output: 4 non-finite of 65536 (NaN 3, infinite 1)$" "$T/ck" && ok || bad "check: NaN count ($(cat "$T/ck"))"
grep -q "^  heads         0 (3 of 512), 2 (1 of 512)$" "$T/ck" && ok || bad "check: NaN heads ($(grep heads "$T/ck"))"
grep -q "^  finite there: base (1 of 1 candidates)$" "$T/ck" && ok || bad "check: finite candidates ($(grep finite "$T/ck"))"
grep -q "^verdict: .*the kernel's output has 4 non-finite values (NaN 3, infinite 1) where every candidate is finite$" "$T/ck" && ok ||
    bad "check: NaN verdict ($(grep verdict "$T/ck"))"
python3 - "$T/broken" <<'PY'
import array, sys
sys.path.insert(0, 'scripts/checks')
from flashmla_case import write_npy
write_npy(sys.argv[1] + '/out.npy', (128, 1, 512), '<i4', array.array('i', [1] * 65536))
PY
expect_err "check: int32 out.npy" check "$T/broken"
grep -q "out.npy: 4-byte signed integers are neither float values nor bf16 codes (uint16)" "$T/err" && ok || bad "check: int32 message ($(cat "$T/err"))"
python3 - "$T/broken" <<'PY'
import array, sys
sys.path.insert(0, 'scripts/checks')
from flashmla_case import write_npy
write_npy(sys.argv[1] + '/out.npy', (128, 1, 512), '<f4', array.array('f', [0.1] * 65536))
PY
expect_err "check: fp32 values as bf16 output" check "$T/broken"
grep -q "not a bf16 value" "$T/err" && ok || bad "check: off-format message ($(cat "$T/err"))"
expect_err "check: no DIR" check --candidates base
expect_err "check: unknown candidate" check tests/data/flashmla/a3 --candidates base,nosuch
expect_err "check: --variants" check tests/data/flashmla/a3 --variants base
expect_err "check: --format csv" check tests/data/flashmla/a3 --format csv
expect_err "check: --candidates empty" check tests/data/flashmla/a3 --candidates ""
mkdir -p "$T/badlse" && cp tests/data/flashmla/a4-b2/q.npy tests/data/flashmla/a4-b2/k.npy tests/data/flashmla/a4-b2/out.npy "$T/badlse/"
cp tests/data/flashmla/a4-b2/out.npy "$T/badlse/lse.npy"
expect_err "check: lse.npy of the wrong shape" check "$T/badlse" --candidates base
grep -q "lse.npy: bit patterns (uint8/uint16), but the log-sum-exp is float values (natural log)" "$T/err" && ok || bad "check: lse message ($(cat "$T/err"))"
python3 - "$T/badlse" <<'PY'
import array, sys
sys.path.insert(0, 'scripts/checks')
from flashmla_case import write_npy
write_npy(sys.argv[1] + '/lse.npy', (128, 1), '<f4', array.array('f', [float('nan')] + [1.0] * 127))
PY
$A check "$T/badlse" --candidates base >/dev/null 2>"$T/err" && ok || bad "check: NaN in lse.npy refused: $(cat "$T/err")"
# a1's per-split arrays, when ../shared is there: the split kernel's outputs (each split's O and
# log2-domain LSE) apart from the combine kernel's
if [ -f ../shared/captures/flashmla/a1.npz ] && [ -z "$AMLA_QUICK" ]; then
    python3 -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" ../shared/captures/flashmla/a1.npz "$T/a1"
    rm -rf "$T/fm"
    $A run --load "$T/a1" --variants flashmla:flashmla-sched=9c5dfab --dump "$T/fm" >/dev/null 2>"$T/err" || bad "a1 batched: $(cat "$T/err")"
    for x in oaccum lse_accum; do
        $A compare "$T/fm/flashmla:flashmla-sched=9c5dfab.$x.npy" "$T/a1/$x.npy" | awk '/^identical/ {exit !($2 == $4 && $4 > 0)}' && ok || bad "a1 $x: not the H100's per-split bits"
    done
    rm -rf "$T/a1"
fi

# ---- bad input: each one line, exit 2, no result file
expect_err "no command"
expect_err "unknown command" frobnicate
expect_err "unknown option" run --frobnicate 3
expect_err "missing value" run --samples
expect_err "non-numeric" run --samples abc
expect_err "trailing junk" run --ctx 12x
expect_err "nan sigma" run --sigma nan
expect_err "inf mean" run --mean inf
expect_err "negative sigma" run --sigma -1
expect_err "zero ctx" run --ctx 0
expect_err "negative heads" run --heads -4
expect_err "zero samples" run --samples 0
expect_err "huge size" run --ctx 99999999999 --dk 99999999
expect_err "over memory" run --ctx 100000000 --samples 1
expect_err "integer overflow" run --ctx 99999999999999999999999
expect_err "low >= high" run --dist uniform --low 1 --high 1
expect_err "unknown format" run --in-format fp12
expect_err "unknown out format" run --out-format e3m4
expect_err "unknown variant" run --variants base,warp
expect_err "unknown dist" run --dist cauchy
expect_err "bad --kv" run --kv both
expect_err "bad --format" run --format xml
expect_err "bad acc" run --acc fp8
expect_err "unknown site" run --exact p_cast,warp
expect_err "bad amla form" run --amla-form book
expect_err "bad fa3 flag" run --fa3-block maybe
expect_err "zero row block" run --row-block 0
expect_err "bad layer profile" run --dist mla --layer-profile 9
expect_err "rope dims too large" run --dist mla --dk 64 --dv 32 --rope-dims 64
expect_err "negative outlier rate" run --dist mla --outlier-rate -0.1
# a separate V under the MLA distribution (it aborted once): drawn as the cache's content part
$A run --dist mla --kv separate --ctx 64 --heads 2 --dk 64 --dv 32 --rope-dims 16 --samples 1 --variants base \
    --dump "$T/mlasep" >/dev/null 2>&1 && [ -s "$T/mlasep/v.npy" ] && ok || bad "run --dist mla --kv separate"
expect_err "bad variant override" run --variants amla:amla-form=x
expect_err "override not allowed" run --variants amla:ctx=5
expect_err "dv > dk shared" run --dk 64 --dv 128
expect_err "causal sq > ctx" run --causal --sq 10 --ctx 5
expect_err "kv heads" run --heads 6 --kv-heads 4
expect_err "csv unwritable" run $SMALL --csv /nonexistent-dir/x.csv
expect_err "dump onto a file" run $SMALL --dump "$T/file.csv"
$A run $SMALL --csv "$T/never.csv" --variants bogus >/dev/null 2>&1
[ -e "$T/never.csv" ] && bad "csv written despite error" || ok
expect_err "load missing dir" run --load "$T/nowhere"
expect_err "compare one file" compare "$T/d/base.npy"
expect_err "compare missing" compare "$T/d/base.npy" "$T/nothing.npy"
expect_err "list bad variant" list --sites warp
# malformed .npy files in a load directory
mk() { mkdir -p "$T/$1"; cp "$T/d/q.npy" "$T/d/k.npy" "$T/$1/"; }
mk trunc; head -c 1000 "$T/d/k.npy" >"$T/trunc/k.npy"
expect_err "truncated k.npy" run --load "$T/trunc"
grep -q "k.npy" "$T/err" && ok || bad "message lacks the file name"
mk magic; printf 'garbage-not-npy' >"$T/magic/q.npy"
expect_err "bad magic" run --load "$T/magic"
mk fortran; sed 's/False/True /' "$T/d/k.npy" >"$T/fortran/k.npy"
expect_err "fortran order" run --load "$T/fortran"
mk bigend; sed "s/'<f8'/'>f8'/" "$T/d/k.npy" >"$T/bigend/k.npy"
expect_err "big endian" run --load "$T/bigend"
mk dims; cp "$T/d/base.npy" "$T/dims/k.npy"
expect_err "head dim mismatch" run --load "$T/dims"
expect_err "compare shapes" compare "$T/d/q.npy" "$T/d/base.npy"
# ---- defects found in use (issue 13): each with the independent fact it checks
S="--ctx 64 --heads 2 --dk 64 --dv 32 --samples 1"
# --load without v.npy: V = K[..., :dv] with --dv as given (default 512, so dk 64 needs --dv)
mkdir -p "$T/nov"; cp "$T/d/q.npy" "$T/d/k.npy" "$T/nov/"
expect_err "load without v.npy, default --dv 512 > dk 64" run --load "$T/nov"
grep -q -- "--dv 512" "$T/err" && ok || bad "no-v load message lacks --dv: $(cat "$T/err")"
$A run --load "$T/nov" --dv 16 --variants base --format csv >"$T/nov.csv" || bad "load without v.npy --dv 16"
expect_eq "no-v load: dv column is --dv" "16" "$(csvcol dv <"$T/nov.csv" | tail -n 1)"
# a loaded case is one sample (golden + base rows), unless --samples says otherwise
expect_eq "load: one sample by default (header + base)" "2" "$(wc -l <"$T/nov.csv" | tr -d ' ')"
expect_eq "load --samples 2" "3" "$($A run --load "$T/nov" --dv 16 --variants base --samples 2 --format csv | wc -l | tr -d ' ')"
# the CSV's block and out_format are each variant's own (seesaw's tile is the kernel's 64)
$A run $S --variants base,base:block=16,base:out-format=fp16,seesaw --format csv >"$T/blk.csv" || bad "per-variant block run"
csvcol block <"$T/blk.csv" >"$T/blk.b"
csvcol out_format <"$T/blk.csv" >"$T/blk.f"
expect_eq "per-variant block and out_format" "512 bf16|16 bf16|512 fp16|64 bf16" \
    "$(paste -d' ' "$T/blk.b" "$T/blk.f" 2>/dev/null | tail -n 4 | tr '\n' '|' | sed 's/|$//')"
# amla is the CANN form by default: the same bytes as amla:amla-form=cann, not as =paper
$A run $S --ctx 2048 --variants amla,amla:amla-form=cann,amla:amla-form=paper --dump "$T/am" >/dev/null || bad "amla forms dump"
cmp -s "$T/am/amla.npy" "$T/am/amla:amla-form=cann.npy" && ok || bad "amla is not the cann form"
cmp -s "$T/am/amla.npy" "$T/am/amla:amla-form=paper.npy" && bad "amla equals the paper form" || ok
# a block wider than the keys is one tile of all of them: same bits as --block = ctx
$A run $S --variants base,amla,fastattn --block 2147483648 --dump "$T/bw" >/dev/null || bad "--block 2^31 failed"
$A run $S --variants base,amla,fastattn --block 64 --dump "$T/bc" >/dev/null
for v in base amla fastattn; do cmp -s "$T/bw/$v.npy" "$T/bc/$v.npy" && ok || bad "--block 2^31 differs from --block ctx for $v"; done
expect_err "threads 100000" run $S --threads 100000
expect_err "threads 2^32+1" run $S --threads 4294967297
expect_err "sweep threads 100000" sweep "$T/s.exp" --threads 100000
# a FIFO where a file is expected is refused at once, not waited on
if command -v mkfifo >/dev/null; then
    mkdir -p "$T/fifo"; mkfifo "$T/fifo/q.npy"; cp "$T/d/k.npy" "$T/fifo/"
    timeout 20 $A run --load "$T/fifo" >/dev/null 2>"$T/err"; rc=$?
    expect_eq "FIFO q.npy: exit 2" "2" "$rc"
    grep -q "not a regular file" "$T/err" && ok || bad "FIFO message: $(cat "$T/err")"
    mkfifo "$T/fifo.exp"; timeout 20 $A sweep "$T/fifo.exp" >/dev/null 2>&1; expect_eq "FIFO experiment: exit 2" "2" "$?"
fi
# inputs that are not finite in the input format (bf16's largest value is 3.39e38)
expect_err "mean 1e308" run $S --mean 1e308
expect_err "sigma 1e308" run $S --sigma 1e308
expect_err "uniform 1e39" run $S --dist uniform --low -1e39 --high 1e39
expect_err "scale 1e308" run $S --scale 1e308
expect_err "mla rope scale 1e308" run $S --dist mla --rope-dims 16 --rope-scale 1e308
{ npyhdr '<f4' 4; printf '\000\000\200\077\377\377\177\177\000\000\200\077\000\000\200\077'; } >"$T/big.npy" # 1, 3.4028235e38, 1, 1
$A cast --to bf16 --in "$T/big.npy" --out "$T/bigv.npy" --values >/dev/null || bad "cast of FLT_MAX"
mkdir -p "$T/bigload"; cp "$T/d/k.npy" "$T/bigload/"; cp "$T/d/q.npy" "$T/bigload/q.npy"
python3 - "$T/bigload/q.npy" <<'PY' 2>/dev/null && expect_err "q.npy with 3.4e38 (inf in bf16)" run --load "$T/bigload" --dv 16
import sys, struct
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); hl = struct.unpack('<H', b[8:10])[0]
b[10 + hl:18 + hl] = struct.pack('<d', 3.4e38); open(p, 'wb').write(b)
PY
# accepted silently before: now each is refused
expect_err "duplicate variant" run $S --variants base,base
expect_err "all plus a variant" run $S --variants all,base
expect_err "golden twice" run $S --variants golden,base,golden
expect_err "empty --only" run $S --only ''
expect_err "empty --exact entry" run $S --exact p_cast,
expect_err "--exact and --only" run $S --exact p_cast --only p_cast
expect_err "duplicate spec key" run $S --variants amla:block=16:block=32
expect_err "empty spec" run $S --variants amla:
expect_err "empty spec entry" run $S --variants amla::block=16
expect_err "spec exact and only" run $S --variants base:exact=p_cast:only=out_cast
expect_err "cast negative seed" cast --to bf16 --seed -1
for l in "grid sigma 1 2|grid sigma 3" "grid sigma,mean 1,0|grid mean 1" "set samples 2|set samples 3" \
    "name y" "set csv $T/x.csv" "set dump $T/dd" "set threads 2" "set format json" "title a|title b" "plot rel_fro ctx|plot rmse ctx"; do
    printf 'name x\nset ctx 64\nset heads 2\nset dk 32\nset dv 16\nset samples 1\n%s\n' "$(echo "$l" | tr '|' '\n')" >"$T/dup.exp"
    expect_err "experiment: $l" sweep "$T/dup.exp" --out "$T/dupout"
done
for nm in . .. .hidden; do printf 'name %s\nset samples 1\n' "$nm" >"$T/dot.exp"; expect_err "name $nm" sweep "$T/dot.exp" --out "$T/dotout"; done
{ d="{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"; printf '\223NUMPY\001\000\166\000%-117s\n' "$d"; printf '0123456789abcdef'; } >"$T/dupkey.npy"
expect_err "npy duplicate key" cast --to bf16 --in "$T/dupkey.npy" --out "$T/x.npy"
{ d="{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'extra': 1, }"; printf '\223NUMPY\001\000\166\000%-117s\n' "$d"; printf '0123456789abcdef'; } >"$T/extra.npy"
expect_err "npy extra key" cast --to bf16 --in "$T/extra.npy" --out "$T/x.npy"
# any path that cannot be written is exit 2, and leaves nothing
expect_err "--csv ''" run $S --csv ''
expect_err "--csv DIR" run $S --csv "$T"
expect_err "--csv /dev/null (not a regular file)" run $S --csv /dev/null
[ -c /dev/null ] && ok || bad "/dev/null was replaced"
expect_err "cast --out DIR" cast --to bf16 --in "$T/cx.npy" --out "$T"
if [ -f $G/gemm-bf16-normal-256.a.npy ]; then
    expect_err "matmul -o ''" matmul $G/gemm-bf16-normal-16.a.npy $G/gemm-bf16-normal-16.b.npy -o ''
fi
# messages
expect_err "sweep of a directory" sweep "$T"
grep -q "is a directory" "$T/err" && ok || bad "sweep DIR message: $(cat "$T/err")"
printf 'ab\001\377c' | $A cast --to bf16 >/dev/null 2>"$T/err"
LC_ALL=C grep -q '[^[:print:]]' "$T/err" && bad "cast echoes raw bytes" || ok
grep -q 'ab\\x01\\xffc' "$T/err" && ok || bad "cast message: $(cat "$T/err")"
expect_eq "--opt=value" "$($A run $S --format csv | tail -n 1)" "$($A run --ctx=64 --heads=2 --dk=64 --dv=32 --samples=1 --format=csv | tail -n 1)"

# ---- faults: signals, a full or read-only filesystem, killed and concurrent sweeps
# SIGTERM, SIGINT and SIGHUP during a run leave no temporary (and no result) behind, whether
# the dump was being written or not yet (a background job of sh ignores SIGINT, and a suite
# started under nohup SIGHUP: perl restores both)
for sig in TERM INT HUP; do
    for wait_s in 0.3 2; do
        rm -rf "$T/sig"; mkdir -p "$T/sig"
        perl -e '$SIG{INT} = $SIG{HUP} = "DEFAULT"; exec @ARGV' $A run --ctx 8192 --heads 8 --samples 40 --threads 1 \
            --variants all --csv "$T/sig/r.csv" --dump "$T/sig/dd" >/dev/null 2>&1 &
        pid=$!; sleep $wait_s; kill -$sig $pid; wait $pid 2>/dev/null
        expect_eq "SIG$sig after ${wait_s}s: nothing left in the output directory" "" "$(ls -A "$T/sig")"
    done
done
# ... but a SIGHUP the caller ignores (nohup) stays ignored: the run goes on and writes its result
# (unwrapped under valgrind, as AH: a whole run there takes minutes, and this tests no memory use)
rm -rf "$T/sig"; mkdir -p "$T/sig"
perl -e '$SIG{HUP} = "IGNORE"; exec @ARGV' $AH run --ctx 8192 --heads 8 --samples 6 --threads 1 \
    --variants base --csv "$T/sig/r.csv" >/dev/null 2>&1 &
pid=$!; sleep 0.3; kill -HUP $pid; wait $pid; rc=$?
[ $rc -eq 0 ] && [ -s "$T/sig/r.csv" ] && ok || bad "SIGHUP under nohup: exit $rc, result $(ls -A "$T/sig")"
if [ "$(id -u)" = 0 ] && mkdir -p "$T/mnt" && mount -t tmpfs -o size=48k tmpfs "$T/mnt" 2>/dev/null; then
    # full: a dump larger than the filesystem leaves no directory and no file
    $A run $S --ctx 2048 --dk 64 --dv 64 --dump "$T/mnt/dd" --csv "$T/mnt/r.csv" >/dev/null 2>"$T/err"; rc=$?
    [ $rc -ne 0 ] && ok || bad "dump onto a full filesystem succeeded"
    expect_eq "full filesystem: nothing left" "" "$(ls -A "$T/mnt")"
    umount "$T/mnt"
    mount -t tmpfs -o ro tmpfs "$T/mnt"
    expect_err "read-only directory: --csv" run $S --csv "$T/mnt/r.csv"
    expect_err "read-only directory: --dump" run $S --dump "$T/mnt/dd"
    expect_err "read-only directory: sweep" sweep "$T/s.exp" --out "$T/mnt/out"
    umount "$T/mnt"
else
    echo "cli: skipped the full and read-only filesystem tests (they mount a tmpfs, which needs root)"
fi
# the sample store: one writer at a time (a second sweep exits 2 naming the lock) ...
if command -v flock >/dev/null; then
    mkdir -p "$T/lk"; flock "$T/lk/.small.lock" sleep 3 &
    lpid=$!; sleep 0.5
    expect_err "sweep while another holds the lock" sweep "$T/s.exp" --out "$T/lk" --no-plot
    grep -q "small.lock" "$T/err" && ok || bad "lock message lacks the lock: $(cat "$T/err")"
    wait $lpid
fi
# ... and two sweeps started together: each finishes or exits 2, and the CSV is the right one
$A sweep "$T/s.exp" --out "$T/race" --no-plot >/dev/null 2>"$T/race1" & p1=$!
$A sweep "$T/s.exp" --out "$T/race" --no-plot >/dev/null 2>"$T/race2" & p2=$!
wait $p1; r1=$?; wait $p2; r2=$?
[ $r1 -eq 0 ] || [ $r2 -eq 0 ] && ok || bad "both concurrent sweeps failed ($r1, $r2)"
[ $r1 -eq 0 ] || [ $r1 -eq 2 ] && [ $r2 -eq 0 ] || [ $r2 -eq 2 ] && ok || bad "concurrent sweeps exit $r1 $r2"
[ $r1 -eq 0 ] && [ $r2 -eq 0 ] || $A sweep "$T/s.exp" --out "$T/race" --no-plot >/dev/null 2>&1
cmp -s "$T/full/small.csv" "$T/race/small.csv" && ok || bad "concurrent sweeps: csv differs from a lone sweep's"
# a damaged store: every damaged record is dropped with a warning, never copied
st="$T/full/.small.samples"
for how in torn count sum; do
    rm -rf "$T/dmg"; mkdir -p "$T/dmg"; cp "$st" "$T/dmg/"
    case $how in
    torn) sz=$(wc -c <"$st"); head -c $((sz - 20)) "$st" >"$T/dmg/.small.samples"; echo xyz >>"$T/dmg/.small.samples" ;;
    count) awk '/^@/ && !done { $4 = $4 - 1; done = 1 } { print }' "$st" >"$T/dmg/.small.samples" ;;
    sum) awk 'NR == 3 { sub(/^small,/, "smalL,") } { print }' "$st" >"$T/dmg/.small.samples" ;;
    esac
    $A sweep "$T/s.exp" --out "$T/dmg" --no-plot >/dev/null 2>"$T/err" || bad "resume of a $how store failed: $(cat "$T/err")"
    grep -q "warning: .*dropped" "$T/err" && ok || bad "no warning for a $how store"
    cmp -s "$T/full/small.csv" "$T/dmg/small.csv" && ok || bad "$how store: resumed csv differs"
done

# ---- check screens its default candidates (every one first on a part of the case, the leaders there in full): on
# every committed capture its verdict is the exhaustive run's; and a check on one thread is the one on two
for d in tests/data/*/*/; do
    [ -f "$d/out.npy" ] || continue
    [ -n "$AMLA_QUICK" ] && case $d in */flashmla/a4-b2/ | */sdpa/efficient-s4/ | */flashmla-sparse/m1/) ;; *) continue ;; esac
    o=""
    { [ -f "$d/fp16" ] || case $d in *fp16*) true ;; *) false ;; esac; } && o="--in-format fp16 --out-format fp16"
    [ -f "$d/causal" ] && case $d in */sdpa/*) o="$o --causal=top-left" ;; *) o="$o --causal" ;; esac
    [ -f "$d/args" ] && o="$o $(cat "$d/args")"
    # shellcheck disable=SC2086
    a=$($AH check "$d" $o 2>&1 | grep -E '^verdict|error')
    # shellcheck disable=SC2086
    b=$($AH check "$d" $o --exhaustive 2>&1 | grep -E '^verdict|error')
    case $a in "verdict: bit-identical to "*) ok ;; *) bad "check on $d names no kernel: [$a]" ;; esac
    [ "$a" = "$b" ] && ok || bad "check's screening on $d: [$a], exhaustively [$b]"
done
for t in 1 2; do
    $A check tests/data/flashmla-sparse/x4 --threads $t --format json | sed 's/"seconds": [0-9.e+-]*//g' >"$T/chk$t.json" 2>&1
done
cmp -s "$T/chk1.json" "$T/chk2.json" && ok || bad "check --threads 1 and 2 differ"
grep -q "\"screened_out\": \\[{" "$T/chk1.json" && ok || bad "check on x4 screened nothing out"
# one sample on every thread: Golden's parts and the variants spread over them, the same bytes as one thread
for t in 1 2; do
    rm -rf "$T/thr$t"
    $A run --heads 8 --kv-heads 4 --sq 3 --ctx 200 --dk 64 --dv 32 --kv separate --causal --samples 1 --threads $t \
        --variants base,sdpa-efficient,fa2,standard --dump "$T/thr$t" >/dev/null 2>&1
done
same=0; for f in "$T"/thr1/*.npy; do cmp -s "$f" "$T/thr2/$(basename "$f")" && same=$((same + 1)); done
expect_eq "run --samples 1 on 1 and 2 threads: identical arrays" "$(ls "$T"/thr1/*.npy | wc -l | tr -d ' ')" "$same"

# every option of the table (run --help) is documented in docs/USAGE.md and the man page
for o in $($A run --help | grep -o '^  --[a-z0-9-]*' | sed 's/^  --//'); do
    grep -q -- "--$o" docs/USAGE.md && ok || bad "docs/USAGE.md does not mention --$o"
    grep -qF -- "\\-\\-$(echo "$o" | sed 's/-/\\-/g')" man/amla-lab.1 && ok || bad "the man page does not mention --$o"
done

# docs/USAGE.md's and the man page's option tables are the option table's own (scripts/dev/gen-docs.sh)
mkdir -p "$T/docs/scripts/dev" "$T/docs/man" "$T/docs/docs"
cp docs/USAGE.md "$T/docs/docs/"; cp man/amla-lab.1 "$T/docs/man/"; cp scripts/dev/gen-docs.sh "$T/docs/scripts/dev/"
sh "$T/docs/scripts/dev/gen-docs.sh" "$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")" 2>"$T/err" || bad "gen-docs.sh: $(cat "$T/err")"
cmp -s docs/USAGE.md "$T/docs/docs/USAGE.md" && ok || bad "docs/USAGE.md's option table is stale: run sh scripts/dev/gen-docs.sh"
cmp -s man/amla-lab.1 "$T/docs/man/amla-lab.1" && ok || bad "the man page's option table is stale: run sh scripts/dev/gen-docs.sh"
# a default the docs' prose gives ("`--opt` [value") is the table's
grep -o '`--[a-z0-9-]*` \[[^],;]*' README.md docs/USAGE.md docs/ARITHMETIC.md | sed 's/^[^:]*://'  | sort -u | while read -r o v; do
    o=$(echo "$o" | tr -d '`'); v=${v#[}
    $A list --options md | grep -q "^| \`$o[ \`].*| $v[^|]* |" || echo "the docs give $o [$v, the option table differs"
done >"$T/defs"
[ -s "$T/defs" ] && bad "$(cat "$T/defs")" || ok
expect_err "list --options in an unknown form" list --options pdf
$A run --help >"$T/h1"; $A list --options >"$T/h2"
cmp -s "$T/h1" "$T/h2" && ok || bad "list --options differs from run --help"

# run's progress line is for a terminal only: stderr stays empty in a pipe
$A run $SMALL --samples 3 >/dev/null 2>"$T/err"; [ ! -s "$T/err" ] && ok || bad "run wrote to stderr in a pipe: $(head -c 200 "$T/err")"
if command -v script >/dev/null 2>&1 && [ -z "$AMLA_WRAP" ] && [ -z "$AMLA_QUICK" ]; then
    script -qc "$BIN run --ctx 2048 --samples 80 --threads 1 --variants base >/dev/null" /dev/null >"$T/tty" 2>&1
    grep -q "run \[.*\] [0-9]*/80 samples, ETA" "$T/tty" && ok || bad "no progress line on a terminal for a long run"
fi

# stdout that cannot be written is an I/O error (exit 1), when /dev/full exists
if [ -w /dev/full ]; then
    $A list >/dev/full 2>/dev/null; rc=$?
    expect_eq "write error exit" "1" "$rc"
fi
echo "cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
