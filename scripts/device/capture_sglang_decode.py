#!/usr/bin/env python3
"""capture_sglang_decode.py DECODE_PY OUTDIR -- SGLang's Triton MLA decode (the triton attention backend's
decode_attention_fwd, grouped path, from DECODE_PY: a harness holding sgl-project/sglang's
triton_ops/decode_attention.py kernels and metadata.py's get_num_kv_splits_triton) run on a Hopper GPU as
TritonAttnBackend.forward_decode calls it for DeepSeek's MLA, with the exact inputs and the code Triton made, one
folder a case in the layout `amla-lab check` loads:

  q.npy [B, 1, Hq, 576] (uint16 codes), k.npy [B, Smax, 576] (each entry's cache rows: uint16 codes, or e4m3 codes
  (uint8) beside k_scale.npy), seqlens.npy int32 [B], out.npy [B, 1, Hq, 512] (uint16 codes of q's dtype; SGLang's
  decode returns no lse), num_kv_splits.npy int32 [B] (the splits each request got), attn_lse.npy float32
  [B, Hq, max_kv_splits] and attn_logits.npy float32 [B, Hq, max_kv_splits, 512] (stage 1's per split).

The call: the cache as SGLang's MLA token pool holds it ([tokens, 1, 576], page size 1, each request's tokens at
shuffled slots through kv_indptr / kv_indices), V = its first 512 dims, num_kv_splits from get_num_kv_splits_triton
over the device's SM count (dynamic; or every request `static` splits, SGLANG_TRITON_DECODE_ATTN_STATIC_KV_SPLITS),
max_kv_splits as _mla_decode_kv_splits_cap gives it for a 163840-token model (max(8, min(next_pow2(SMs), 8192))),
sm_scale the model's, k_scale = v_scale = 1 (bf16, fp16) or the FP8 cache's (MLA's V is K's latent).
OUTDIR/ptx-*.ptx and sass-*.sass: both stages as Triton compiled them for the first case of each dtype.
OUTDIR/meta.json: device, torch, triton, per case its call. CAPTURE_CASES: the cases to run (default all).
"""
import importlib.util
import os
import sys

import numpy as np
import torch

from triton_code import run_cases, save_code  # scripts/device/triton_code.py, beside this script

DECODE, OUT = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("sglang_decode_attention", DECODE)
sda = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sda)
E4M3 = torch.float8_e4m3fn
SCALE = 192 ** -0.5  # DeepSeek-V2-Lite's qk_head_dim 192, as capture_triton_mla.py

# name: dtype (cache; q bf16 unless fp16), B, Hq, seqlens, splits ('dyn' or a static count), sigma, seed
CASES = {
    "g1": ("bf16", 4, 16, [1000, 37, 513, 2048], "dyn", 1.0, 701),
    "g2": ("bf16", 2, 128, [4096, 300], "dyn", 1.0, 702),
    "g3": ("bf16", 3, 16, [1, 33, 100], 8, 1.0, 703),
    "g4": ("fp16", 2, 16, [600, 601], "dyn", 1.0, 704),
    "g5": ("bf16", 1, 128, [20000], "dyn", 1.0, 705),
    "g6": ("e4m3", 2, 16, [700, 1500], "dyn", 1.0, 706),
    # validation
    "gv1": ("bf16", 5, 32, [1234, 77, 3000, 64, 999], "dyn", 1.0, 751),
    "gv2": ("bf16", 3, 128, [5000, 129, 2222], 4, 2.0, 752),
    "gv3": ("fp16", 4, 64, [300, 8000, 31, 1025], "dyn", 1.0, 753),
}


def codes(t):
    t = t.contiguous().cpu()
    return t.view(torch.uint8).numpy() if t.dtype == E4M3 else t.view(torch.int16).numpy().view(np.uint16)


def next_pow2(n):
    return 1 << (n - 1).bit_length()


