#!/usr/bin/env python3
"""[CAPTURE_CASES=a,b] capture_sdpa.py OUTDIR -- every PyTorch SDPA backend (math, memory-efficient, cuDNN, flash)
on the same inputs, with the kernels each launched, for the lab's sdpa-* models: OUTDIR/NAME.npz and meta.json.

Each case: q [1, Hq, L, D], k and v [1, Hkv, L, D] (c*: Lk keys, the case's 9th entry) (Hkv < Hq: GQA through enable_gqa), N(0, 1) or outlier
inputs from torch's CPU generator (seed per case) in fp16 or bf16; for each backend (torch.nn.attention.sdpa_kernel)
the output of scaled_dot_product_attention (full or causal, the default or an explicit scale), three runs
(deterministic or not), the CUDA kernels the profiler saw, and the log-sum-exp where the backend's own op returns
one (aten._scaled_dot_product_{efficient,cudnn,flash}_attention with compute_log_sumexp / return_debug_mask off).
A backend that refuses the case is recorded with its error. Runs on the device machine (torch, CUDA)."""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

# name: dtype, Hq, Hkv, L, D, causal, scale (None: 1/sqrt(D)), inputs[, key count when not L]
CASES = {
    "s1": ("fp16", 4, 4, 512, 128, False, None, "normal"),
    "s2": ("fp16", 4, 4, 512, 128, True, None, "normal"),
    "s3": ("bf16", 4, 4, 512, 128, False, None, "normal"),
    "s4": ("fp16", 4, 4, 77, 64, False, None, "normal"),
    "s5": ("fp16", 4, 4, 1000, 64, True, None, "normal"),
    "s6": ("bf16", 4, 4, 77, 256, True, None, "normal"),
    "s7": ("fp16", 4, 2, 1000, 128, False, None, "normal"),
    "s8": ("fp16", 4, 4, 512, 128, False, 0.1, "normal"),
    "s9": ("bf16", 4, 4, 512, 64, False, None, "outlier"),
    "s10": ("fp16", 1, 1, 4096, 128, False, None, "normal"),
    # taken after the sdpa-* models were written, to check them on shapes and seeds they were not fitted on
    "v1": ("fp16", 8, 8, 333, 128, True, None, "normal"),
    "v2": ("bf16", 4, 4, 700, 64, False, None, "outlier"),
    "v3": ("fp16", 2, 2, 2000, 128, False, None, "normal"),
    "v4": ("fp16", 8, 2, 500, 64, True, None, "normal"),
    "v5": ("bf16", 4, 4, 256, 128, False, 0.05, "normal"),
    "v6": ("fp16", 1, 1, 1500, 64, False, None, "outlier"),
    "v7": ("bf16", 2, 2, 129, 256, True, None, "normal"),
    "v8": ("fp16", 4, 4, 1024, 96, False, None, "normal"),
    # is_causal on non-square shapes (L queries, a 9th entry of keys): PyTorch masks top-left there
    "c1": ("fp16", 4, 4, 100, 128, True, None, "normal", 333),
    "c2": ("bf16", 4, 4, 300, 64, True, None, "normal", 77),
    "c3": ("fp16", 4, 2, 1, 128, True, None, "normal", 500),
    "c4": ("bf16", 2, 2, 64, 128, True, None, "normal", 1000),
    "c5": ("fp16", 4, 4, 257, 64, True, None, "normal", 129),
    "c6": ("bf16", 8, 2, 40, 128, True, None, "normal", 700),
    "c7": ("fp16", 2, 2, 500, 256, True, None, "normal", 200),
}
BACKENDS = {"math": SDPBackend.MATH, "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}


def bits(t):
    return t.contiguous().view(torch.int16).cpu().numpy().view(np.uint16)


def lse_of(name, q, k, v, causal, scale):
    """The backend's own op with its log-sum-exp, where it has one (GQA: the kv heads repeated as SDPA does)."""
    if q.shape[1] != k.shape[1]:
        r = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(r, 1), v.repeat_interleave(r, 1)
    if name == "efficient":
        return torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, None, True, 0.0, causal, scale=scale)[1]
    if name == "cudnn":
        return torch.ops.aten._scaled_dot_product_cudnn_attention(q, k, v, None, True, 0.0, causal, False,
                                                                   scale=scale)[1]
    if name == "flash":
        return torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False, scale=scale)[1]
    return None


def kernels(fn):
    """The CUDA kernels (full names) the profiler sees while fn runs."""
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})


def device_meta(what):
    """meta.json's head: what was captured, on which GPU, with which torch, CUDA, cuDNN and math settings."""
    return {"what": what, "device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(),
            "allow_fp16_bf16_reduction_math_sdp": torch.backends.cuda.fp16_bf16_reduction_math_sdp_allowed()
            if hasattr(torch.backends.cuda, "fp16_bf16_reduction_math_sdp_allowed") else None,
            "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32, "cases": {}}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    meta = device_meta("PyTorch SDPA backends on the same inputs (scripts/device/capture_sdpa.py)")
    meta.update({
            "layout": "q [1, Hq, L, D], k and v [1, Hkv, L, D]; outputs [1, Hq, L, D]; lse [1, Hq, L] float32 (natural log)",
            "input_generation": "torch.Generator().manual_seed(seed): q, k, v by torch.randn in float32 then .to(dtype); "
                                "outlier: each of q, k, v times 10 where a torch.rand draw of the same shape is below 0.01"})
    only = os.environ.get("CAPTURE_CASES")
    for i, (name, (dt, hq, hkv, L, D, causal, scale, kind, *lk)) in enumerate(CASES.items()):
        if only and name not in only.split(","):
            continue
        g = torch.Generator().manual_seed(7000 + i)
        dtype = torch.float16 if dt == "fp16" else torch.bfloat16
        xs = []
        Lk = lk[0] if lk else L
        for h, n in ((hq, L), (hkv, Lk), (hkv, Lk)):
            x = torch.randn(1, h, n, D, generator=g)
            if kind == "outlier":
                x = torch.where(torch.rand(1, h, n, D, generator=g) < 0.01, x * 10, x)
            xs.append(x.to(dtype).cuda())
        q, k, v = xs
        arrays = {"q": bits(q), "k": bits(k), "v": bits(v)}
        info = {"dtype": dt, "hq": hq, "hkv": hkv, "L": L, "Lk": Lk, "D": D, "causal": causal, "scale": scale, "inputs": kind,
                "seed": 7000 + i, "backends": {}}
        for bname, be in BACKENDS.items():
            call = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,  # noqa: E731
                                                          enable_gqa=hkv != hq)
            rec = {}
            try:
                with sdpa_kernel([be]):
                    outs = [call() for _ in range(3)]
                    rec["kernels"] = sorted({n.split("(")[0] for n in kernels(call)})
                rec["deterministic_3_runs"] = all(torch.equal(o.view(torch.int16), outs[0].view(torch.int16))
                                                  for o in outs)
                arrays["out_" + bname] = bits(outs[0])
            except Exception as e:  # the backend does not take this case
                rec["error"] = str(e).splitlines()[0][:300]
            if "error" not in rec:
                try:
                    lse = lse_of(bname, q, k, v, causal, scale)
                    if lse is not None:
                        arrays["lse_" + bname] = lse.float().cpu().numpy()
                        rec["lse"] = True
                except Exception as e:
                    rec["lse_error"] = str(e).splitlines()[0][:300]
            info["backends"][bname] = rec
        np.savez_compressed(os.path.join(out, name + ".npz"), **arrays)
        meta["cases"][name] = info
        print(name, json.dumps(info), flush=True)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
