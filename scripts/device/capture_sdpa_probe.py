#!/usr/bin/env python3
"""capture_sdpa_probe.py OUTDIR -- designed and edge-length SDPA captures for the lab's sdpa-* models
(complements scripts/device/capture_sdpa.py, whose NAME.npz / meta.json format it keeps, so sdpa-check.sh reads both).

Three sets, each case one NAME.npz (q, k, v, out_<backend>, lse_<backend>) and an entry in meta.json:
  e*  every backend at lengths on either side of the kernels' key blocks (63-1025), fp16 and bf16, head dims 64
      and 128, full and causal: the block size, order and partial-block handling of each kernel;
  z*  cuDNN and memory-efficient with q = 0 (every score 0, so p = 1 everywhere): the LSE is log(L) as the
      kernel computes it and O the plain mean of V (isolates the log, the reciprocal and the P.V sum);
  r*  ascending and descending scores (the row maximum moves in every key block, or never): the rescale;
  m*  the math backend's steps at rows longer than the warp softmax's (1500-8192 keys): its own
      decomposition replayed in torch (q, k times fl32(sqrt(scale)); S = q k^T; P = softmax(S); O32 = P v in
      fp32), S and P for the first 16 rows, O32 whole, and every kernel the profiler saw with its full name.
Inputs from torch's CPU generator (seed per case). Runs on the device machine (torch, CUDA)."""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_sdpa import BACKENDS, bits, device_meta, kernels, lse_of  # noqa: E402  (the shared capture helpers)


def run_case(out, meta, name, q, k, v, causal, scale, backends, info):
    arrays = {"q": bits(q), "k": bits(k), "v": bits(v)}
    info.update({"hq": q.shape[1], "hkv": k.shape[1], "L": q.shape[2], "D": q.shape[3], "causal": causal,
                 "scale": scale, "backends": {}})
    for bname in backends:
        rec = {}
        call = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)  # noqa: E731
        try:
            with sdpa_kernel([BACKENDS[bname]]):
                outs = [call() for _ in range(2)]
                rec["kernels"] = [n[:160] for n in kernels(call) if "elementwise" not in n]
            rec["deterministic"] = torch.equal(outs[0].view(torch.int16), outs[1].view(torch.int16))
            arrays["out_" + bname] = bits(outs[0])
            lse = lse_of(bname, q, k, v, causal, scale)
            if lse is not None:
                arrays["lse_" + bname] = lse.float().cpu().numpy()
                rec["lse"] = True
        except Exception as e:  # the backend refuses the case
            rec["error"] = str(e).splitlines()[0][:200]
        info["backends"][bname] = rec
    np.savez_compressed(os.path.join(out, name + ".npz"), **arrays)
    meta["cases"][name] = info
    print(name, info["L"], info["D"], info["dtype"], causal, {b: ("err" if "error" in r else "ok")
                                                              for b, r in info["backends"].items()}, flush=True)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    meta = device_meta("designed and edge-length SDPA captures (scripts/device/capture_sdpa_probe.py)")
    meta["layout"] = "q [1, Hq, L, D], k and v [1, Hkv, L, D]; outputs [1, Hq, L, D]; lse as the op returns it"
    seed = 9000
    dev = "cuda"
    # e*: edge lengths
    i = 0
    for L in (63, 64, 65, 127, 128, 129, 191, 192, 193, 257, 513, 1025):
        for D, dt, causal in ((64, "fp16", False), (128, "bf16", True)):
            dtype = torch.float16 if dt == "fp16" else torch.bfloat16
            g = torch.Generator().manual_seed(seed)
            q, k, v = (torch.randn(1, 2, L, D, generator=g).to(dtype).to(dev) for _ in range(3))
            run_case(out, meta, "e%d" % i, q, k, v, causal, None, BACKENDS, {"dtype": dt, "seed": seed,
                                                                             "inputs": "normal"})
            seed += 1
            i += 1
    # z*: q = 0
    for j, L in enumerate((1, 3, 77, 100, 129, 1000)):
        g = torch.Generator().manual_seed(seed)
        v = torch.randn(1, 1, L, 64, generator=g).to(torch.float16).to(dev)
        q = torch.zeros(1, 1, L, 64, dtype=torch.float16, device=dev)
        k = torch.randn(1, 1, L, 64, generator=g).to(torch.float16).to(dev)
        run_case(out, meta, "z%d" % j, q, k, v, False, None, ("efficient", "cudnn", "flash"),
                 {"dtype": "fp16", "seed": seed, "inputs": "q zero"})
        seed += 1
    # r*: scores rising or falling along the keys (k_j = c_j u, q rows along u)
    for j, (L, order) in enumerate(((512, "ascending"), (512, "descending"), (300, "ascending"))):
        g = torch.Generator().manual_seed(seed)
        u = torch.randn(64, generator=g)
        u = u / u.norm()
        c = torch.linspace(-4, 4, L) if order == "ascending" else torch.linspace(4, -4, L)
        k = (c[:, None] * u[None, :] * 8 + 0.05 * torch.randn(L, 64, generator=g))[None, None]
        q = (u[None, :] * torch.rand(L, 1, generator=g) * 2 + 0.05 * torch.randn(L, 64, generator=g))[None, None]
        v = torch.randn(1, 1, L, 64, generator=g)
        q, k, v = (x.to(torch.float16).to(dev) for x in (q, k, v))
        run_case(out, meta, "r%d" % j, q, k, v, False, None, BACKENDS, {"dtype": "fp16", "seed": seed,
                                                                        "inputs": "scores " + order})
        seed += 1
    # m*: the math backend's steps
    for j, L in enumerate((1500, 2048, 2049, 3000, 4096, 8192)):
        g = torch.Generator().manual_seed(seed)
        q, k, v = (torch.randn(1, 1, L, 64, generator=g).to(torch.float16).to(dev) for _ in range(3))
        with sdpa_kernel([SDPBackend.MATH]):
            o = F.scaled_dot_product_attention(q, k, v)
            kern = kernels(lambda: F.scaled_dot_product_attention(q, k, v))
        sf = math.sqrt(1.0 / math.sqrt(64))
        S = torch.matmul(q.float() * sf, k.float().transpose(-2, -1) * sf)
        P = torch.softmax(S, -1)
        O32 = torch.matmul(P, v.float())
        skern = kernels(lambda: torch.softmax(S, -1))
        gkern = kernels(lambda: torch.matmul(P, v.float()))
        np.savez_compressed(os.path.join(out, "m%d.npz" % j), q=bits(q), k=bits(k), v=bits(v), out_math=bits(o),
                            S16=S[0, 0, :16].cpu().numpy(), P16=P[0, 0, :16].cpu().numpy(),
                            O32=O32[0, 0].cpu().numpy())
        meta["cases"]["m%d" % j] = {"dtype": "fp16", "hq": 1, "hkv": 1, "L": L, "D": 64, "causal": False,
                                    "scale": None, "seed": seed, "inputs": "normal",
                                    "replay_equals_sdpa": bool(torch.equal(O32.half().view(torch.int16),
                                                                           o.view(torch.int16))),
                                    "kernels_sdpa": [n[:200] for n in kern], "kernels_softmax": skern,
                                    "kernels_pv": gkern, "backends": {"math": {"kernels": [n[:160] for n in kern]}}}
        print("m%d" % j, L, meta["cases"]["m%d" % j]["replay_equals_sdpa"], skern, gkern, flush=True)
        seed += 1
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
