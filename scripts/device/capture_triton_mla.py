#!/usr/bin/env python3
"""capture_triton_mla.py DECODE_PY OUTDIR -- vLLM's Triton MLA decode (the TRITON_MLA backend's
decode_attention_fwd, from the file DECODE_PY: vllm/v1/attention/ops/triton_decode_attention.py) run on an H100
as vLLM's TritonMLAImpl.forward_mqa calls it, with the exact inputs and the code Triton made, one folder a case in
the layout `amla-lab check` loads:

  q.npy [B, 1, Hq, 576] (uint16 codes: [q_nope | q_pe]), k.npy [B, Smax, 576] (the cache's rows: uint16 codes, or
  e4m3 codes (uint8) beside k_scale.npy, float32 [1], the layer's k_scale), seqlens.npy int32 [B], out.npy
  [B, 1, Hq, 512] (uint16 codes of q's dtype), lse.npy float32 [B, Hq, 1] (the kernel writes it in q's dtype:
  the values of those codes), attn_logits.npy float32 [B, Hq, splits, 513] (stage 1's per-split O / e_sum and
  e_max + log(e_sum), the input of stage 2).

The call: o = zeros [B, Hq, 512] and lse = zeros [B, Hq] in q's dtype, attn_logits float32 [B, Hq, splits, 513],
the cache [pages, page_size, 576] unsqueezed to one KV head with its first 512 dims as V (no is_mla: V loaded
again and, for an FP8 cache, dequantized with v_scale, which forward_mqa leaves at its default of 1), num_kv_splits
4 (1 under batch invariance), sm_scale as the model's. TRITON_CALL=mla calls it as later forward_mqa do:
k_scale=v_scale=the layer's k_scale, is_mla=True (V is the K tile the kernel holds, transposed). CAPTURE_CASES: the
cases to run (default all). OUTDIR/ptx-*.ptx and sass-*.sass: both stages as Triton compiled them for the first case
of each dtype. OUTDIR/meta.json: device, torch, triton, per case its call.
"""
import importlib.util
import os
import sys

import numpy as np
import torch

from triton_code import run_cases, save_code  # scripts/device/triton_code.py, beside this script

DECODE, OUT = sys.argv[1], sys.argv[2]
CALL = os.environ.get("TRITON_CALL", "k_scale")
spec = importlib.util.spec_from_file_location("triton_decode_attention", DECODE)
tda = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tda)
E4M3 = torch.float8_e4m3fn
SCALE = 192 ** -0.5  # DeepSeek-V2-Lite's qk_head_dim 192 (no YaRN mscale): what vLLM passes as self.scale

# name: dtype (cache: bf16 / fp16 / e4m3 with a bf16 query / e4m3h: e4m3 with an fp16 query), B, Hq, seqlens, page size, splits, sigma, seed
CASES = {
    "t1": ("bf16", 4, 16, [1000, 37, 513, 2048], 16, 4, 1.0, 601),
    "t2": ("bf16", 2, 128, [4096, 300], 64, 4, 1.0, 602),
    "t3": ("bf16", 3, 16, [1, 33, 100], 16, 4, 1.0, 603),
    "t4": ("e4m3", 4, 16, [1000, 37, 513, 2048], 16, 4, 1.0, 604),
    "t5": ("e4m3", 2, 128, [700, 1500], 64, 4, 1.0, 605),
    "t6": ("bf16", 2, 16, [900, 129], 16, 1, 1.0, 606),
    "t7": ("fp16", 2, 16, [600, 601], 16, 4, 1.0, 607),
    "t8": ("bf16", 1, 16, [3000], 1, 4, 3.0, 608),
    "t9": ("e4m3h", 2, 16, [800, 300], 16, 4, 1.0, 609),  # an fp16 query on an e4m3 cache
    # validation
    "w1": ("bf16", 3, 32, [1234, 77, 3000], 16, 4, 1.0, 651),
    "w2": ("e4m3", 3, 16, [999, 64, 2500], 64, 4, 1.0, 652),
}


def codes(t):
    t = t.contiguous().cpu()
    return t.view(torch.uint8).numpy() if t.dtype == E4M3 else t.view(torch.int16).numpy().view(np.uint16)


