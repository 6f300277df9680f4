#!/usr/bin/env python3
"""[CAPTURE_CASES=a,b] capture_flashmla.py FLASHMLA OUTDIR -- run the real FlashMLA dense-decode kernel on an H100 and
keep its outputs with their exact inputs, in the layout of shared/captures/flashmla (its meta.json
names every key): for each case OUTDIR/NAME.npz and one OUTDIR/meta.json.

FLASHMLA is a source tree of deepseek-ai/FlashMLA at 9c5dfab (csrc/, flash_mla/) with CUTLASS
e94e888 (its submodule) in csrc/cutlass; the extension is built here with setup.py's flags
(--use_fast_math, sm_90a). Runs on the device machine (torch, CUDA, nvcc); the lab's side is
scripts/checks/flashmla-check.sh OUTDIR. The cases add FP16 (the shared captures are BF16 only) and a
uniform distribution to the shared ones; the inputs are drawn as meta.json's input_generation says.
"""
import json
import os
import sys
import time

import numpy as np
import torch
from torch.utils import cpp_extension

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'checks'))  # capture_inputs
from capture_inputs import describe, flashmla_qk  # noqa: E402

NVCC_FLAGS = ["-O3", "-std=c++17", "-DNDEBUG", "-D_USE_MATH_DEFINES", "-Wno-deprecated-declarations",
              "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__", "-U__CUDA_NO_HALF2_OPERATORS__",
              "-U__CUDA_NO_BFLOAT16_CONVERSIONS__", "--expt-relaxed-constexpr", "--expt-extended-lambda",
              "--use_fast_math", "--ptxas-options=--register-usage-level=10", "-gencode",
              "arch=compute_90a,code=sm_90a", "--threads", "8"]
CXX_FLAGS = ["-O3", "-std=c++17", "-DNDEBUG", "-Wno-deprecated-declarations",
             "-I/usr/local/cuda/include/cccl"]  # CUDA 13 keeps libcu++ (cuda/std/...) there

# name: dtype, b, s_q, h_q, seqlens, causal, distribution (kind, parameter), seed
CASES = {
    "f1": ("fp16", 1, 1, 128, [4096], False, ("normal", 1.0), 201),
    "f2": ("fp16", 1, 1, 128, [1000], False, ("normal", 4.0), 202),
    "f3": ("fp16", 4, 1, 128, [2048, 1000, 129, 64], False, ("normal", 1.0), 203),
    "f4": ("fp16", 1, 2, 64, [2048], True, ("normal", 1.0), 204),
    "f5": ("fp16", 1, 1, 16, [3000], False, ("uniform", 2.0), 205),
    "u1": ("bf16", 2, 1, 128, [1500, 700], False, ("uniform", 3.0), 206),
    # second round: s_q > 1 (more m-blocks, fewer SM parts), a key count of 1, long and
    # many-entry batches, small and large logits
    "g1": ("bf16", 1, 4, 128, [3000], True, ("normal", 1.0), 301),
    "g2": ("fp16", 8, 1, 128, [777, 1500, 64, 1, 1200, 333, 129, 1024], False, ("normal", 1.0), 302),
    "g3": ("bf16", 1, 1, 128, [12000], False, ("normal", 0.1), 303),
    "g4": ("fp16", 2, 3, 32, [700, 65], True, ("normal", 1.0), 304),
    "g5": ("bf16", 3, 1, 64, [4096, 4096, 4096], False, ("normal", 2.0), 305),
    "g6": ("fp16", 1, 1, 128, [2000], False, ("normal", 8.0), 306),
}


FLASHMLA_SOURCES = ["flash_api.cpp", "kernels/get_mla_metadata.cu", "kernels/mla_combine.cu", "kernels/splitkv_mla.cu"]


def build(root, files=FLASHMLA_SOURCES, bdir=None):
    """The torch extension flash_mla_cuda from root/csrc/FILES (CUTLASS in root/csrc/cutlass)."""
    src = os.path.join(root, "csrc")
    t0 = time.time()
    sources = [os.path.join(src, f) for f in files]
    bdir = bdir or os.environ.get("FLASHMLA_BUILD", "/tmp/flashmla-build")
    os.makedirs(bdir, exist_ok=True)
    if not cpp_extension.is_ninja_available():  # setuptools without ninja: one file at a time
        from setuptools import setup
        setup(name="flash_mla_cuda", script_args=["-q", "build_ext", "--build-lib", bdir, "--build-temp", bdir + "/t"],
              ext_modules=[cpp_extension.CUDAExtension(
                  name="flash_mla_cuda", sources=sources, include_dirs=[src, os.path.join(src, "cutlass", "include")],
                  extra_compile_args={"cxx": CXX_FLAGS, "nvcc": NVCC_FLAGS})],
              cmdclass={"build_ext": cpp_extension.BuildExtension.with_options(use_ninja=False)})
        sys.path.insert(0, bdir)
        import flash_mla_cuda
        print(f"built (setuptools) in {time.time() - t0:.0f} s", flush=True)
        return flash_mla_cuda
    mod = cpp_extension.load(
        name="flash_mla_cuda",
        sources=sources,
        extra_cflags=CXX_FLAGS, extra_cuda_cflags=NVCC_FLAGS,
        extra_include_paths=[src, os.path.join(src, "cutlass", "include")],
        build_directory=bdir, verbose=False)
    print(f"built in {time.time() - t0:.0f} s", flush=True)
    return mod


