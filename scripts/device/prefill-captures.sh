#!/bin/bash
# prefill-captures.sh [SECONDS] -- on the device machine: FlashAttention-3's 192/128 prefill (capture_fa3.py's
# p* cases, hopper/setup.py trimmed to head dims 192 and 192/128, no split, paged, softcap or pack-GQA kernels) and
# FlashMLA 9241ae3's sparse prefill built twice, by its setup.py and by it without --use_fast_math (as vLLM's CMake
# builds it), through serving-captures.sh's steps fa3, fpre and fieee; then packs into $OUT (at most 8 files of
# 15 MB): fa3c.tgz.* (split), pre.tgz (both builds' prefill outputs, the inputs once), sass.tgz, logs.tgz.
set -u
export OUT
STEPS="fa3 fpre fieee" FMLA_JOBS=4 IEEE_FP8_CASES=v2,v5,x4 IEEE_DENSE=0 \
    FA3_TRIM="BACKWARD SPLIT PAGEDKV APPENDKV LOCAL SOFTCAP SM80 CLUSTER HDIM64 HDIM96 HDIM128 HDIM256 HDIMDIFF64 PACKGQA" \
    FA3_CASES=p1,p2,p3,p4,p5,p6,p7,p8,p9,pv1,pv2,pv3,pv4 NO_PACK=1 bash scripts/device/serving-captures.sh "${1:-585}"
cd /tmp/w || exit 1
tar czf - fa3c fa3sass | split -b 15000000 - "$OUT/fa3c.tgz."
tar czf "$OUT/pre.tgz" fpre ieee-pre/*/out.npy ieee-pre/*/lse.npy ieee-pre/*/max_logits.npy ieee-pre/meta.json \
    ieee-fp8/v2.npz ieee-fp8/v5.npz ieee-fp8/x4.npz ieee-fp8/meta.json 2>/dev/null
tar czf "$OUT/sass.tgz" sass ieee-fp8/sass.txt.xz 2>/dev/null
tar czf "$OUT/logs.tgz" ./*.log ./*.rc nvcc.txt 2>/dev/null
ls -la "$OUT"
