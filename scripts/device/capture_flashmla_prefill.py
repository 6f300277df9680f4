#!/usr/bin/env python3
"""[CAPTURE_CASES=a,b] capture_flashmla_prefill.py FLASHMLA OUTDIR -- run FlashMLA's sparse prefill kernel
(csrc/sm90/prefill/sparse, flash_mla_sparse_fwd: DeepSeek-V3.2's DSA prefill, d_qk 576, and V4's, d_qk 512) on a
Hopper GPU and keep its outputs with their exact inputs, one folder a case, in the layout of the kernel's API:

  q.npy uint16 bf16 bits [s_q, h_q, d_qk], kv.npy uint16 bf16 bits [s_kv, h_kv, d_qk] (V = kv[..., :512]),
  indices.npy int32 [s_q, h_kv, topk] (-1 or >= s_kv: invalid), topk_length.npy int32 [s_q] and attn_sink.npy
  float32 [h_q] where the case has them, out.npy uint16 bf16 bits [s_q, h_q, 512], lse.npy and max_logits.npy
  float32 [s_q, h_q] (as the kernel returns them), scale.txt the sm_scale passed.

FLASHMLA is a tree of deepseek-ai/FlashMLA (9241ae3) already built in place by its setup.py with
FLASH_MLA_DISABLE_SM100=1 (FLASHMLA_BUILD in the environment names the build: its flags are recorded in meta.json).
Inputs: numpy RandomState(seed), q [s_q, h_q, d_qk] then kv [s_kv, d_qk] (normal(0, s); wide: N(0, 1) exp(N(0, s^2))
per row; outlier: N(0, 1), 1% of entries times p), the last 64 dims (RoPE) times 4, float64 -> float32 -> bf16 RNE;
then indices randint(0, s_kv, [s_q, 1, topk]) without repeats within a row, a fraction of them replaced by -1
(invalid) and another by s_kv + j (out of range); topk_length and the sink as the case gives them.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'checks'))  # capture_inputs
from capture_inputs import prefill_qkv  # noqa: E402

# name: d_qk, s_q, h_q, s_kv, topk, invalid (-1) fraction, out-of-range fraction, topk_length (None, or a list
#       per query token), sink (None, "normal", or a list for h_q = 4 repeated), inputs, sm_scale, seed
CASES = {
    "s1": (576, 4, 64, 256, 128, 0.0, 0.0, None, None, ("normal", 1.0), 576 ** -0.5, 901),
    "s2": (576, 8, 128, 1000, 256, 0.1, 0.0, None, None, ("normal", 1.0), 192 ** -0.5, 902),
    "s3": (576, 3, 64, 300, 128, 0.0, 0.2, None, None, ("normal", 1.0), 576 ** -0.5, 903),
    "s4": (512, 4, 64, 500, 256, 0.0, 0.0, [256, 100, 0, 1], None, ("normal", 1.0), 512 ** -0.5, 904),
    "s5": (512, 2, 128, 2048, 512, 0.0, 0.0, [512, 300], "normal", ("normal", 1.0), 512 ** -0.5, 905),
    "s6": (576, 1, 128, 4096, 2048, 0.0, 0.0, None, None, ("normal", 1.0), 192 ** -0.5, 906),
    "s7": (576, 2, 64, 200, 128, -1.0, 0.0, None, None, ("normal", 1.0), 576 ** -0.5, 907),
    "s8": (512, 3, 64, 400, 256, 0.05, 0.05, None, [0.5, float("-inf"), float("inf"), -3.0], ("wide", 1.0),
           512 ** -0.5, 908),
    "s9": (576, 4, 64, 700, 384, 0.02, 0.0, None, None, ("outlier", 20.0), 576 ** -0.5, 909),
    # validation: taken with the others, checked only once the model runs on s1-s9
    "sv1": (576, 5, 128, 1500, 384, 0.1, 0.1, None, None, ("normal", 2.0), 192 ** -0.5, 951),
    "sv2": (512, 3, 64, 3000, 1024, 0.0, 0.0, [1024, 777, 64], "normal", ("normal", 1.0), 512 ** -0.5, 952),
    "sv3": (576, 2, 64, 129, 128, 0.3, 0.0, None, None, ("wide", 1.0), 576 ** -0.5, 953),
}


def to_bf16(bits):
    return torch.from_numpy(bits.view(np.int16).copy()).cuda().view(torch.bfloat16)


def run_case(mod, name, case, outdir):
    d_qk, s_q, h_q, s_kv, topk, invalid, oor, topk_length, sink, dist, scale, seed = case
    rs = np.random.RandomState(seed)
    q, kv = prefill_qkv(rs, s_q, h_q, s_kv, d_qk, dist)
    idx = np.stack([rs.permutation(s_kv)[:topk] if topk <= s_kv else rs.randint(0, s_kv, topk)
                    for _ in range(s_q)]).astype(np.int32).reshape(s_q, 1, topk)
    if invalid < 0:  # the last query token has no valid index
        idx[-1] = -1
    elif invalid > 0:
        idx = np.where(rs.uniform(0.0, 1.0, idx.shape) < invalid, -1, idx).astype(np.int32)
    if oor > 0:
        far = s_kv + rs.randint(0, 1000, idx.shape)
        idx = np.where(rs.uniform(0.0, 1.0, idx.shape) < oor, far, idx).astype(np.int32)
    extra = {}
    tl = None
    if topk_length is not None:
        extra["topk_length"] = np.array(topk_length, np.int32)
        tl = torch.from_numpy(extra["topk_length"]).cuda()
    at = None
    if sink is not None:
        sv = rs.normal(0.0, 2.0, h_q) if sink == "normal" else np.resize(np.array(sink), h_q)
        extra["attn_sink"] = sv.astype(np.float32)
        at = torch.from_numpy(extra["attn_sink"]).cuda()
    qt, kt, it = to_bf16(q), to_bf16(kv), torch.from_numpy(idx).cuda()
    runs = [mod.sparse_prefill_fwd(qt, kt, it, scale, 512, at, tl) for _ in range(3)]
    torch.cuda.synchronize()
    out, mlog, lse = runs[0]
    same = all(torch.equal(r[0].view(torch.int16), out.view(torch.int16)) and
               torch.equal(r[1].view(torch.int32), mlog.view(torch.int32)) and
               torch.equal(r[2].view(torch.int32), lse.view(torch.int32)) for r in runs)
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "q.npy"), q)
    np.save(os.path.join(d, "kv.npy"), kv)
    np.save(os.path.join(d, "indices.npy"), idx)
    for k, v in extra.items():
        np.save(os.path.join(d, k + ".npy"), v)
    np.save(os.path.join(d, "out.npy"), out.view(torch.int16).cpu().numpy().view(np.uint16))
    np.save(os.path.join(d, "lse.npy"), lse.float().cpu().numpy())
    np.save(os.path.join(d, "max_logits.npy"), mlog.float().cpu().numpy())
    with open(os.path.join(d, "scale.txt"), "w") as f:
        f.write(repr(float(np.float32(scale))) + "\n")
    return {"d_qk": d_qk, "s_q": s_q, "h_q": h_q, "h_kv": 1, "s_kv": s_kv, "topk": topk,
            "invalid_fraction": invalid, "out_of_range_fraction": oor, "topk_length": topk_length,
            "attn_sink": None if sink is None else (sink if sink == "normal" else [str(x) for x in sink]),
            "distribution": list(dist), "sm_scale": scale, "seed": seed, "deterministic_3_runs": bool(same)}


def main():
    root, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    sys.path.insert(0, root)
    import flash_mla.cuda as mod
    cases = {}
    only = os.environ.get("CAPTURE_CASES")
    for name, case in CASES.items():
        if only and name not in only.split(","):
            continue
        try:
            cases[name] = run_case(mod, name, case, outdir)
        except Exception as e:  # the kernel refuses the case: recorded, the rest goes on
            cases[name] = {"error": str(e).splitlines()[0][:300]}
        print(name, json.dumps(cases[name]), flush=True)
    meta = {"what": "Outputs of FlashMLA's sparse prefill kernel (sm90/prefill/sparse, flash_mla_sparse_fwd) on "
                    + torch.cuda.get_device_name() + ", with their exact inputs (scripts/device/capture_flashmla_prefill.py)",
            "commit": os.environ.get("MAIN_COMMIT", "9241ae3"), "build": os.environ.get("FLASHMLA_BUILD"),
            "device": torch.cuda.get_device_name(), "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "nvcc": subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1],
            "api": "flash_mla.cuda.sparse_prefill_fwd(q, kv, indices, sm_scale, 512, attn_sink, topk_length) -> "
                   "(out, max_logits, lse)",
            "layout": __doc__.split("\n\n")[1], "input_generation": __doc__.split("\n\n")[2], "cases": cases}
    with open(os.path.join(outdir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