def run_case(name, case, keep_code):
    dt, B, Hq, seqlens, page, splits, sigma, seed = case
    rs = np.random.RandomState(seed)
    qdt = torch.float16 if dt in ("fp16", "e4m3h") else torch.bfloat16
    smax = max(seqlens)
    qx = torch.from_numpy(rs.normal(0, sigma, (B, Hq, 576)).astype(np.float32))
    kx = np.zeros((B, smax, 576), np.float32)
    for b, n in enumerate(seqlens):
        kx[b, :n] = rs.normal(0, sigma, (n, 576))
    kx = torch.from_numpy(kx)
    q = qx.to(qdt).cuda()
    info = {"call": CALL, "dtype": dt, "B": B, "Hq": Hq, "seqlens": seqlens, "page_size": page, "num_kv_splits": splits,
            "sigma": sigma, "seed": seed, "softmax_scale": SCALE}
    ks = None
    if dt.startswith("e4m3"):
        ks = float(np.float32(kx.abs().max().item() / 448))
        k = (kx / ks).to(E4M3)
        kb = k.view(torch.uint8)
        info["k_scale"] = ks
    else:
        k = kx.to(qdt)
        kb = k.view(torch.int16)
    nb = (smax + page - 1) // page
    perm = torch.from_numpy(rs.permutation(B * nb).astype(np.int64))
    kpad = torch.zeros(B, nb * page, 576, dtype=kb.dtype)
    kpad[:, :smax] = kb
    cache = torch.zeros(B * nb, page, 576, dtype=kb.dtype)
    cache[perm] = kpad.view(B * nb, page, 576)
    cache = cache.view(k.dtype).cuda()
    table = perm.view(B, nb).to(torch.int32).cuda()
    sl = torch.tensor(seqlens, dtype=torch.int32, device="cuda")
    kvc = cache.unsqueeze(2)
    runs = []
    for _ in range(3):
        o = torch.zeros(B, Hq, 512, dtype=qdt, device="cuda")
        lse = torch.zeros(B, Hq, dtype=qdt, device="cuda")
        logits = torch.empty(B, Hq, splits, 513, dtype=torch.float32, device="cuda")
        kscale = torch.tensor(ks, dtype=torch.float32, device="cuda") if ks is not None else None
        extra = {"v_scale": kscale, "is_mla": True} if CALL == "mla" else {}
        kern = tda.decode_attention_fwd(q, kvc, kvc[..., :512], o, lse, table, sl, logits, splits, SCALE, page,
                                        k_scale=kscale, **extra)
        runs.append((o, lse, logits))
    torch.cuda.synchronize()
    o, lse, logits = runs[0]
    info["deterministic_3_runs"] = all(torch.equal(r[0].view(torch.int16), o.view(torch.int16)) and
                                       torch.equal(r[1].view(torch.int16), lse.view(torch.int16)) for r in runs)
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "q.npy"), codes(q).reshape(B, 1, Hq, 576))
    np.save(os.path.join(d, "k.npy"), codes(k))
    if ks is not None:
        np.save(os.path.join(d, "k_scale.npy"), np.array([ks], np.float32))
    np.save(os.path.join(d, "seqlens.npy"), np.array(seqlens, np.int32))
    np.save(os.path.join(d, "out.npy"), codes(o).reshape(B, 1, Hq, 512))
    np.save(os.path.join(d, "lse.npy"), lse.float().cpu().numpy().reshape(B, Hq, 1))
    np.save(os.path.join(d, "attn_logits.npy"), logits.cpu().numpy())
    if keep_code:
        save_code(kern, OUT, dt, info)
    return info


def main():
    os.makedirs(OUT, exist_ok=True)
    import triton
    meta = {"what": "vLLM's Triton MLA decode (TRITON_MLA) with exact inputs (scripts/device/capture_triton_mla.py)",
            "device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "triton": triton.__version__, "decode_file": os.environ.get("DECODE_SOURCE"),
            "layout": __doc__.split("\n\n")[1], "cases": {}}
    run_cases(OUT, meta, CASES, run_case)


if __name__ == "__main__":
    main()
