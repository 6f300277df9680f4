#!/bin/bash
# STEPS="sdpa triton fmla fa3 fork" serving-captures.sh [SECONDS] -- on the device machine: build the serving
# kernels' sources carried in .cap/ and capture them (capture_sdpa.py's non-square causal cases,
# capture_triton_mla.py, capture_flashmla_serving.py, capture_fa3.py), packing what comes back into $OUT (8 files
# at most, 16 MiB each), all inside SECONDS (default 540) of one command.
#   .cap/fa3.tgz    fa3/{hopper,README.md,csrc/cutlass/include}: Dao-AILab/flash-attention 0251105a, CUTLASS 7127592
#   .cap/fmain.tgz  fmain/: deepseek-ai/FlashMLA 9241ae3 with CUTLASS 147f567 (include, tools/util/include)
#   .cap/ffork.tgz  ffork/csrc: vllm-project/FlashMLA 46d64a8 with CUTLASS e94e888
#   .cap/triton_decode_attention.py  vLLM's Triton decode (see capture_triton_mla.py)
#   .cap/triton_decode_0155494.py    vLLM 0155494's own Triton decode (the same interface)
#   .cap/sglang_decode_attention.py  SGLang's Triton decode and its split heuristic (see capture_sglang_decode.py)
# Steps: sdpa, triton, sglang (no build); fmla (FlashMLA 9241ae3's setup.py, FLASH_MLA_DISABLE_SM100=1, about 9 min on
# 5 cores beside FA3's build), fork (the fork's dense FP8 extension, three sources), fa3 (hopper/setup.py trimmed
# by FA3_TRIM, default forward BF16 + e4m3, head dims 64, 128 and 64/512: 24 kernel sources, all 16 cores; FA3_CASES
# the capture_fa3.py cases to take, default all), fpre (FlashMLA's sparse prefill, capture_flashmla_prefill.py, on
# fmla's build), fieee (FlashMLA 9241ae3 built by its setup.py without --use_fast_math, as vLLM's CMake builds it:
# its sparse prefill, dense decode and FP8 sparse decode captured, and the SASS of the three kernels). Builds run in
# the background (setsid) from /tmp/w; a step whose build is not done by the deadline is skipped.
set -u
W=/tmp/w
STEPS=${STEPS:-sdpa triton fmla fork fa3}
DEADLINE=$(( $(date +%s) + ${1:-540} ))
export CPLUS_INCLUDE_PATH=/usr/local/cuda/include/cccl PYTHONUNBUFFERED=1
FA3_TRIM=${FA3_TRIM:-"BACKWARD APPENDKV LOCAL SOFTCAP SM80 CLUSTER HDIM96 HDIM192 HDIM256 HDIMDIFF192 FP16 PACKGQA"}
mkdir -p $W
log() { echo "[$(date +%T)] $*"; }
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
nvcc --version | tail -2 > $W/nvcc.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $W/nvcc.txt

if has fa3 && [ ! -d $W/fa3 ]; then
    tar xzf .cap/fa3.tgz -C $W
    trim=$(for f in $FA3_TRIM; do printf 'FLASH_ATTENTION_DISABLE_%s=TRUE ' $f; done)
    setsid bash -c "cd $W/fa3/hopper && env $trim FLASH_ATTENTION_FORCE_BUILD=TRUE MAX_JOBS=16 NVCC_THREADS=1 \
        python3 setup.py build_ext --inplace > $W/fa3-build.log 2>&1; echo \$? > $W/fa3-build.rc" < /dev/null &
    log fa3 build started
fi
# fmla_build NAME: FlashMLA's tree from .cap/fmain.tgz in $W/NAME built in place (fieee: without --use_fast_math)
fmla_build() {
    [ -d $W/$1 ] && return
    mkdir -p $W/t && tar xzf .cap/fmain.tgz -C $W/t && mv $W/t/fmain $W/$1
    sed -i '/submodule/d' $W/$1/setup.py
    [ "$1" = fieee ] && sed -i '/"--use_fast_math",/d' $W/$1/setup.py
    setsid bash -c "cd $W/$1 && env FLASH_MLA_DISABLE_SM100=1 MAX_JOBS=${FMLA_JOBS:-5} NVCC_THREADS=1 \
        python3 setup.py build_ext --inplace > $W/$1-build.log 2>&1; echo \$? > $W/$1-build.rc" < /dev/null &
    log "$1 build started"
}
{ has fmla || has fpre; } && fmla_build fmain
has fieee && fmla_build fieee
if has sdpa && [ ! -f $W/sdpa-c/meta.json ]; then
    CAPTURE_CASES=c1,c2,c3,c4,c5,c6,c7 python3 scripts/device/capture_sdpa.py $W/sdpa-c > $W/sdpa.log 2>&1
    log sdpa done
