#!/usr/bin/env python3
"""capture_flashmla_serving.py MAIN FORK OUTDIR -- the MLA decode kernels vLLM serves with on Hopper, run on an H100
with their exact inputs kept, one folder a case in the layout `amla-lab check` loads (q.npy [B, Sq, Hq, 576],
k.npy [B, Smax, 576], seqlens.npy int32 [B], out.npy [B, Sq, Hq, 512] uint16 codes, lse.npy float32 [B, Hq, Sq],
`causal` when causal; the scheduler's tile_scheduler_metadata.npy and num_splits.npy as the kernel got them):

  MAIN  a tree of deepseek-ai/FlashMLA (9241ae3 or later: the rewritten decode scheduler) built in place by its
        setup.py (FLASH_MLA_DISABLE_SM100=1): dense BF16/FP16 decode through flash_mla_with_kvcache and the
        scheduler metadata it makes itself (cases d*);
  FORK  a tree of vllm-project/FlashMLA (46d64a8): its dense FP8 decode (csrc/extension/sm90/dense_fp8,
        flash_mla_with_kvcache_fp8 in vLLM) built here as a torch extension with the fork's setup.py flags; q and
        the cache are e4m3 codes (q.npy, k.npy uint8) beside q_scale.npy and k_scale.npy (float32 [1]: the
        per-tensor descale_q / descale_k the kernel takes) (cases e*).

Inputs: numpy RandomState(seed), normal(0, sigma) in float32; BF16/FP16 by RNE; FP8: x / scale rounded to e4m3 by
torch (satfinite not asked: |x / scale| stays below 448 here). The cache is paged (64 tokens a page, pages in a
shuffled order). OUTDIR/meta.json: device, commits, the flags, and per case its call and what the scheduler chose.
"""
import json
import os
import sys
import time

import numpy as np
import torch
from torch.utils import cpp_extension

MAIN, FORK, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
PAGE = 64
E4M3 = torch.float8_e4m3fn

# name: kernel, dtype, B, Sq, Hq, seqlens, causal, sigma, seed
CASES = {
    "d1": ("main", "bf16", 1, 1, 128, [200], False, 1.0, 401),
    "d2": ("main", "bf16", 4, 1, 128, [1000, 37, 513, 2048], False, 1.0, 402),
    "d3": ("main", "fp16", 2, 1, 16, [64, 3], False, 1.0, 403),
    "d4": ("main", "bf16", 3, 2, 64, [700, 1200, 65], True, 1.0, 404),
    "d5": ("main", "bf16", 8, 1, 128, [777, 1500, 64, 1, 1200, 333, 129, 1024], False, 1.0, 405),
    "d7": ("main", "fp16", 1, 1, 16, [5000], False, 4.0, 407),
    "e1": ("fork", "e4m3", 1, 1, 128, [1000], False, 1.0, 501),
    "e2": ("fork", "e4m3", 4, 1, 128, [1000, 37, 513, 2048], False, 1.0, 502),
    "e3": ("fork", "e4m3", 2, 2, 16, [700, 1200], True, 1.0, 503),
    "e4": ("fork", "e4m3", 2, 1, 64, [4096, 300], False, 2.0, 504),
    # validation
    "ev1": ("fork", "e4m3", 3, 1, 128, [1500, 64, 2222], False, 1.0, 551),
    "dv2": ("main", "bf16", 5, 1, 64, [10, 2000, 333, 7, 4097], False, 1.0, 452),
    # last: an empty entry (a device-side assert here would end the process's CUDA context)
    "d6": ("main", "bf16", 3, 1, 128, [300, 0, 129], False, 1.0, 406),
    "dv1": ("main", "bf16", 5, 1, 64, [10, 2000, 333, 0, 4097], False, 1.0, 451),
}
FORK_NVCC = ["-O3", "-std=c++17", "-DNDEBUG", "-D_USE_MATH_DEFINES", "-Wno-deprecated-declarations",
             "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__", "-U__CUDA_NO_HALF2_OPERATORS__",
             "-U__CUDA_NO_BFLOAT16_CONVERSIONS__", "--expt-relaxed-constexpr", "--expt-extended-lambda",
             "--use_fast_math", "--ptxas-options=--register-usage-level=10", "-DNO_PYBIND11=1",
             "-gencode", "arch=compute_90a,code=sm_90a", "--threads", "4"]
