#!/usr/bin/env python3
"""capture_splitk.py OUTDIR -- cuBLAS GEMMs with long K as PyTorch runs them with its default workspace (where
cuBLAS may split K and add the partial sums in an order of its own), for the lab's split-K model.

For each case: A [M, K] and B [N, K] (bf16 or fp16, N(0, 1) from torch's CPU generator seeded per case),
C = torch.mm(A, B.T, out_dtype=torch.float32) and C16 = torch.mm(A, B.T) (the input's type), three runs each
(deterministic or not), and the kernels the profiler saw (their names say split-K, stream-K, the tile).
Writes OUTDIR/NAME.npz (a and b as the bit patterns of their dtype, c float32, c16 bit patterns) and
OUTDIR/meta.json. Runs on the device machine (torch, CUDA)."""
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
}


def bits(t):
    return t.view(torch.int16).cpu().numpy().view(np.uint16)


def kernels(fn):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    meta = {"what": "cuBLAS GEMMs with long K and the default workspace (scripts/capture_splitk.py)",
            "device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "cublas": torch.backends.cuda.preferred_blas_library().name if hasattr(torch.backends.cuda, "preferred_blas_library") else "",
            "workspace": os.environ.get("CUBLAS_WORKSPACE_CONFIG", "(default)"), "cases": {}}
    for i, (name, (dt, m, n, k)) in enumerate(CASES.items()):
        g = torch.Generator().manual_seed(9000 + i)
        dtype = torch.bfloat16 if dt == "bf16" else torch.float16
        a = torch.randn(m, k, generator=g).to(dtype).cuda()
        b = torch.randn(n, k, generator=g).to(dtype).cuda()
        f32 = lambda: torch.mm(a, b.T, out_dtype=torch.float32)  # noqa: E731
        f16 = lambda: torch.mm(a, b.T)  # noqa: E731
        c = [f32() for _ in range(3)]
        c16 = [f16() for _ in range(3)]
        torch.cuda.synchronize()
        det = all(torch.equal(x.view(torch.int32), c[0].view(torch.int32)) for x in c) and \
            all(torch.equal(x.view(torch.int16), c16[0].view(torch.int16)) for x in c16)
        meta["cases"][name] = {"dtype": dt, "M": m, "N": n, "K": k, "seed": 9000 + i, "deterministic_3_runs": det,
                               "kernels_f32": kernels(f32), "kernels_16": kernels(f16)}
        np.savez_compressed(os.path.join(out, name + ".npz"), a=bits(a), b=bits(b), c=c[0].cpu().numpy(),
                            c16=bits(c16[0]))
        print(name, json.dumps(meta["cases"][name]), flush=True)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
