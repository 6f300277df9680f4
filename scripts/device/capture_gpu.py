#!/usr/bin/env python3
"""capture_gpu.py -- capture what an NVIDIA GPU's tensor cores and attention kernels compute.

Run on a machine with a Hopper GPU and PyTorch:  python3 scripts/device/capture_gpu.py OUTDIR
Writes OUTDIR/captures.npz (one array per name below) and OUTDIR/meta.json (GPU, driver,
PyTorch, CUDA). `scripts/device/unpack_captures.sh OUTDIR tests/data/gpu` turns the archive into
.npy files that `amla-lab matmul`, `run --load` and `compare` read.

GEMM cases, NAME = gemm-DTYPE-KIND-K (K = 16, 256; 8192 for normal and wide): A [M, K] and
B [N, K] (their exact values: float32 for bf16, float16 for fp16/e4m3/e5m2), C = A B^T as the
GPU returns it in float32 (NAME.c):
  bf16/fp16: torch.mm(A, B.T, out_dtype=torch.float32) (cuBLAS, FP32 accumulation);
  e4m3/e5m2: torch._scaled_mm(A, B.T, scale 1, out_dtype=float32) (B is e4m3 in both: cuBLAS
             has no e5m2 x e5m2), without and with
             use_fast_accum (NAME.c, NAME.cfast).
KINDS: normal (N(0,1)), cancel (each row holds x and -x pairs in shuffled order, plus a small
residue), carry (values just below powers of two whose partial sums carry out of the top
bit), tiny (products in the subnormal range of FP32), wide (exponents spread over 2^-20..2^20).
Attention: q, k, v [heads, S, 128] fp16 N(0,1), prefill, non-causal, and the outputs of
scaled_dot_product_attention with the flash, efficient and math backends.
"""
import json
import os
import sys

import numpy as np
import torch

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
# "long": only the K = 8192 GEMMs, into captures-long.npz; run it with
# CUBLAS_WORKSPACE_CONFIG=:0:0 so that cuBLAS, without a workspace, cannot split K (a split-K
# kernel adds partial sums in an order of its own)
SET = sys.argv[2] if len(sys.argv) > 2 else "all"
os.makedirs(OUT, exist_ok=True)
dev = "cuda"
gen = torch.Generator(device="cpu").manual_seed(20261122)
arrays = {}
log = []


def randn(*shape):
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


def make(kind, m, k):
    """Inputs of one kind as float64 (rounded to the dtype later)."""
    if kind == "normal":
        return randn(m, k)
    if kind == "cancel":
        h = randn(m, k // 2)
        x = torch.cat([h, -h], dim=1)
        perm = torch.randperm(k, generator=gen)
        return x[:, perm] + 1e-3 * randn(m, k)
    if kind == "carry":
        e = torch.randint(-3, 4, (m, k), generator=gen).double()
        return torch.sign(randn(m, k)) * (2.0 ** e) * (1 - 2.0 ** -9 * torch.rand(m, k, generator=gen, dtype=torch.float64))
    if kind == "tiny":
        return randn(m, k) * 2.0 ** -66
    if kind == "wide":
        e = torch.randint(-20, 21, (m, k), generator=gen).double()
        return randn(m, k) * 2.0 ** e
    raise ValueError(kind)


def save(name, **parts):
    for p, a in parts.items():
        arrays[f"{name}.{p}"] = a


def exact(t, dtype):
    """The values exactly, in the smallest numpy float that holds them (fp16 holds fp16, e4m3, e5m2)."""
    return t.float().cpu().numpy().astype(np.float32 if dtype == "bf16" else np.float16)


def gemm_case(dtype, kind, m, n, k):
    a = make(kind, m, k)
    b = make(kind, n, k)
    if dtype in ("bf16", "fp16"):
        t = torch.bfloat16 if dtype == "bf16" else torch.float16
        ag, bg = a.to(t).to(dev), b.to(t).to(dev)
        try:
            c = torch.mm(ag, bg.t(), out_dtype=torch.float32)
        except TypeError:
            c = torch.matmul(ag.float(), bg.float().t())  # not tensor cores: flagged in the log
            log.append(f"{dtype}: torch.mm has no out_dtype; FP32 matmul used (not a tensor-core capture)")
        name = f"gemm-{dtype}-{kind}-{k}"
        save(name, a=exact(ag, dtype), b=exact(bg, dtype), c=c.float().cpu().numpy())
    else:
        # e5m2 x e5m2 is not a cuBLAS combination: the e5m2 case multiplies e5m2 A by e4m3 B
        t = torch.float8_e4m3fn if dtype == "e4m3" else torch.float8_e5m2
        fmax = 448.0 if dtype == "e4m3" else 57344.0
        a = a / a.abs().max() * fmax / 4
        b = b / b.abs().max() * 448.0 / 4
        ag, bg = a.to(t).to(dev), b.to(torch.float8_e4m3fn).to(dev)
        one = torch.ones((), device=dev, dtype=torch.float32)
        name = f"gemm-{dtype}-{kind}-{k}"
        save(name, a=exact(ag, dtype), b=exact(bg, dtype))
        for fast in (False, True):
            c = torch._scaled_mm(ag, bg.t(), scale_a=one, scale_b=one, out_dtype=torch.float32, use_fast_accum=fast)
            arrays[f"{name}.c" + ("fast" if fast else "")] = c.float().cpu().numpy()


for dtype in ("bf16", "fp16", "e4m3", "e5m2"):
    if SET == "long":
        for kind in ("normal", "wide"):
            gemm_case(dtype, kind, 16, 16, 8192)
        continue
    for k in (16, 256):
        for kind in ("normal", "cancel", "carry", "tiny", "wide"):
            if dtype in ("e4m3", "e5m2") and kind == "tiny":
                continue
            gemm_case(dtype, kind, 32, 32, k)
    for kind in ("normal", "wide"):
        gemm_case(dtype, kind, 16, 16, 8192)

# attention: FA2 settings (head dim 128, prefill), FP16
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

H, S, D = 4, 256, 128
if SET == "long":
    H = 0
q, k, v = (randn(1, H, S, D).to(torch.float16).to(dev) for _ in range(3))
if H:
    save("attn", q=q[0].cpu().numpy(), k=k[0].cpu().numpy(), v=v[0].cpu().numpy())
for name, be in () if not H else (("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                 ("math", SDPBackend.MATH)):
    try:
        with sdpa_kernel(be):
            o = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        arrays[f"attn.{name}"] = o[0].cpu().numpy()
    except RuntimeError as e:
        log.append(f"sdpa {name}: {e}")

np.savez(os.path.join(OUT, "captures-long.npz" if SET == "long" else "captures.npz"), **arrays)
meta = {
    "gpu": torch.cuda.get_device_name(0),
    "capability": list(torch.cuda.get_device_capability(0)),
    "torch": torch.__version__,
    "cuda": torch.version.cuda,
    "cublas": torch.backends.cuda.preferred_blas_library().name if hasattr(torch.backends.cuda, "preferred_blas_library") else "",
    "driver": os.popen("nvidia-smi --query-gpu=driver_version --format=csv,noheader").read().strip(),
    "arrays": len(arrays),
    "log": log,
    "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG", ""),
}
with open(os.path.join(OUT, "meta-long.json" if SET == "long" else "meta.json"), "w") as f:
    json.dump(meta, f, indent=1)
print(json.dumps(meta, indent=1))