fi
if has triton && [ ! -f $W/triton/meta.json ]; then
    DECODE_SOURCE="CutieillFusion/vllm-kimi-k3 e46a1de vllm/v1/attention/ops/triton_decode_attention.py" \
        python3 scripts/device/capture_triton_mla.py .cap/triton_decode_attention.py $W/triton > $W/triton.log 2>&1
    log triton done
fi
# vllm0: vLLM 0155494's own triton_decode_attention.py (FP8: V dequantized in fp32, P.V in TF32); vllmmla: the
# e46a1de file called as later forward_mqa call it (is_mla=True, v_scale = k_scale)
if has vllm0 && [ ! -f $W/vllm0/meta.json ]; then
    DECODE_SOURCE="vllm-project/vllm 0155494 vllm/v1/attention/ops/triton_decode_attention.py" \
        CAPTURE_CASES=${VLLM_CASES:-t1,t4,t5,t7,t9,w1,w2} \
        python3 scripts/device/capture_triton_mla.py .cap/triton_decode_0155494.py $W/vllm0 > $W/vllm0.log 2>&1
    log vllm0 done
fi
if has vllmmla && [ ! -f $W/vllmmla/meta.json ]; then
    DECODE_SOURCE="CutieillFusion/vllm-kimi-k3 e46a1de vllm/v1/attention/ops/triton_decode_attention.py, is_mla=True" \
        TRITON_CALL=mla CAPTURE_CASES=${VLLM_CASES:-t1,t4,t5,t7,t9,w1,w2} \
        python3 scripts/device/capture_triton_mla.py .cap/triton_decode_attention.py $W/vllmmla > $W/vllmmla.log 2>&1
    log vllmmla done
fi
if has sglang && [ ! -f $W/sglang/meta.json ]; then
    DECODE_SOURCE="sgl-project/sglang 03cd2ec4 triton_ops/decode_attention.py, bdd1bcd triton_ops/metadata.py" \
        python3 scripts/device/capture_sglang_decode.py .cap/sglang_decode_attention.py $W/sglang > $W/sglang.log 2>&1
    log sglang done
fi
if has fork && [ ! -f $W/fork/meta.json ]; then
    [ -d $W/ffork ] || tar xzf .cap/ffork.tgz -C $W
    CAPTURE_KERNELS=fork FORK_COMMIT=46d64a8 python3 scripts/device/capture_flashmla_serving.py $W/fmain $W/ffork \
        $W/fork > $W/fork.log 2>&1
    log fork done
fi
if has fmla; then
    while [ ! -f $W/fmain-build.rc ] && [ $(date +%s) -lt $((DEADLINE - 90)) ]; do sleep 5; done
    if [ -f $W/fmain-build.rc ] && [ ! -f $W/fmla/meta.json ]; then
        CAPTURE_KERNELS=main MAIN_COMMIT=9241ae3 python3 scripts/device/capture_flashmla_serving.py $W/fmain $W/ffork \
            $W/fmla > $W/fmla.log 2>&1
        log fmla done
    fi
fi
if has fpre; then
    while [ ! -f $W/fmain-build.rc ] && [ $(date +%s) -lt $((DEADLINE - 60)) ]; do sleep 5; done
    if [ -f $W/fmain-build.rc ] && [ ! -f $W/fpre/meta.json ]; then
        FLASHMLA_BUILD="setup.py, FLASH_MLA_DISABLE_SM100=1 (--use_fast_math)" \
            python3 scripts/device/capture_flashmla_prefill.py $W/fmain $W/fpre > $W/fpre.log 2>&1
        log fpre done
    fi
