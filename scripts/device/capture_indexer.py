#!/usr/bin/env python3
"""[CAPTURE_CASES=a,b] capture_indexer.py DEEPGEMM OUTDIR -- run DeepGEMM's lightning-indexer kernels (DeepSeek-V3.2's
and V4's top-k scores: fp8_fp4_mqa_logits for prefill, fp8_fp4_paged_mqa_logits for decode) on a Hopper GPU and keep
their outputs with their exact inputs, one folder a case, in the layout of the kernels' arguments:

  prefill (fp8_fp4_mqa_logits((q, None), (kv, k_scale), weights, ks, ke, clean_logits=True, max_seqlen_k, dtype)):
    q.npy uint8 e4m3 codes [S, H, D], k.npy uint8 codes [Skv, D], k_scale.npy float32 [Skv], weights.npy float32
    [S, H], ks.npy / ke.npy int32 [S], logits.npy float32 or uint16 bf16 bits [S, Skv] (-inf outside [ks, ke); with
    max_seqlen_k > 0 the compressed form [S, max_seqlen_k], column j being key ks + j, meta 'compressed'),
    topk.npy int32 [S, k] (torch.topk of the logits, for the selection metrics)
  paged (get_paged_mqa_logits_metadata + fp8_fp4_paged_mqa_logits, clean_logits=False):
    q.npy codes [B, next_n, H, D], kv_cache.npy uint8 [blocks, 64, 1, D + 4] (a block's 64 x D codes, then its 64
    float32 scales), weights.npy float32 [B * next_n, H], context_lens.npy int32 [B, next_n], block_table.npy
    int32 [B, max_blocks], logits.npy [B * next_n, max_context_len] (positions at or past a token's context
    length are whatever the kernel left there: not compared)

DEEPGEMM is deepseek-ai/DeepGEMM 54e2261 built in place (indexer-captures.sh). Inputs: numpy RandomState(seed):
q ~ N(0, 1) float32 to e4m3 (torch, RNE); k ~ N(0, 1) float32 to bf16, then DeepGEMM's per-token cast
(per_custom_dims_cast_to_fp8: amax over the row, clamp 1e-4, sf = amax / 448, codes = e4m3(k * (1 / sf)));
weights ~ N(0, 1) H^-1/2 D^-1/2 (the softmax scale and the head average folded in, as DeepSeek's caller does); the
paged cache cast as DeepGEMM's tests/test_attention.py does (kv_cache_cast_to_fp8). The JIT's generated kernel.cu
and the SASS of its cubins are kept under OUTDIR/jit.
"""
import glob
import json
import os
import subprocess
import sys

import numpy as np
import torch

DG, OUT = sys.argv[1], sys.argv[2]
sys.path.insert(0, DG)
import deep_gemm  # noqa: E402

# prefill: S, H, D, Skv, ks/ke form ('causal': ks 0, ke = Skv - S + i + 1; 'window': random windows; 'cp': DeepGEMM's
#          context-parallel pattern), logits dtype, compressed, top-k, seed
PREFILL = {
    "i1": (64, 64, 128, 2048, "causal", "float32", False, 512, 1001),
    "i2": (64, 64, 128, 2048, "causal", "bfloat16", False, 512, 1002),
    "i3": (32, 32, 128, 4096, "window", "float32", False, 256, 1003),
    "i4": (64, 64, 128, 8192, "causal", "float32", False, 2048, 1004),
    "i5": (48, 64, 64, 1024, "cp", "float32", False, 128, 1005),
    "i6": (40, 64, 128, 3000, "window", "bfloat16", True, 256, 1006),
    # validation: taken with the others, checked only once the model runs on i1-i6
    "iv1": (96, 64, 128, 5000, "window", "float32", False, 2048, 1051),
    "iv2": (32, 32, 128, 2048, "causal", "bfloat16", False, 512, 1052),
}
# paged: B, next_n, H, D, context lengths (low, high), logits dtype, seed
PAGED = {
    "p1": (4, 2, 64, 128, (300, 3000), "float32", 2001),
    "p2": (3, 1, 64, 128, (64, 2000), "bfloat16", 2002),
    "p3": (5, 1, 32, 128, (1, 700), "float32", 2003),
    "pv1": (6, 2, 64, 128, (500, 4000), "float32", 2051),
}


