#!/bin/bash
# build-captures.sh [SECONDS] -- on the device machine: FlashMLA 9241ae3 built twice (its setup.py, and without
# --use_fast_math as vLLM's CMake builds it) through serving-captures.sh's steps fpre and fieee: the sparse prefill's
# cases from both builds, the no-fast-math build's dense decode (IEEE_DENSE_CASES) and FP8 sparse decode
# (IEEE_FP8_CASES), the SASS of both builds' kernels; then packs into $OUT (at most 8 files of 15 MB): pre.tgz.*
# (the fast-math prefill with its inputs, the other build's outputs), ieee.tgz.* (dense and FP8 decodes), sass.tgz,
# logs.tgz.
set -u
export OUT
STEPS="fpre fieee" FMLA_JOBS=8 IEEE_FP8_CASES=${IEEE_FP8_CASES:-v1,v2,v5,v6,m1,m2,m4,x4} \
    IEEE_DENSE_CASES=${IEEE_DENSE_CASES:-d1,d2,d3,d6,d7} NO_PACK=1 bash scripts/device/serving-captures.sh "${1:-585}"
cd /tmp/w || exit 1
tar czf - fpre ieee-pre/*/out.npy ieee-pre/*/lse.npy ieee-pre/*/max_logits.npy ieee-pre/meta.json 2>/dev/null |
    split -b 15000000 - "$OUT/pre.tgz."
tar czf - ieee-dense ieee-fp8 2>/dev/null | split -b 15000000 - "$OUT/ieee.tgz."
tar czf "$OUT/sass.tgz" sass ieee-fp8/sass.txt.xz 2>/dev/null
tar czf "$OUT/logs.tgz" ./*.log ./*.rc nvcc.txt 2>/dev/null
ls -la "$OUT"
