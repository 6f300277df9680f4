#!/usr/bin/env python3
"""probe_cudnn_stats.py OUTDIR -- designed SDPA inputs for the order of cuDNN's row sums (and the flash backend's,
as a control), in scripts/device/capture_sdpa.py's format (NAME.npz with q, k, v, out_<backend>, lse_<backend>; meta.json).

Every row r has one key (key r) with score 0 and every other key the score -265, so that m = 0 and each other
p is exp(-265/16) = 6.4e-8, just above half an ulp of 1: added to 1 it rounds up, added to another such value it
does not. The stats (m scale + log L, near 0, so fine) then tell where each thread's sum starts and in which
order partial sums meet. D = 256: k_j = e_j + e_255 and q_r = 265 e_r - 265 e_255 give S = 265 [j = r] - 265
exactly in fp16; v_j = e_j. Cases o128 (128 keys, one block) and o250 (250 keys, two blocks), one row per
position of the maximum.
Runs on the device machine (torch, CUDA)."""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_sdpa import bits, device_meta  # noqa: E402  (the shared capture helpers)

D = 256


def case(L):
    k, q, v = torch.zeros(1, 1, L, D), torch.zeros(1, 1, L, D), torch.zeros(1, 1, L, D)
    for j in range(L):
        k[0, 0, j, j] = 1.0
        k[0, 0, j, D - 1] = 1.0
        q[0, 0, j, j] = 265.0
        q[0, 0, j, D - 1] = -265.0
        v[0, 0, j, j] = 1.0
    return q, k, v


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    meta = device_meta("cuDNN stats probe (scripts/device/probe_cudnn_stats.py)")
    for name, L in (("o128", 128), ("o250", 250)):
        run(out, meta, name, *case(L))
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


def run(out, meta, name, q, k, v):
    q, k, v = (x.to(torch.float16).cuda() for x in (q, k, v))
    arrays = {"q": bits(q), "k": bits(k), "v": bits(v)}
    info = {"dtype": "fp16", "hq": 1, "hkv": 1, "L": k.shape[2], "D": D, "causal": False, "scale": None,
            "inputs": "designed (probe_cudnn_stats.py)", "backends": {}}
    for bname in ("cudnn", "flash"):  # each backend's own op: the output and its stats from one call
        rec = {}
        try:
            if bname == "cudnn":
                o, lse = torch.ops.aten._scaled_dot_product_cudnn_attention(q, k, v, None, True, 0.0, False, False)[:2]
            else:
                o, lse = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, False, False)[:2]
            arrays["out_" + bname] = bits(o)
            arrays["lse_" + bname] = lse.float().cpu().numpy()
            rec["lse"] = True
        except Exception as e:
            rec["error"] = str(e).splitlines()[0][:200]
        info["backends"][bname] = rec
    np.savez_compressed(os.path.join(out, name + ".npz"), **arrays)
    meta["cases"][name] = info
    print(name, info["L"], {b: ("err " + r["error"] if "error" in r else "ok") for b, r in info["backends"].items()},
          flush=True)


if __name__ == "__main__":
    main()