def dev(a):
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def codes(t):
    return t.view(torch.uint8).cpu().numpy()


def out_array(t):
    t = t.contiguous()
    return t.view(torch.int16).cpu().numpy().view(np.uint16) if t.dtype == torch.bfloat16 else t.float().cpu().numpy()


def ks_ke(rs, S, Skv, form):
    if form == "causal":
        return np.zeros(S, np.int32), (np.arange(S) + Skv - S + 1).astype(np.int32)
    if form == "cp":  # DeepGEMM's generate_ks_ke_tests, rank cp_size // 3
        half, cp = S // 2, Skv // S
        cid = cp // 3
        ke = np.array([cid * half + i for i in range(half)] + [(cp * 2 - 1 - cid) * half + i for i in range(half)])
        return np.zeros(S, np.int32), ke.astype(np.int32)
    ks = rs.randint(0, Skv // 2, S)
    return ks.astype(np.int32), np.minimum(ks + rs.randint(1, Skv, S), Skv).astype(np.int32)


def thrice(fn):
    """the call three times; the outputs must agree bit for bit"""
    outs = [fn() for _ in range(3)]
    same = all(torch.equal(outs[0].view(torch.uint8) if outs[0].dtype != torch.float32 else outs[0].view(torch.int32),
                           o.view(torch.uint8) if o.dtype != torch.float32 else o.view(torch.int32)) for o in outs[1:])
    return outs[0], same


def prefill(name, case, meta):
    S, H, D, Skv, form, dt, compressed, topk, seed = case
    rs = np.random.RandomState(seed)
    q = dev(rs.normal(0, 1, (S, H, D)).astype(np.float32)).to(torch.float8_e4m3fn)
    kv = dev(rs.normal(0, 1, (Skv, D)).astype(np.float32)).to(torch.bfloat16)
    w = (rs.normal(0, 1, (S, H)) * (H ** -0.5 * D ** -0.5)).astype(np.float32)
    ks, ke = ks_ke(rs, S, Skv, form)
    amax = kv.abs().float().amax(dim=1, keepdim=True).clamp(1e-4)
    sf = amax / 448.0
    kq = (kv * (1.0 / sf)).to(torch.float8_e4m3fn)
    sf = sf.squeeze(1).contiguous()
    max_k = int((ke - ks).max()) if compressed else 0
    dtype = getattr(torch, dt)
    logits, same = thrice(lambda: deep_gemm.fp8_fp4_mqa_logits(
        (q, None), (kq, sf), dev(w), dev(ks), dev(ke), clean_logits=not compressed, max_seqlen_k=max_k,
        logits_dtype=dtype).contiguous())
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "q.npy"), codes(q))
    np.save(os.path.join(d, "k.npy"), codes(kq))
    np.save(os.path.join(d, "k_scale.npy"), sf.cpu().numpy())
    np.save(os.path.join(d, "weights.npy"), w)
    np.save(os.path.join(d, "ks.npy"), ks)
    np.save(os.path.join(d, "ke.npy"), ke)
    np.save(os.path.join(d, "logits.npy"), out_array(logits))
    if not compressed:
        k = min(topk, Skv)
        np.save(os.path.join(d, "topk.npy"), torch.topk(logits.float(), k, dim=-1).indices.int().cpu().numpy())
    meta["cases"][name] = dict(kind="prefill", S=S, H=H, D=D, Skv=Skv, ks_ke=form, logits_dtype=dt,
                               compressed=compressed, max_seqlen_k=max_k, topk=topk, seed=seed,
                               deterministic_3_runs=same)


