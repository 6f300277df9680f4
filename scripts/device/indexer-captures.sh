#!/bin/bash
# indexer-captures.sh [CASES] -- on the device machine: DeepGEMM 54e2261 (.cap/dgemm.tgz: the tree, CUTLASS f3fde58's
# include/ in third-party/cutlass and copied into deep_gemm/include/ for the JIT, fmt 553ec11) built in place by its
# setup.py (the system compilers: the default one links libstdc++ statically and the JIT's std::regex then crashes on
# the process's locale), then capture_indexer.py's cases (CASES: a,b; default all) and the JIT's kernels and SASS,
# packed into $OUT (idx.tgz.*, pieces of 15 MB; logs.tgz).
set -u
W=/tmp/w
mkdir -p $W/home $W/jitcache
[ -d $W/dgemm ] || tar xzf .cap/dgemm.tgz -C $W
export CPLUS_INCLUDE_PATH=/usr/local/cuda/include/cccl CXX=/usr/bin/g++ CC=/usr/bin/gcc DG_FORCE_BUILD=1 \
    DG_USE_LOCAL_VERSION=0 HOME=$W/home DG_JIT_CACHE_DIR=$W/jitcache PYTHONUNBUFFERED=1
if [ ! -f $W/dg-build.rc ]; then
    (cd $W/dgemm && MAX_JOBS=16 python3 setup.py build_ext --inplace > $W/dg-build.log 2>&1; echo $? > $W/dg-build.rc)
fi
echo "build rc $(cat $W/dg-build.rc)"
tail -5 $W/dg-build.log
CAPTURE_CASES=${1:-} python3 scripts/device/capture_indexer.py $W/dgemm $W/idx > $W/idx.log 2>&1
tail -20 $W/idx.log
cd $W || exit 1
tar czf - idx | split -b 15000000 - "$OUT/idx.tgz."
tar czf "$OUT/logs.tgz" dg-build.log idx.log 2>/dev/null
ls -la "$OUT"
