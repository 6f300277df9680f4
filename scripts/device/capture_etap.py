#!/usr/bin/env python3
"""[CAPTURE_CASES=a,b] capture_etap.py ETAP OUTDIR -- run the real FlashMLA-ETAP decode kernel on an H100 and keep
its outputs with their exact inputs, in the layout of shared/captures/flashmla (same keys, same
input generation): OUTDIR/NAME.npz per case, OUTDIR/table1.npz (the paper's Table 1 setting: the
kernel's outputs only, their inputs drawn again from the seeds in meta.json) and OUTDIR/meta.json.

ETAP is a source tree of pengcuo/FlashMLA-ETAP at 39e6160 (csrc/ with its vendored CUTLASS in
csrc/cutlass); the extension is built with setup.py's nvcc flags (--use_fast_math, sm_90a), as
scripts/device/capture_flashmla.py builds FlashMLA. The kernel takes head dims (576, 512) only at that
commit (static_assert(Headdim == 576), TORCH_CHECK(head_size == 576) in flash_api.cpp), BF16 and FP16.
Runs on the device machine (torch, CUDA, nvcc); the lab's side is scripts/etap-check.sh OUTDIR.
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'checks'))  # capture_inputs
import capture_flashmla as cf  # noqa: E402
from capture_inputs import etap_table1_case  # noqa: E402

COMMIT = "39e616041ae6fb1243a0f6ac891e72d576b640e5"
SOURCES = ["flash_api.cpp", "flash_fwd_mla_bf16_sm90.cu", "flash_fwd_mla_fp16_sm90.cu", "flash_fwd_mla_metadata.cu"]

# name: dtype, b, s_q, h_q, seqlens, causal, distribution (kind, parameter), seed
CASES = {
    "e1": ("bf16", 1, 1, 16, [4096], False, ("normal", 1.0), 401),
    "e2": ("fp16", 1, 1, 16, [3000], False, ("normal", 1.0), 402),
    "e3": ("bf16", 4, 1, 32, [2048, 1000, 129, 64], False, ("uniform", 3.0), 403),
    "e4": ("fp16", 1, 2, 16, [1500], True, ("normal", 1.0), 404),
    "e5": ("bf16", 2, 2, 32, [700, 65], True, ("outlier", 30.0), 405),
    "e6": ("fp16", 1, 1, 128, [2000], False, ("outlier", 30.0), 406),
    "e7": ("bf16", 8, 1, 128, [777, 1500, 64, 1, 1200, 333, 129, 1024], False, ("normal", 1.0), 407),
    "e8": ("fp16", 3, 2, 128, [2048, 100, 1500], True, ("uniform", 3.0), 408),
    "e9": ("bf16", 1, 1, 16, [6000], False, ("normal", 0.1), 409),
    "e10": ("fp16", 1, 1, 32, [4096], False, ("normal", 8.0), 410),
}

# The paper's Table 1: FP16, 16 heads, one query token, N(0, 1), an FP64 reference; ctx x samples
TABLE1_CTX = [512, 4096, 32768, 65536]
TABLE1_SAMPLES = 5
TABLE1_SEED = 500


def fwd_etap(mod, q, kc, sl, table, scale, causal, m, n):
    return mod.fwd_kvcache_mla(q, kc, None, 512, sl, table, scale, causal, m, n)


def table1(mod, outdir):
    """The kernel's FP16 outputs on the Table 1 setting (one entry of ctx keys, 16 heads) and their RMSE
    against an FP64 attention on the same FP16 inputs, computed here; inputs as run_case draws them."""
    rows, outs = [], {}
    for ci, ctx in enumerate(TABLE1_CTX):
        for s in range(TABLE1_SAMPLES):
            seed = TABLE1_SEED + 100 * ci + s
            q, k = etap_table1_case(seed, ctx)
            qt, kt = cf.to_torch(q, "fp16"), cf.to_torch(k, "fp16")
            blocks = (ctx + 63) // 64
            kc = torch.zeros(blocks * 64, 576, dtype=torch.float16, device="cuda")
            kc[:ctx] = kt
            sl = torch.tensor([ctx], dtype=torch.int32, device="cuda")
            table = torch.arange(blocks, dtype=torch.int32, device="cuda").view(1, blocks)
            tsm, ns = mod.get_mla_metadata(sl, 16, 1)
            out, lse = fwd_etap(mod, qt, kc.view(blocks, 64, 1, 576), sl, table, 576 ** -0.5, False, tsm, ns)
            q64, k64 = qt.double().view(16, 576), kt.double()
            ref = torch.softmax(q64 @ k64.T / 24.0, dim=-1) @ k64[:, :512]
            err = out.double().view(16, 512) - ref
            rows.append({"ctx": ctx, "sample": s, "seed": seed, "rmse": float(err.square().mean().sqrt()),
                         "rel_fro": float(err.norm() / ref.norm())})
            outs[f"out_{ctx}_{s}"] = out.view(torch.int16).cpu().numpy().view(np.uint16).reshape(16, 512)
            outs[f"lse_{ctx}_{s}"] = lse.float().cpu().numpy().reshape(16)
    np.savez_compressed(os.path.join(outdir, "table1.npz"), **outs)
    return rows


def main():
    root, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    mod = cf.build(root, SOURCES, os.environ.get("ETAP_BUILD", "/tmp/etap-build"))
    cases = {}
    only = os.environ.get("CAPTURE_CASES")
    for name, case in CASES.items():
        if only and name not in only.split(","):
            continue
        cases[name] = cf.run_case(mod, name, case, outdir, fwd_etap)
        print(name, json.dumps(cases[name]), flush=True)
    t1 = table1(mod, outdir)
    for ctx in TABLE1_CTX:
        r = [x["rmse"] for x in t1 if x["ctx"] == ctx]
        print(f"table1 ctx {ctx}: rmse mean {sum(r) / len(r):.4g} over {len(r)}", flush=True)
    meta = {"what": "Outputs of the real FlashMLA-ETAP decode kernel (pengcuo/FlashMLA-ETAP " + COMMIT[:7]
                    + ", its vendored CUTLASS) on " + torch.cuda.get_device_name() + ", with their exact inputs; "
                    "keys, layout and input generation as shared/captures/flashmla/meta.json (written by "
                    "scripts/device/capture_etap.py). The API is FlashMLA's: get_mla_metadata(seqlens, s_q h_q, 1), "
                    "fwd_kvcache_mla(q, kcache, None, 512, seqlens, block_table, 576 ** -0.5, causal, metadata, "
                    "num_splits); the kernel's own tile: 16 query rows per CTA (kBlockM), 64 keys (kBlockN).",
            "commit": COMMIT, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cuda": torch.version.cuda, "nvcc_flags": cf.NVCC_FLAGS, "sources": SOURCES,
            "softmax_scale": "576 ** -0.5 (the API's default)",
            "layout": {"h_kv": 1, "d": 576, "dv": 512, "page_block_size": 64,
                       "V": "V = K[..., :512] (kcache passed alone)",
                       "q_row_order": "kernel row = s * h_q + h, 16 rows per CTA m-block",
                       "block_table": "identity, the cache padded with zero rows to whole pages"},
            "input_generation": "numpy RandomState(seed): q [b, s_q, h_q, 576] first, then k per batch entry "
                                "[seqlens[i], 576]; normal(0, sigma), uniform(-a, a) or outlier (normal(0, 1), "
                                "then a uniform(0, 1) draw of the same shape, entries whose draw is below 0.01 "
                                "times the parameter), float64 -> float32 -> bf16 (RNE on the float32 bits) or fp16 "
                                "(numpy astype, RNE)",
            "table1": {"setting": "fp16, b 1, s_q 1, h_q 16, one entry of ctx keys, N(0, 1), the default "
                                  "scheduler; q [1, 1, 16, 576] then k [ctx, 576] from RandomState(seed); "
                                  "table1.npz holds out_CTX_S (uint16 [16, 512]) and lse_CTX_S",
                       "reference": "FP64 torch: softmax(q k^T / 24) k[:, :512] on the same fp16 inputs",
                       "rows": t1},
            "cases": cases}
    with open(os.path.join(outdir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