FORK_CXX = ["-O3", "-std=c++17", "-DNDEBUG", "-Wno-deprecated-declarations", "-DNO_PYBIND11=1",
            "-I/usr/local/cuda/include/cccl"]


def build_fork():
    src = os.path.join(FORK, "csrc")
    d = os.path.join(src, "extension", "sm90", "dense_fp8")
    t0 = time.time()
    bdir = os.environ.get("FORK_BUILD", "/tmp/fork-build")
    os.makedirs(bdir, exist_ok=True)
    mod = cpp_extension.load(
        name="flashmla_dense_fp8", sources=[os.path.join(d, f) for f in
                                            ("pybind.cpp", "flash_fwd_mla_fp8_sm90.cu", "flash_fwd_mla_metadata.cu")],
        extra_cflags=FORK_CXX, extra_cuda_cflags=FORK_NVCC,
        extra_include_paths=[src, d, os.path.join(src, "cutlass", "include"),
                             os.path.join(src, "cutlass", "tools", "util", "include")],
        build_directory=bdir, verbose=False)
    print(f"fork dense_fp8 built in {time.time() - t0:.0f} s", flush=True)
    return mod


def codes(t):
    t = t.contiguous().cpu()
    return t.view(torch.uint8).numpy() if t.dtype == E4M3 else t.view(torch.int16).numpy().view(np.uint16)


def to_dtype(x32, dt, scale=1.0):
    t = torch.from_numpy(x32)
    if dt == "e4m3":
        return (t / scale).to(E4M3)
    return t.to(torch.bfloat16 if dt == "bf16" else torch.float16)