def paged(name, case, meta):
    B, nn, H, D, (lo, hi), dt, seed = case
    rs = np.random.RandomState(seed)
    ctx = rs.randint(lo, hi + 1, B)
    nblk = (ctx + 63) // 64
    total = int(nblk.sum())
    perm = rs.permutation(total).astype(np.int32)
    table = np.zeros((B, int(nblk.max())), np.int32)
    off = 0
    for b in range(B):
        table[b, :nblk[b]] = perm[off:off + nblk[b]]
        off += nblk[b]
    lens = ((ctx[:, None] + 1) * rs.uniform(0, 1, (B, nn))).astype(np.int32)
    lens[:, -1] = ctx
    q = dev(rs.normal(0, 1, (B, nn, H, D)).astype(np.float32)).to(torch.float8_e4m3fn)
    x = dev(rs.normal(0, 1, (total, 64, 1, D)).astype(np.float32)).to(torch.bfloat16)
    w = (rs.normal(0, 1, (B * nn, H)) * (H ** -0.5 * D ** -0.5)).astype(np.float32)
    amax = x.abs().float().amax(dim=3, keepdim=True).clamp(1e-4)  # DeepGEMM's kv_cache_cast_to_fp8
    sf = amax / 448.0
    xs = (x * (1.0 / sf)).to(torch.float8_e4m3fn)
    fused = torch.empty((total, 64 * (D + 4)), device="cuda", dtype=torch.uint8)
    fused[:, :64 * D] = xs.view(total, 64 * D).view(torch.uint8)
    fused[:, 64 * D:] = sf.view(total, 64).view(torch.uint8)
    fused = fused.view(total, 64, 1, D + 4)
    max_len = int(nblk.max()) * 64
    lens_d = dev(lens)
    sched = deep_gemm.get_paged_mqa_logits_metadata(lens_d, 64, deep_gemm.get_num_sms())
    dtype = getattr(torch, dt)
    logits, same = thrice(lambda: deep_gemm.fp8_fp4_paged_mqa_logits(
        (q, None), fused, dev(w), lens_d, dev(table), sched, max_len, clean_logits=False, logits_dtype=dtype).contiguous())
    # only the positions below each token's context length are the kernel's answer (the rest are not compared)
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "q.npy"), codes(q))
    np.save(os.path.join(d, "kv_cache.npy"), fused.cpu().numpy())
    np.save(os.path.join(d, "weights.npy"), w)
    np.save(os.path.join(d, "context_lens.npy"), lens)
    np.save(os.path.join(d, "block_table.npy"), table)
    np.save(os.path.join(d, "logits.npy"), out_array(logits))
    meta["cases"][name] = dict(kind="paged", B=B, next_n=nn, H=H, D=D, context_lens=ctx.tolist(), logits_dtype=dt,
                               max_context_len=max_len, seed=seed, deterministic_3_runs=same)


def main():
    os.makedirs(OUT, exist_ok=True)
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    meta = {"what": __doc__.split("\n\n")[0], "layout": __doc__.split("\n\n")[1], "inputs": __doc__.split("\n\n")[2],
            "commit": os.environ.get("DG_COMMIT", "54e2261"), "cutlass": "f3fde58", "device": torch.cuda.get_device_name(),
            "sm_count": deep_gemm.get_num_sms(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "nvcc": nvcc, "cases": {}}
    only = os.environ.get("CAPTURE_CASES")
    for table, fn in ((PREFILL, prefill), (PAGED, paged)):
        for name, case in table.items():
            if only and name not in only.split(","):
                continue
            try:
                fn(name, case, meta)
                print(name, "done", flush=True)
            except Exception as e:  # one case's failure is reported, the others still run
                meta["cases"][name] = {"error": repr(e)}
                print(name, "FAILED", repr(e), flush=True)
    with open(os.path.join(OUT, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    jit = os.path.join(OUT, "jit")
    os.makedirs(jit, exist_ok=True)
    cache = os.environ.get("DG_JIT_CACHE_DIR", os.path.expanduser("~/.deep_gemm"))
    for i, cu in enumerate(sorted(glob.glob(os.path.join(cache, "**", "kernel.cu"), recursive=True))):
        d = os.path.dirname(cu)
        with open(cu) as f:
            src = f.read()
        if "mqa_logits" not in src:
            continue
        with open(os.path.join(jit, "k%d.cu" % i), "w") as f:
            f.write(src)
        for cubin in glob.glob(os.path.join(d, "*.cubin")):
            sass = subprocess.run(["cuobjdump", "-sass", cubin], capture_output=True, text=True).stdout
            with open(os.path.join(jit, "k%d.sass" % i), "w") as f:
                f.write(sass)


if __name__ == "__main__":
    main()