def to_torch(b16, dtype):
    t = torch.from_numpy(b16.view(np.int16).copy()).cuda()
    return t.view(torch.bfloat16 if dtype == "bf16" else torch.float16)


def fwd_flashmla(mod, q, kc, sl, table, scale, causal, m, n):
    return mod.fwd_kvcache_mla(q, kc, 512, sl, table, scale, causal, m, n)


def run_case(mod, name, case, outdir, fwd=fwd_flashmla):
    dtype, b, s_q, h_q, seqlens, causal, dist, seed = case
    rs = np.random.RandomState(seed)
    q, k = flashmla_qk(rs, b, s_q, h_q, seqlens, dist, dtype)
    smax = max(seqlens)
    blocks = (smax + 63) // 64
    kpad = np.zeros((b, blocks * 64, 576), np.uint16)
    kpad[:, :smax] = k
    kc = to_torch(kpad.reshape(b * blocks, 64, 1, 576), dtype)
    qt = to_torch(q, dtype)
    sl = torch.tensor(seqlens, dtype=torch.int32, device="cuda")
    table = torch.arange(b * blocks, dtype=torch.int32, device="cuda").view(b, blocks)
    scale = 576 ** -0.5
    tsm, ns = mod.get_mla_metadata(sl, s_q * h_q, 1)
    tsm[:, 5:] = 0  # never written by the kernel (torch::empty)
    res = {}
    for path, (m, n) in {"": (tsm, ns),
                         "_nosplit": (torch.tensor([[0, 0, b - 1, seqlens[-1], 0, 0, 0, 0]], dtype=torch.int32,
                                                   device="cuda"),
                                      torch.arange(b + 1, dtype=torch.int32, device="cuda"))}.items():
        runs = [fwd(mod, qt, kc, sl, table, scale, causal, m, n) for _ in range(3)]
        torch.cuda.synchronize()
        same = all(torch.equal(r[0], runs[0][0]) and torch.equal(r[1], runs[0][1]) for r in runs)
        out, lse = runs[0]
        res["out" + path] = out.view(torch.int16).cpu().numpy().view(np.uint16)
        res["lse" + path] = np.ascontiguousarray(lse.float().cpu().numpy())  # a transposed view for s_q > 1
        res["tile_scheduler_metadata" + path] = m.cpu().numpy()
        res["num_splits" + path] = n.cpu().numpy()
        res["deterministic" + path] = same
    np.savez_compressed(os.path.join(outdir, name + ".npz"), q=q, k=k, seqlens=np.array(seqlens, np.int32),
             **{key: v for key, v in res.items() if not key.startswith("deterministic")})
    return {"dtype": dtype, "b": b, "s_q": s_q, "h_q": h_q, "seqlens": seqlens, "causal": causal,
            "causal_effective": causal and s_q > 1,
            "distribution": describe(dist),
            "seed": seed, "num_sm_parts": int(tsm.shape[0]), "num_sm_parts_nosplit": 1,
            "num_splits": res["num_splits"].tolist(),
            "deterministic_3_runs": bool(res["deterministic"] and res["deterministic_nosplit"])}


def main():
    root, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    mod = build(root)
    cases = {}
    only = os.environ.get("CAPTURE_CASES")  # a comma-separated subset (the device returns 8 files at most)
    for name, case in CASES.items():
        if only and name not in only.split(","):
            continue
        cases[name] = run_case(mod, name, case, outdir)
        print(name, json.dumps(cases[name]), flush=True)
    meta = {"what": "Outputs of the real FlashMLA dense-decode kernel (FlashMLA 9c5dfab, CUTLASS e94e888) on "
                    + torch.cuda.get_device_name() + ", with its exact inputs; keys and layout as "
                    "shared/captures/flashmla/meta.json (written by scripts/device/capture_flashmla.py)",
            "device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "nvcc_flags": NVCC_FLAGS, "softmax_scale": "576 ** -0.5 (the API's default)",
            "input_generation": "numpy RandomState(seed): q [b, s_q, h_q, 576] first, then k per batch entry "
                                "[seqlens[i], 576]; normal(0, sigma) or uniform(-a, a) in float64 -> float32 -> bf16 "
                                "(RNE on the float32 bits) or fp16 (numpy astype, RNE)",
            "cases": cases}
    with open(os.path.join(outdir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
