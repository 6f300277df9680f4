#!/usr/bin/env python3
"""[CAPTURE_CASES=a,b] capture_fa3.py HOPPER OUTDIR -- run FlashAttention-3's forward kernel (Dao-AILab/flash-attention
hopper/, built in place in HOPPER by setup.py build_ext --inplace) on an H100 and keep every output with its exact
inputs, one folder a case, in the layout `amla-lab check` loads:

  q.npy [B, Sq, Hq, D], k.npy [B, Smax, Hkv, D], v.npy [B, Smax, Hkv, Dv] (codes: uint16 bf16/fp16, uint8 e4m3),
  seqlens.npy int32 [B], out.npy [B, Sq, Hq, Dv] (uint16 codes of the output's dtype), lse.npy float32 [B, Hq, Sq]
  (natural log), a file `causal` when the case is causal; FP8 cases add q_descale.npy, k_descale.npy and
  v_descale.npy (float32 [B, Hkv]); q_v (MLA) cases are stored in the lab's batched MLA layout: q.npy
  [B, Sq, Hq, 576] = [q_nope | q_rope], k.npy [B, Smax, 576] = [c_kv | k_rope] (V = K[..., :512]).

A varlen case (flash_attn_varlen_func: one query length and one key length per sequence) is kept packed, as
FlashAttention takes and returns it: q.npy [total_q, Hq, D], k.npy [total_k, Hkv, D], v.npy [total_k, Hkv, Dv],
cu_seqlens_q.npy and cu_seqlens_k.npy (int32 [B + 1]), out.npy [total_q, Hq, Dv] and lse.npy float32 [Hq, total_q].

OUTDIR/meta.json: the device, torch, CUDA, the build's commit and trimming, and per case its call (API, shape, dtype,
causal, softmax scale, num_splits asked and the split count the kernel ran, pack_gqa, page size, inputs). Every call
goes through flash_attn_interface._flash_attn_forward, which returns the split accumulators: their first dimension
is the number of splits the kernel ran (1 where none are returned). Each case runs three times (deterministic?).

Inputs: numpy RandomState(seed); normal(0, sigma) in float32 rounded to the dtype (RNE), or designed rows:
'dominant' (one key per row far above the rest), 'ties' (every key of a row equal, so the row max is tied),
'pow2' (V entries signed powers of two over 2^-12..2^4, so the P.V accumulation order shows in the low bits).
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'checks'))  # capture_inputs
from capture_inputs import fa3_draw as draw, fa3_qkv  # noqa: E402

HOPPER = sys.argv[1]
OUT = sys.argv[2]
sys.path.insert(0, HOPPER)
import flash_attn_interface as fa3  # noqa: E402

# The build these cases were taken with keeps forward BF16 and e4m3, head dims 64 and 128 and the 64/512 (q_v)
# pair, split and paged kernels, no separate pack-GQA kernels (FLASH_ATTENTION_DISABLE_{FP16,HDIM256,PACKGQA,...}):
# a build of every head dim and dtype passes the device machine's 10 minutes a command.
# name: api (func | kvcache | qv), dtype, B, Sq, Hq, Hkv, D, seqlens (one per entry), causal, num_splits,
#       pack_gqa, page size (0: none), inputs, seed
CASES = {
    # flash_attn_func: one length for the batch, no seqused (the non-varlen kernels)
    "a1": ("func", "bf16", 1, 300, 4, 4, 128, [300], False, 1, None, 0, ("normal", 1.0), 1),
    "a2": ("func", "bf16", 1, 300, 4, 4, 128, [300], True, 1, None, 0, ("normal", 1.0), 2),
    "a3": ("func", "bf16", 2, 200, 4, 2, 128, [333, 333], True, 1, None, 0, ("normal", 1.0), 3),
    "a4": ("func", "bf16", 1, 128, 4, 4, 64, [1000], False, 1, None, 0, ("normal", 1.0), 4),
    "a5": ("func", "bf16", 1, 100, 2, 2, 64, [257], True, 1, None, 0, ("normal", 1.0), 5),
    "a6": ("func", "bf16", 1, 64, 8, 1, 128, [700], False, 1, None, 0, ("normal", 1.0), 6),
    "a7": ("func", "bf16", 1, 64, 8, 2, 128, [500], False, 1, True, 0, ("normal", 1.0), 7),
    "a8": ("func", "bf16", 1, 256, 2, 2, 128, [400], False, 1, None, 0, ("dominant", 1.0), 8),
    "a9": ("func", "bf16", 1, 128, 2, 2, 128, [384], False, 1, None, 0, ("ties", 1.0), 9),
    "a10": ("func", "bf16", 1, 128, 2, 2, 128, [700], False, 1, None, 0, ("pow2", 1.0), 10),
    "a11": ("func", "bf16", 1, 200, 4, 4, 64, [200], True, 0, None, 0, ("normal", 4.0), 11),
    "a12": ("func", "bf16", 2, 1, 8, 1, 128, [3000, 3000], False, 0, None, 0, ("normal", 1.0), 12),
    # flash_attn_with_kvcache: lengths per entry (seqused_k), splits by the heuristic (0) or asked, paged caches
    "k1": ("kvcache", "bf16", 4, 1, 8, 1, 128, [1000, 37, 513, 1200], False, 0, None, 0, ("normal", 1.0), 21),
    "k2": ("kvcache", "bf16", 4, 1, 8, 1, 128, [1000, 37, 513, 1200], False, 3, None, 0, ("normal", 1.0), 21),
    "k3": ("kvcache", "bf16", 2, 4, 4, 2, 64, [700, 1100], True, 0, None, 0, ("normal", 1.0), 23),
    "k4": ("kvcache", "bf16", 3, 1, 16, 2, 128, [300, 1000, 64], False, 0, None, 64, ("normal", 1.0), 24),
    "k5": ("kvcache", "bf16", 2, 2, 8, 4, 128, [77, 500], True, 0, None, 16, ("normal", 1.0), 25),
    "k6": ("kvcache", "bf16", 2, 1, 4, 2, 64, [600, 129], False, 0, None, 0, ("normal", 1.0), 26),
    "k7": ("kvcache", "bf16", 1, 1, 32, 4, 128, [2000], False, 0, None, 0, ("normal", 2.0), 27),
    "k8": ("kvcache", "bf16", 2, 1, 8, 1, 128, [1500, 800], False, 0, False, 0, ("dominant", 1.0), 28),
    # FP8 e4m3 with per-(entry, kv head) descales
    "f1": ("func", "e4m3", 2, 200, 4, 2, 128, [300, 300], True, 1, None, 0, ("normal", 1.0), 31),
    "f2": ("func", "e4m3", 1, 128, 4, 4, 128, [1000], False, 1, None, 0, ("normal", 1.0), 32),
    "f3": ("kvcache", "e4m3", 2, 1, 8, 1, 128, [1000, 300], False, 0, None, 0, ("normal", 1.0), 33),
    "f4": ("func", "e4m3", 1, 100, 2, 2, 64, [400], False, 1, None, 0, ("normal", 2.0), 34),
    "f5": ("func", "e4m3", 1, 128, 2, 2, 128, [500], False, 1, None, 0, ("dominant", 1.0), 35),
    # q_v: DeepSeek decode as vLLM's FLASH_ATTN_MLA and SGLang's fa3 call it (q = q_rope, k = k_rope, v = c_kv,
    # qv = q_nope), stored in the lab's MLA layout
    "m1": ("qv", "bf16", 4, 1, 16, 1, 64, [700, 64, 513, 900], False, 0, None, 64, ("normal", 1.0), 41),
    "m2": ("qv", "bf16", 2, 1, 128, 1, 64, [1024, 300], False, 0, None, 64, ("normal", 1.0), 42),
    "m3": ("qv", "bf16", 2, 2, 16, 1, 64, [700, 1200], True, 0, None, 64, ("normal", 1.0), 43),
    "m4": ("qv", "bf16", 1, 1, 16, 1, 64, [1500], False, 0, None, 0, ("normal", 1.0), 44),
    "m5": ("qv", "bf16", 1, 1, 16, 1, 64, [777], False, 1, None, 0, ("normal", 1.0), 45),
    # validation: shapes and seeds the models were not written against
    "v1": ("func", "bf16", 2, 177, 6, 3, 128, [411, 411], True, 1, None, 0, ("normal", 1.0), 51),
    "v2": ("func", "bf16", 1, 333, 2, 2, 64, [333], False, 1, None, 0, ("normal", 3.0), 52),
    "v3": ("kvcache", "bf16", 3, 1, 16, 2, 128, [1500, 17, 600], False, 0, None, 0, ("normal", 1.0), 53),
    "v4": ("kvcache", "bf16", 2, 3, 8, 2, 128, [640, 1111], True, 0, None, 0, ("normal", 1.0), 54),
    "v5": ("func", "e4m3", 1, 150, 4, 1, 128, [600], True, 1, None, 0, ("normal", 1.0), 55),
    "v6": ("qv", "bf16", 3, 1, 32, 1, 64, [900, 2, 640], False, 0, None, 64, ("normal", 1.0), 56),
    # FP16 and head dim 256 (a second build: FLASH_ATTENTION_DISABLE_FP8, HDIM64 kept off), taken after the model
    "h1": ("func", "fp16", 1, 300, 4, 4, 128, [300], False, 1, None, 0, ("normal", 1.0), 61),
    "h2": ("func", "fp16", 2, 200, 4, 2, 128, [333, 333], True, 1, None, 0, ("normal", 2.0), 62),
    "h3": ("func", "bf16", 1, 100, 2, 2, 256, [257], True, 1, None, 0, ("normal", 1.0), 63),
    "h4": ("func", "fp16", 1, 128, 2, 2, 256, [700], False, 1, None, 0, ("normal", 1.0), 64),
    "h5": ("kvcache", "fp16", 3, 1, 8, 1, 128, [1000, 37, 513], False, 0, None, 0, ("normal", 1.0), 65),
    "h6": ("kvcache", "bf16", 2, 1, 4, 2, 256, [900, 129], False, 0, None, 0, ("normal", 1.0), 66),
    "h7": ("kvcache", "fp16", 2, 2, 16, 2, 128, [300, 1000], True, 0, None, 64, ("normal", 1.0), 67),
    "h8": ("func", "fp16", 1, 64, 8, 1, 256, [500], False, 0, None, 0, ("normal", 1.0), 68),
    # DeepSeek's MLA prefill as vLLM and SGLang run it: flash_attn_varlen_func with q/k head dim 192 (128 nope +
    # 64 rope) and v 128 (the hdim192_128 kernels), a query length per sequence (Sq: a list), num_splits 1; causal
    # with Sq = Sk (a new prompt) or Sq < Sk (a prefix in the cache), non-causal for chunked prefill's context part
    "p1": ("varlen", "bf16", 3, [100, 37, 250], 8, 8, 192, [100, 37, 250], True, 1, None, 0, ("normal", 1.0), 71),
    "p2": ("varlen", "bf16", 2, [64, 200], 4, 4, 192, [1000, 300], True, 1, None, 0, ("normal", 1.0), 72),
    "p3": ("varlen", "bf16", 2, [150, 90], 4, 4, 192, [700, 1200], False, 1, None, 0, ("normal", 1.0), 73),
    "p4": ("varlen", "fp16", 2, [128, 300], 4, 4, 192, [128, 500], True, 1, None, 0, ("normal", 1.0), 74),
    "p5": ("varlen", "e4m3", 1, [200], 4, 4, 192, [400], True, 1, None, 0, ("normal", 1.0), 75),
    "p6": ("varlen", "bf16", 2, [33, 1], 128, 128, 192, [33, 77], True, 1, None, 0, ("normal", 1.0), 76),
    "p7": ("func", "bf16", 1, 256, 4, 4, 192, [256], True, 1, None, 0, ("normal", 1.0), 77),
    "p8": ("varlen", "bf16", 1, [129], 2, 2, 192, [640], False, 1, None, 0, ("pow2", 1.0), 78),
    "p9": ("varlen", "bf16", 2, [300, 64], 8, 8, 192, [300, 64], True, 1, None, 0, ("normal", 4.0), 79),
    # validation: taken with the others, checked only once the model ran on p1-p9
    "pv1": ("varlen", "bf16", 4, [17, 300, 1, 129], 4, 4, 192, [17, 900, 513, 129], True, 1, None, 0,
            ("normal", 1.0), 81),
    "pv2": ("varlen", "fp16", 2, [77, 200], 4, 4, 192, [1500, 64], False, 1, None, 0, ("normal", 2.0), 82),
    "pv3": ("varlen", "e4m3", 2, [96, 40], 8, 8, 192, [300, 1000], False, 1, None, 0, ("normal", 1.0), 83),
    "pv4": ("varlen", "bf16", 3, [5, 40, 1], 32, 32, 192, [100, 40, 30], True, 1, None, 0, ("normal", 1.0), 84),
}
DIFF_DV = {192: 128}  # FA3's HDIMDIFF192: a q/k head dim of 192 runs with v 128 here
QV_DIM, QV_SCALE = 512, 192 ** -0.5  # DeepSeek: c_kv 512, q_nope 512; the scale vLLM passes (qk_head_dim 192)
E4M3 = torch.float8_e4m3fn


def rne_bits(x32, dt):
    t = torch.from_numpy(x32)
    if dt == "e4m3":
        return t.to(E4M3)
    return t.to(torch.bfloat16 if dt == "bf16" else torch.float16)


def codes(t):
    t = t.contiguous().cpu()
    if t.dtype == E4M3:
        return t.view(torch.uint8).numpy()
    return t.view(torch.int16).numpy().view(np.uint16)


def run_case(name, case):
    api, dt, B, Sq, Hq, Hkv, D, seqlens, causal, nsplit, pack, page, kind, seed = case
    if api == "varlen":
        return run_varlen(name, case)
    rs = np.random.RandomState(seed)
    smax = max(seqlens)
    Dv = QV_DIM if api == "qv" else DIFF_DV.get(D, D)
    qn, kn, vn = fa3_qkv(rs, kind, B, Sq, Hq, Hkv, D, Dv, smax)
    for b, n in enumerate(seqlens):  # rows past an entry's length are zero (never read)
        kn[b, n:] = 0
        vn[b, n:] = 0
    q, k, v = (rne_bits(x, dt).cuda() for x in (qn, kn, vn))
    kw = {"causal": causal, "num_splits": nsplit, "pack_gqa": pack}
    info = {"api": api, "dtype": dt, "B": B, "Sq": Sq, "Hq": Hq, "Hkv": Hkv, "D": D, "Dv": Dv, "seqlens": seqlens,
            "causal": causal, "num_splits_asked": nsplit, "pack_gqa_asked": pack, "page_size": page,
            "inputs": list(kind), "seed": seed}
    extra = {}
    if api == "qv":
        qv = rne_bits(draw(rs, (B, Sq, Hq, QV_DIM), kind), dt).cuda()
        kw["qv"] = qv
        kw["softmax_scale"] = QV_SCALE
        info["softmax_scale"] = QV_SCALE
    else:
        info["softmax_scale"] = D ** -0.5
    if dt == "e4m3":
        for nm in ("q_descale", "k_descale", "v_descale"):
            ds = rs.uniform(0.5, 2.0, (B, Hkv)).astype(np.float32)
            extra[nm] = ds
            kw[nm] = torch.from_numpy(ds).cuda()
    if api != "func":
        kw["seqused_k"] = torch.tensor(seqlens, dtype=torch.int32, device="cuda")
        kw["max_seqlen_q"] = Sq
    kc, vc = k, v
    if page:
        nb = (smax + page - 1) // page
        perm = torch.from_numpy(rs.permutation(B * nb).astype(np.int32)).cuda()  # pages scattered
        kp = torch.zeros(B * nb, page, Hkv, D, dtype=k.dtype, device="cuda")
        vp = torch.zeros(B * nb, page, Hkv, Dv, dtype=v.dtype, device="cuda")
        kpad = torch.zeros(B, nb * page, Hkv, D, dtype=k.dtype, device="cuda")
        vpad = torch.zeros(B, nb * page, Hkv, Dv, dtype=v.dtype, device="cuda")
        kpad[:, :smax], vpad[:, :smax] = k, v
        table = perm.view(B, nb)
        kp[table.flatten().long()] = kpad.view(B * nb, page, Hkv, D)
        vp[table.flatten().long()] = vpad.view(B * nb, page, Hkv, Dv)
        kc, vc = kp, vp
        kw["page_table"] = table
    out, lse, d = call_three_times(name, info, q, kc, vc, kw)
    if api == "qv":  # the lab's MLA layout: q = [q_nope | q_rope], k = [c_kv | k_rope], V = K[..., :512]
        qs = np.concatenate([codes(kw["qv"]), codes(q)], axis=-1)
        ks = np.concatenate([codes(v), codes(k)], axis=-1)[:, :, 0]
        np.save(os.path.join(d, "q.npy"), qs)
        np.save(os.path.join(d, "k.npy"), ks)
    else:
        for nm, t in (("q", q), ("k", k), ("v", v)):
            np.save(os.path.join(d, nm + ".npy"), codes(t))
    for nm, a in extra.items():
        np.save(os.path.join(d, nm + ".npy"), a)
    np.save(os.path.join(d, "seqlens.npy"), np.array(seqlens, np.int32))
    np.save(os.path.join(d, "out.npy"), codes(out))
    np.save(os.path.join(d, "lse.npy"), np.ascontiguousarray(lse.float().cpu().numpy()))
    if causal:
        open(os.path.join(d, "causal"), "w").close()
    return info


def call_three_times(name, info, q, k, v, kw):
    """the forward three times on the same inputs: its out and lse, whether the runs agreed, the splits it ran, and
    the case's folder (made)"""
    runs = [fa3._flash_attn_forward(q, k, v, **kw) for _ in range(3)]
    torch.cuda.synchronize()
    out, lse, oacc, _ = runs[0]
    info["deterministic_3_runs"] = all(torch.equal(r[0].view(torch.uint8), out.view(torch.uint8))
                                       and torch.equal(r[1], lse) for r in runs)
    info["num_splits_run"] = int(oacc.shape[0]) if oacc.numel() else 1
    info["out_dtype"] = str(out.dtype).replace("torch.", "")
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    return out, lse, d


