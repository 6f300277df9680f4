#!/usr/bin/env python3
"""capture_splitk.py OUTDIR -- cuBLAS GEMMs with long K as PyTorch runs them with its default workspace (where
cuBLAS may split K and add the partial sums in an order of its own), for the lab's split-K model.

For each case: A [M, K] and B [N, K] (bf16 or fp16, N(0, 1) from torch's CPU generator seeded per case),
C = torch.mm(A, B.T, out_dtype=torch.float32) and C16 = torch.mm(A, B.T) (the input's type); for e4m3,
torch._scaled_mm with unit scales into float32 without and with use_fast_accum (c, cfast); three runs each
(deterministic or not), and the kernels the profiler saw (their names say split-K, stream-K, the tile).
Writes OUTDIR/NAME.npz (a and b as the bit patterns of their dtype, c float32, c16 bit patterns or cfast
float32) and OUTDIR/meta.json. Runs on the device machine (torch, CUDA)."""
import json
import os
import sys

import numpy as np
import torch

# name: dtype, M, N, K
CASES = {
    "bf16-256-k2048": ("bf16", 256, 256, 2048),
    "bf16-256-k4096": ("bf16", 256, 256, 4096),
    "bf16-256-k8192": ("bf16", 256, 256, 8192),
    "bf16-256-k16384": ("bf16", 256, 256, 16384),
    "bf16-128-k8192": ("bf16", 128, 128, 8192),
    "bf16-64x512-k4096": ("bf16", 64, 512, 4096),
    "fp16-256-k4096": ("fp16", 256, 256, 4096),
    "fp16-256-k16384": ("fp16", 256, 256, 16384),
    # FP8: torch._scaled_mm(A, B.T, scale 1, out float32), A and B e4m3; "fast": use_fast_accum
    "e4m3-256-k2048": ("e4m3", 256, 256, 2048),
    "e4m3-256-k4096": ("e4m3", 256, 256, 4096),
    "e4m3-256-k16384": ("e4m3", 256, 256, 16384),
    "e4m3-128-k8192": ("e4m3", 128, 128, 8192),
}


def bits(t):
    if t.element_size() == 1:
        return t.view(torch.uint8).cpu().numpy()
    return t.view(torch.int16).cpu().numpy().view(np.uint16)


def kernels(fn):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    meta = {"what": "cuBLAS GEMMs with long K and the default workspace (scripts/device/capture_splitk.py)",
            "device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "cublas": torch.backends.cuda.preferred_blas_library().name if hasattr(torch.backends.cuda, "preferred_blas_library") else "",
            "workspace": os.environ.get("CUBLAS_WORKSPACE_CONFIG", "(default)"), "cases": {}}
    for i, (name, (dt, m, n, k)) in enumerate(CASES.items()):
        g = torch.Generator().manual_seed(9000 + i)
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "e4m3": torch.float8_e4m3fn}[dt]
        a = torch.randn(m, k, generator=g).to(dtype).cuda()
        b = torch.randn(n, k, generator=g).to(dtype).cuda()
        if dt == "e4m3":
            one = torch.tensor(1.0, device="cuda")
            f32 = lambda: torch._scaled_mm(a, b.T, one, one, out_dtype=torch.float32)  # noqa: E731
            f16 = lambda: torch._scaled_mm(a, b.T, one, one, out_dtype=torch.float32, use_fast_accum=True)  # noqa: E731
        else:
            f32 = lambda: torch.mm(a, b.T, out_dtype=torch.float32)  # noqa: E731
            f16 = lambda: torch.mm(a, b.T)  # noqa: E731
        c = [f32() for _ in range(3)]
        c16 = [f16() for _ in range(3)]
        torch.cuda.synchronize()
        det = all(torch.equal(x.view(torch.int32), c[0].view(torch.int32)) for x in c) and \
            all(torch.equal(x.view(torch.uint8), c16[0].view(torch.uint8)) for x in c16)
        meta["cases"][name] = {"dtype": dt, "M": m, "N": n, "K": k, "seed": 9000 + i, "deterministic_3_runs": det,
                               "kernels_f32": kernels(f32), "kernels_16": kernels(f16)}
        np.savez_compressed(os.path.join(out, name + ".npz"), a=bits(a), b=bits(b), c=c[0].cpu().numpy(),
                            **({"cfast": c16[0].cpu().numpy()} if dt == "e4m3" else {"c16": bits(c16[0])}))
        print(name, json.dumps(meta["cases"][name]), flush=True)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    only = os.environ.get("CAPTURE_CASES")  # a comma-separated subset
    if only:
        CASES = {k: v for k, v in CASES.items() if k in only.split(",")}
    main()