def run_case(name, case, keep_code, sms):
    dt, B, Hq, seqlens, splits, sigma, seed = case
    rs = np.random.RandomState(seed)
    qdt = torch.float16 if dt == "fp16" else torch.bfloat16
    smax = max(seqlens)
    qx = torch.from_numpy(rs.normal(0, sigma, (B, Hq, 576)).astype(np.float32))
    kx = np.zeros((B, smax, 576), np.float32)
    for b, n in enumerate(seqlens):
        kx[b, :n] = rs.normal(0, sigma, (n, 576))
    q = qx.to(qdt).cuda()
    max_splits = max(8, min(next_pow2(sms), next_pow2((163840 + 31) // 32)))
    info = {"dtype": dt, "B": B, "Hq": Hq, "seqlens": seqlens, "splits": splits, "max_kv_splits": max_splits,
            "sm_count": sms, "sigma": sigma, "seed": seed, "softmax_scale": SCALE}
    ks = 1.0
    if dt == "e4m3":
        ks = float(np.float32(np.abs(kx).max() / 448))
        k = torch.from_numpy(kx / ks).to(E4M3)
        info["k_scale"] = info["v_scale"] = ks
    else:
        k = torch.from_numpy(kx).to(qdt)
    # the pool: every request's tokens at shuffled slots (slot 0 unused, as SGLang keeps it)
    total = sum(seqlens)
    slots = torch.from_numpy(rs.permutation(total).astype(np.int64) + 1)
    pool = torch.zeros(total + 1, 1, 576, dtype=k.dtype)
    indptr = [0]
    for b, n in enumerate(seqlens):
        pool[slots[indptr[-1]:indptr[-1] + n], 0] = k[b, :n]
        indptr.append(indptr[-1] + n)
    pool = pool.cuda()
    kv_indptr = torch.tensor(indptr, dtype=torch.int32, device="cuda")
    kv_indices = slots.to(torch.int32).cuda()
    sl = torch.tensor(seqlens, dtype=torch.int32, device="cuda")
    nks = torch.empty(B, dtype=torch.int32, device="cuda")
    if splits == "dyn":
        sda.get_num_kv_splits_triton[(1,)](nks, sl, B, 1, Hq, 1, max_splits, sms, MAX_NUM_SEQ=256)
    else:
        nks.fill_(splits)
    runs = []
    for _ in range(3):
        o = torch.zeros(B, Hq, 512, dtype=qdt, device="cuda")
        logits = torch.zeros(B, Hq, max_splits, 512, dtype=torch.float32, device="cuda")
        alse = torch.zeros(B, Hq, max_splits, dtype=torch.float32, device="cuda")
        kern = sda.decode_attention_fwd(q, pool, pool[..., :512], o, kv_indptr, kv_indices, logits, alse, nks,
                                        max_splits, SCALE, ks, ks)
        runs.append((o, logits, alse))
    torch.cuda.synchronize()
    o, logits, alse = runs[0]
    info["num_kv_splits"] = nks.cpu().tolist()
    info["deterministic_3_runs"] = all(torch.equal(r[0].view(torch.int16), o.view(torch.int16)) for r in runs)
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "q.npy"), codes(q).reshape(B, 1, Hq, 576))
    np.save(os.path.join(d, "k.npy"), codes(k))
    if dt == "e4m3":
        np.save(os.path.join(d, "k_scale.npy"), np.array([ks], np.float32))
    np.save(os.path.join(d, "seqlens.npy"), np.array(seqlens, np.int32))
    np.save(os.path.join(d, "num_kv_splits.npy"), nks.cpu().numpy())
    np.save(os.path.join(d, "out.npy"), codes(o).reshape(B, 1, Hq, 512))
    used = max(info["num_kv_splits"])
    np.save(os.path.join(d, "attn_lse.npy"), alse[:, :, :used].cpu().numpy())
    if B * Hq * used * 512 * 4 <= 8 << 20:
        np.save(os.path.join(d, "attn_logits.npy"), logits[:, :, :used].cpu().numpy())
    if keep_code:
        save_code(kern, OUT, dt, info)
    return info


def main():
    os.makedirs(OUT, exist_ok=True)
    import triton
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    meta = {"what": "SGLang's Triton MLA decode with exact inputs (scripts/device/capture_sglang_decode.py)",
            "device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "triton": triton.__version__, "decode_file": os.environ.get("DECODE_SOURCE"),
            "layout": __doc__.split("\n\n")[1], "cases": {}}
    run_cases(OUT, meta, CASES, lambda name, case, keep: run_case(name, case, keep, sms))


if __name__ == "__main__":
    main()
