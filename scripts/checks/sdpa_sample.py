#!/usr/bin/env python3
"""sdpa_sample.py CAPTURES CASE BACKEND OUTDIR [HEAD] -- one backend of an SDPA capture (scripts/device/capture_sdpa.py or
capture_sdpa_probe.py: CAPTURES/CASE.npz and meta.json) as a directory `amla-lab check` reads: q.npy, k.npy, v.npy
and out.npy ([H, L, D], the bit patterns of fp16/bf16), lse.npy ([H, L] float32, where the backend returns one), and
empty marker files naming the format (fp16 or bf16) and causal; HEAD keeps that one head (a smaller CI sample).
Needs numpy."""
import json
import os
import sys

import numpy as np


def main():
    caps, case, backend, out = sys.argv[1:5]
    head = int(sys.argv[5]) if len(sys.argv) > 5 else None
    c = json.load(open(os.path.join(caps, "meta.json")))["cases"][case]
    z = np.load(os.path.join(caps, case + ".npz"))
    sel = slice(head, head + 1) if head is not None else slice(None)
    os.makedirs(out, exist_ok=True)
    for k in ("q", "k", "v"):
        np.save(os.path.join(out, k + ".npy"), z[k][0][sel])
    np.save(os.path.join(out, "out.npy"), z["out_" + backend][0][sel])
    if "lse_" + backend in z:  # [1, H, L (padded), (1)] as the op returns it -> [H, L]
        h, n = z["q"].shape[1], z["q"].shape[2]
        np.save(os.path.join(out, "lse.npy"),
                z["lse_" + backend][0].reshape(h, -1)[sel, :n].astype(np.float32))
    for name, on in ((c["dtype"], True), ("causal", c["causal"])):
        if on:
            open(os.path.join(out, name), "w").close()


if __name__ == "__main__":
    main()