def run_case(name, case, mods):
    kern, dt, B, Sq, Hq, seqlens, causal, sigma, seed = case
    rs = np.random.RandomState(seed)
    smax = max(max(seqlens), 1)
    qx = rs.normal(0, sigma, (B, Sq, Hq, 576)).astype(np.float32)
    kx = np.zeros((B, smax, 576), np.float32)
    for b, n in enumerate(seqlens):
        kx[b, :n] = rs.normal(0, sigma, (n, 576))
    qs = ks = 1.0
    if dt == "e4m3":  # per-tensor scales as vLLM's FP8 cache keeps them: amax / 448, rounded to float32
        qs, ks = float(np.float32(np.abs(qx).max() / 448)), float(np.float32(np.abs(kx).max() / 448))
    q = to_dtype(qx, dt, qs).cuda()
    k = to_dtype(kx, dt, ks)
    nb = (smax + PAGE - 1) // PAGE
    perm = torch.from_numpy(rs.permutation(B * nb).astype(np.int32))
    kb = k.view(torch.uint8) if dt == "e4m3" else k.view(torch.int16)  # pages moved as raw codes
    kpad = torch.zeros(B, nb * PAGE, 576, dtype=kb.dtype)
    kpad[:, :smax] = kb
    cache = torch.zeros(B * nb, PAGE, 1, 576, dtype=kb.dtype)
    cache[perm.long()] = kpad.view(B * nb, PAGE, 1, 576)
    cache = cache.view(k.dtype).cuda()
    table = perm.view(B, nb).cuda()
    sl = torch.tensor(seqlens, dtype=torch.int32, device="cuda")
    scale = 576 ** -0.5
    info = {"kernel": kern, "dtype": dt, "B": B, "Sq": Sq, "Hq": Hq, "seqlens": seqlens, "causal": causal,
            "sigma": sigma, "seed": seed, "softmax_scale": scale, "page_size": PAGE}
    runs = []
    if kern == "main":
        import flash_mla
        for _ in range(3):
            meta, _ = flash_mla.get_mla_metadata()
            out, lse = flash_mla.flash_mla_with_kvcache(q, cache, table, sl, 512, meta, None, softmax_scale=scale,
                                                        causal=causal)
            runs.append((out, lse))
        tsm, ns = meta.tile_scheduler_metadata, meta.num_splits
    else:
        mod = mods["fork"]
        dq = torch.tensor([qs], dtype=torch.float32, device="cuda")
        dk = torch.tensor([ks], dtype=torch.float32, device="cuda")
        tsm, ns = mod.get_mla_decoding_metadata_dense_fp8(sl, Sq * Hq, 1)
        for _ in range(3):
            out, lse = mod.fwd_kvcache_mla_fp8(q, cache, 512, sl, table, scale, causal, tsm, ns, dq, dk)
            runs.append((out, lse))
        info["q_scale"], info["k_scale"] = qs, ks
    torch.cuda.synchronize()
    out, lse = runs[0]
    info["deterministic_3_runs"] = all(torch.equal(o.view(torch.int16), out.view(torch.int16)) and
                                       torch.equal(l, lse) for o, l in runs)
    info["out_dtype"] = str(out.dtype).replace("torch.", "")
    info["num_sm_parts"] = int(tsm.shape[0])
    info["num_splits"] = ns.cpu().tolist()
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "q.npy"), codes(q))
    np.save(os.path.join(d, "k.npy"), codes(k))
    np.save(os.path.join(d, "seqlens.npy"), np.array(seqlens, np.int32))
    np.save(os.path.join(d, "out.npy"), codes(out))
    np.save(os.path.join(d, "lse.npy"), np.ascontiguousarray(lse.float().cpu().numpy()))
    np.save(os.path.join(d, "tile_scheduler_metadata.npy"), tsm.cpu().numpy())
    np.save(os.path.join(d, "num_splits.npy"), ns.cpu().numpy())
    if dt == "e4m3":
        np.save(os.path.join(d, "q_scale.npy"), np.array([qs], np.float32))
        np.save(os.path.join(d, "k_scale.npy"), np.array([ks], np.float32))
    if causal:
        open(os.path.join(d, "causal"), "w").close()
    return info


def main():
    os.makedirs(OUT, exist_ok=True)
    sys.path.insert(0, MAIN)
    kinds = os.environ.get("CAPTURE_KERNELS", "main,fork").split(",")
    mods = {}
    meta = {"what": "FlashMLA dense decode (deepseek-ai/FlashMLA, its current scheduler) and vLLM's FlashMLA fork's "
                    "dense FP8 decode, with exact inputs (scripts/device/capture_flashmla_serving.py)",
            "device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "main_commit": os.environ.get("MAIN_COMMIT"), "fork_commit": os.environ.get("FORK_COMMIT"),
            "main_build": os.environ.get("FLASHMLA_BUILD"),
            "fork_nvcc_flags": FORK_NVCC, "layout": __doc__.split("\n\n")[0], "cases": {}}
    try:
        if "fork" in kinds:
            mods["fork"] = build_fork()
    except Exception as e:
        meta["fork_build_error"] = str(e)[-2000:]
        print("fork build failed", e, flush=True)
    only = os.environ.get("CAPTURE_CASES")
    for name, case in CASES.items():
        if only and name not in only.split(","):
            continue
        if case[0] not in kinds or (case[0] == "fork" and "fork" not in mods):
            continue
        try:
            meta["cases"][name] = run_case(name, case, mods)
        except Exception as e:
            meta["cases"][name] = {"error": str(e).splitlines()[0][:300]}
        print(name, json.dumps(meta["cases"][name]), flush=True)
    with open(os.path.join(OUT, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
