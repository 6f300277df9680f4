#!/usr/bin/env python3
"""flashmla_fp8_case.py NPZ OUTDIR [nosplit] -- a capture of scripts/device/capture_flashmla_fp8.py as a directory that
`amla-lab check` and `run --load` read: q.npy, kcache.npy, indices.npy, topk_length.npy where the case has one,
and the kernel's out.npy and lse.npy (its default path, or with `nosplit` its single-split path)."""
import os
import sys

import numpy as np


def main():
    z = np.load(sys.argv[1])
    out = sys.argv[2]
    path = "_nosplit" if len(sys.argv) > 3 and sys.argv[3] == "nosplit" else ""
    os.makedirs(out, exist_ok=True)
    for key in ("q", "kcache", "indices", "topk_length"):
        if key in z.files:
            np.save(os.path.join(out, key + ".npy"), z[key])
    np.save(os.path.join(out, "out.npy"), z["out" + path])
    np.save(os.path.join(out, "lse.npy"), z["lse" + path])


if __name__ == "__main__":
    main()
