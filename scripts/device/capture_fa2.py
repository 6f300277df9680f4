#!/usr/bin/env python3
"""capture_fa2.py OUTDIR -- capture PyTorch's SDPA flash backend (FlashAttention-2) on a GPU,
with its exact inputs, for the lab's fa2 variant.

Run on a machine with a GPU and PyTorch:  python3 scripts/device/capture_fa2.py OUTDIR
Writes OUTDIR/NAME/{q,k,v,out}.npy as uint16 bit patterns of the case's dtype in the lab's
layout ([heads, tokens, head dim]; `amla-lab check OUTDIR/NAME --in-format F --out-format F`
reads it), lse.npy (float32 [heads, tokens], the log-sum-exp the kernel returns), and
OUTDIR/meta.json (GPU, PyTorch, CUDA, and per case its shape, dtype, causal flag and the heads
kept). Inputs are N(0, 1) drawn in float64 and rounded to the dtype. The call is
torch.ops.aten._scaled_dot_product_flash_attention (what SDPA's flash backend runs), checked
against scaled_dot_product_attention under sdpa_kernel(FLASH_ATTENTION). Cases whose launch
fills the GPU (so flash_api picks one split) are run with many heads and only the first two
heads are kept (each head's output depends on its own inputs only).
"""
import json
import os
import sys

import numpy as np
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

OUT = sys.argv[1] if len(sys.argv) > 1 else "fa2-captures"
os.makedirs(OUT, exist_ok=True)
gen = torch.Generator(device="cpu").manual_seed(20261123)
DT = {"fp16": torch.float16, "bf16": torch.bfloat16}

# name, dtype, heads, query tokens, key tokens, head dim, causal, heads kept
CASES = [
    ("h128-fp16-split", "fp16", 4, 256, 256, 128, False, 4),
    ("h128-bf16-split", "bf16", 4, 256, 256, 128, False, 4),
    ("h128-bf16-causal-split", "bf16", 4, 256, 256, 128, True, 4),
    ("h64-fp16-causal", "fp16", 4, 256, 256, 64, True, 4),
    ("h64-bf16-split", "bf16", 4, 1024, 1024, 64, False, 4),
    ("h256-bf16-causal-split", "bf16", 4, 256, 256, 256, True, 4),
    ("h256-fp16-split", "fp16", 4, 200, 200, 256, False, 4),
    ("h128-fp16-decode", "fp16", 8, 1, 1000, 128, False, 8),
    ("h128-fp16-full", "fp16", 64, 512, 512, 128, False, 2),
    ("h128-bf16-causal-full", "bf16", 64, 512, 512, 128, True, 2),
    ("h64-bf16-full", "bf16", 64, 512, 512, 64, False, 2),
    ("h256-fp16-causal-full", "fp16", 64, 384, 384, 256, True, 2),
]


def codes(t):
    return t.cpu().contiguous().view(torch.int16).numpy().view(np.uint16)


meta = {"gpu": torch.cuda.get_device_name(0), "capability": list(torch.cuda.get_device_capability(0)),
        "torch": torch.__version__, "cuda": torch.version.cuda, "cases": {}}
for name, dt, h, sq, sk, d, causal, keep in CASES:
    q = torch.randn(1, h, sq, d, generator=gen, dtype=torch.float64).to(DT[dt]).cuda()
    k = torch.randn(1, h, sk, d, generator=gen, dtype=torch.float64).to(DT[dt]).cuda()
    v = torch.randn(1, h, sk, d, generator=gen, dtype=torch.float64).to(DT[dt]).cuda()
    res = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False)
    out, lse = res[0], res[1]
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        o2 = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    same = bool(torch.equal(out, o2))
    d_out = os.path.join(OUT, name)
    os.makedirs(d_out, exist_ok=True)
    for nm, t in (("q", q), ("k", k), ("v", v), ("out", out)):
        np.save(os.path.join(d_out, nm + ".npy"), codes(t[0, :keep]))
    np.save(os.path.join(d_out, "lse.npy"), lse[0, :keep, :sq].float().cpu().numpy())
    if causal:
        open(os.path.join(d_out, "causal"), "w").close()
    meta["cases"][name] = {"dtype": dt, "heads": h, "sq": sq, "sk": sk, "d": d, "causal": causal,
                           "heads_kept": keep, "sdpa_equal": same, "lse_shape": list(lse.shape)}
    print(name, "sdpa_equal", same, "lse", list(lse.shape))
with open(os.path.join(OUT, "meta.json"), "w") as f:
    json.dump(meta, f, indent=1)
print(json.dumps({k: meta[k] for k in ("gpu", "torch", "cuda")}))