def run_varlen(name, case):
    """flash_attn_varlen_func's call: every sequence's queries and keys packed along the first dimension."""
    api, dt, B, sqs, Hq, Hkv, D, seqlens, causal, nsplit, pack, page, kind, seed = case
    rs = np.random.RandomState(seed)
    Dv = DIFF_DV.get(D, D)
    tq, tk = sum(sqs), sum(seqlens)
    q1, k1, v1 = fa3_qkv(rs, kind, 1, tq, Hq, Hkv, D, Dv, tk)
    q, k, v = (rne_bits(x[0], dt).cuda() for x in (q1, k1, v1))
    cq = torch.tensor(np.concatenate([[0], np.cumsum(sqs)]), dtype=torch.int32, device="cuda")
    ck = torch.tensor(np.concatenate([[0], np.cumsum(seqlens)]), dtype=torch.int32, device="cuda")
    kw = {"causal": causal, "num_splits": nsplit, "pack_gqa": pack, "cu_seqlens_q": cq, "cu_seqlens_k": ck,
          "max_seqlen_q": max(sqs), "max_seqlen_k": max(seqlens)}
    info = {"api": api, "dtype": dt, "B": B, "Sq": sqs, "Hq": Hq, "Hkv": Hkv, "D": D, "Dv": Dv, "seqlens": seqlens,
            "causal": causal, "num_splits_asked": nsplit, "pack_gqa_asked": pack, "inputs": list(kind), "seed": seed,
            "softmax_scale": D ** -0.5}
    extra = {}
    if dt == "e4m3":
        for nm in ("q_descale", "k_descale", "v_descale"):
            ds = rs.uniform(0.5, 2.0, (B, Hkv)).astype(np.float32)
            extra[nm] = ds
            kw[nm] = torch.from_numpy(ds).cuda()
    out, lse, d = call_three_times(name, info, q, k, v, kw)
    for nm, t in (("q", q), ("k", k), ("v", v), ("out", out)):
        np.save(os.path.join(d, nm + ".npy"), codes(t))
    for nm, a in extra.items():
        np.save(os.path.join(d, nm + ".npy"), a)
    np.save(os.path.join(d, "cu_seqlens_q.npy"), cq.cpu().numpy())
    np.save(os.path.join(d, "cu_seqlens_k.npy"), ck.cpu().numpy())
    np.save(os.path.join(d, "lse.npy"), np.ascontiguousarray(lse.float().cpu().numpy()))  # [Hq, total_q]
    if causal:
        open(os.path.join(d, "causal"), "w").close()
    return info


def main():
    os.makedirs(OUT, exist_ok=True)
    meta = {"what": "FlashAttention-3 forward (hopper/) outputs with their exact inputs (scripts/device/capture_fa3.py)",
            "device": torch.cuda.get_device_name(), "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "build": {k: os.environ.get(k) for k in ("FA3_COMMIT", "CUTLASS_COMMIT", "FA3_BUILD_FLAGS", "NVCC_VERSION")},
            "layout": __doc__.split("\n\n")[1], "cases": {}}
    only = os.environ.get("CAPTURE_CASES")
    for name, case in CASES.items():
        if only and name not in only.split(","):
            continue
        try:
            meta["cases"][name] = run_case(name, case)
        except Exception as e:  # the build or the kernel refuses the case: recorded, the rest goes on
            meta["cases"][name] = {"error": str(e).splitlines()[0][:300]}
        print(name, json.dumps(meta["cases"][name]), flush=True)
    with open(os.path.join(OUT, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