fi
if has fieee; then
    while [ ! -f $W/fieee-build.rc ] && [ $(date +%s) -lt $((DEADLINE - 100)) ]; do sleep 5; done
    if [ -f $W/fieee-build.rc ] && [ ! -f $W/ieee-pre/meta.json ]; then
        export FLASHMLA_BUILD="setup.py without --use_fast_math, FLASH_MLA_DISABLE_SM100=1 (as vLLM's CMake)"
        python3 scripts/device/capture_flashmla_prefill.py $W/fieee $W/ieee-pre > $W/ieee-pre.log 2>&1
        [ "${IEEE_DENSE:-1}" = 1 ] && CAPTURE_KERNELS=main MAIN_COMMIT=9241ae3 \
            CAPTURE_CASES=${IEEE_DENSE_CASES:-} \
            python3 scripts/device/capture_flashmla_serving.py $W/fieee $W/fieee $W/ieee-dense > $W/ieee-dense.log 2>&1
        CAPTURE_CASES=${IEEE_FP8_CASES:-v1,v2,v5,m1,m2,m4,x4} python3 scripts/device/capture_flashmla_fp8.py $W/fieee \
            $W/ieee-fp8 > $W/ieee-fp8.log 2>&1
        mkdir -p $W/sass
        for b in fieee fmain; do
            for f in $(find $W/$b/build -name '*.o' | grep -E 'dense/instantiations/bf16|prefill/sparse/instantiations/phase1_k5(76|12)\.|combine|v32_persistent_h64'); do
                cuobjdump -sass "$f" | xz -6 > "$W/sass/$b-$(basename "$f" .o).sass.xz"
            done
        done
        log fieee done
    fi
fi
if has fa3; then
    while [ ! -f $W/fa3-build.rc ] && [ $(date +%s) -lt $((DEADLINE - 150)) ]; do sleep 5; done
    if [ -f $W/fa3-build.rc ] && [ ! -f $W/fa3c/meta.json ]; then
        FA3_COMMIT=0251105a CUTLASS_COMMIT=7127592 FA3_BUILD_FLAGS="FLASH_ATTENTION_DISABLE_{${FA3_TRIM// /,}}=TRUE" \
            NVCC_VERSION="$(head -1 $W/nvcc.txt)" CAPTURE_CASES=${FA3_CASES:-} timeout $((DEADLINE - $(date +%s) - 60)) \
            python3 scripts/device/capture_fa3.py $W/fa3/hopper $W/fa3c > $W/fa3.log 2>&1
        log fa3 captured
        o=$(ls -d $W/fa3/hopper/build/temp*/ 2>/dev/null | head -1)
        mkdir -p $W/fa3sass
        for f in flash_fwd_hdim128_bf16_sm90 flash_fwd_hdim128_e4m3_sm90 flash_fwd_hdim64_512_bf16_paged_split_sm90 \
                 flash_fwd_hdim192_128_bf16_sm90 flash_fwd_hdim192_128_e4m3_sm90 flash_fwd_combine; do
            obj=$(find "$o" -name "$f.o" | head -1)
            [ -n "$obj" ] && cuobjdump -sass "$obj" | gzip -6 > $W/fa3sass/$f.sass.gz
        done
    fi
fi

# what comes back: logs, then each capture folder's cases in archives of at most 15 MB (NO_PACK: the caller packs)
[ -n "${NO_PACK:-}" ] && exit 0
cd $W
tar czf $OUT/logs.tgz *.log *.rc nvcc.txt 2>/dev/null
pack() { # pack NAME DIR...: the case folders into NAME-1.tgz, NAME-2.tgz, ...
    local name=$1 n=1 cur=() d c
    shift
    for d in "$@"; do
        [ -d "$d" ] || continue
        for c in $(ls "$d"); do
            cur+=("$d/$c")
            tar czf $OUT/$name-$n.tgz "${cur[@]}"
            if [ $(stat -c %s $OUT/$name-$n.tgz) -gt 15000000 ] && [ ${#cur[@]} -gt 1 ]; then
                unset 'cur[${#cur[@]}-1]'; tar czf $OUT/$name-$n.tgz "${cur[@]}"
                n=$((n + 1)); cur=("$d/$c"); tar czf $OUT/$name-$n.tgz "${cur[@]}"
            fi
        done
    done
}
pack cap $(for s in $STEPS; do case $s in sdpa) echo sdpa-c;; fa3) echo fa3c fa3sass;; fieee) echo ieee-pre ieee-dense ieee-fp8 sass;; *) echo $s;; esac; done)
ls -la $OUT
log end
