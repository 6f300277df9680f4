#!/usr/bin/env python3
"""[CAPTURE_CASES=a,b] capture_flashmla_fp8.py FLASHMLA OUTDIR -- run FlashMLA's FP8 sparse decoding kernel
(csrc/sm90/decode/sparse_fp8) on a Hopper GPU and keep its outputs with their exact inputs: OUTDIR/NAME.npz per
case and OUTDIR/meta.json (every key and layout fact).

FLASHMLA is a source tree of deepseek-ai/FlashMLA at 9241ae3 (csrc/, flash_mla/, tests/quant.py, setup.py) with
CUTLASS 147f567 (its submodule: include/ and tools/util/include/) in csrc/cutlass. The extension is built with
setup.py's sources and nvcc flags for sm_90a alone (FLASH_MLA_DISABLE_SM100). The caches are made by FlashMLA's own
tests/quant.py from BF16 values drawn here, and the BF16 values are kept too, so that the lab's quantizer can be
checked byte for byte against the kernel's cache. Runs on the device machine (torch, CUDA, nvcc); the lab's side is
scripts/flashmla-fp8-check.sh.
"""
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'checks'))  # capture_inputs
from capture_inputs import bf16_bits, draw_wide  # noqa: E402

COMMIT = "9241ae3"
CUTLASS = "147f5673d0c1c3dcf66f78d677fd647e4a020219"
# setup.py's nvcc flags with FLASH_MLA_DISABLE_SM100=1 (recorded in meta.json; setup.py passes them itself)
NVCC_FLAGS = ["-O3", "-std=c++20", "-DNDEBUG", "-D_USE_MATH_DEFINES", "-Wno-deprecated-declarations",
              "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__", "-U__CUDA_NO_HALF2_OPERATORS__",
              "-U__CUDA_NO_BFLOAT16_CONVERSIONS__", "--expt-relaxed-constexpr", "--expt-extended-lambda",
              "--use_fast_math", "--ptxas-options=-v,--register-usage-level=10,--warn-on-spills,"
              "--warn-on-local-memory-usage,--warn-on-double-precision-use", "-lineinfo", "--source-in-ptx",
              "-gencode", "arch=compute_90a,code=sm_90a", "--threads", "4"]
# setup.py's sources (under csrc/), the sm100 ones compiled for sm_90a only
SOURCES = ["api/api.cpp", "smxx/decode/get_decoding_sched_meta/get_decoding_sched_meta.cu",
           "smxx/decode/combine/combine.cu",
           "sm90/decode/dense/instantiations/fp16.cu", "sm90/decode/dense/instantiations/bf16.cu",
           "sm90/decode/sparse_fp8/instantiations/model1_persistent_h64.cu",
           "sm90/decode/sparse_fp8/instantiations/model1_persistent_h128.cu",
           "sm90/decode/sparse_fp8/instantiations/v32_persistent_h64.cu",
           "sm90/decode/sparse_fp8/instantiations/v32_persistent_h128.cu",
           "sm90/prefill/sparse/fwd.cu", "sm90/prefill/sparse/instantiations/phase1_k512.cu",
           "sm90/prefill/sparse/instantiations/phase1_k512_topklen.cu",
           "sm90/prefill/sparse/instantiations/phase1_k576.cu",
           "sm90/prefill/sparse/instantiations/phase1_k576_topklen.cu",
           "sm100/prefill/dense/fmha_cutlass_fwd_sm100.cu", "sm100/prefill/dense/fmha_cutlass_bwd_sm100.cu",
           "sm100/prefill/sparse/fwd/head64/instantiations/phase1_k512.cu",
           "sm100/prefill/sparse/fwd/head64/instantiations/phase1_k576.cu",
           "sm100/prefill/sparse/fwd/head128/instantiations/phase1_k512.cu",
           "sm100/prefill/sparse/fwd/head128/instantiations/phase1_k576.cu",
           "sm100/prefill/sparse/fwd_for_small_topk/head128/instantiations/phase1_prefill_k512.cu",
           "sm100/decode/head64/instantiations/v32.cu", "sm100/decode/head64/instantiations/model1.cu",
           "sm100/prefill/sparse/fwd_for_small_topk/head128/instantiations/phase1_decode_k512.cu"]

# name: layout, b, s_q, h_q, topk, cache tokens, invalid fraction, topk_length (MODEL1), distribution, seed.
# Distributions of the BF16 values before quantization (K's last 64 dims, the RoPE part, and Q's, ten times
# wider, as the lab's --dist mla): ("normal", s): N(0, s^2); ("wide", s): N(0, 1) times exp(N(0, s^2)) per token
# (per query row for Q), so that tile scales vary over many binades and some fall to the 1e-4 floor;
# ("outlier", p): N(0, 1) with one entry in 100 times p.
CASES = {
    "v1": ("V32", 1, 1, 64, 64, 256, 0.0, None, ("normal", 1.0), 501),
    "v2": ("V32", 2, 2, 128, 512, 2048, 0.1, None, ("normal", 1.0), 502),
    "v3": ("V32", 4, 1, 64, 2048, 4096, 0.05, None, ("wide", 2.0), 503),
    "v4": ("V32", 3, 2, 64, 1024, 3000, 0.3, None, ("outlier", 20.0), 504),
    "v5": ("V32", 2, 1, 128, 128, 128, -1.0, None, ("normal", 1.0), 505),  # entry 1: every index -1
    "v6": ("V32", 8, 1, 128, 256, 1024, 0.02, None, ("normal", 4.0), 506),
    "m1": ("MODEL1", 1, 1, 64, 64, 256, 0.0, None, ("normal", 1.0), 601),
    "m2": ("MODEL1", 3, 2, 128, 512, 2048, 0.1, [512, 100, 1], ("wide", 2.0), 602),
    "m3": ("MODEL1", 4, 1, 64, 2048, 4096, 0.05, None, ("outlier", 20.0), 603),
    "m4": ("MODEL1", 2, 2, 64, 1024, 2000, 0.0, [700, 0], ("normal", 1.0), 604),
    # a second round, checked only after the model was written: other page sizes (the 11th field; 64 above),
    # s_q 3, top-k lengths across block edges, half the indices invalid
    "x1": ("V32", 5, 1, 128, 320, 5000, 0.2, None, ("normal", 2.0), 701, 2),
    "x2": ("MODEL1", 3, 3, 64, 576, 3000, 0.0, [576, 333, 64], ("outlier", 8.0), 702, 69),
    "x3": ("V32", 1, 2, 64, 2048, 9000, 0.5, None, ("wide", 1.0), 703, 576),
    "x4": ("MODEL1", 6, 1, 128, 128, 1500, 0.05, [128, 65, 64, 63, 1, 127], ("normal", 1.0), 704, 61),
}
LAYOUT = {"V32": (576, 512, 128, 4, 656), "MODEL1": (512, 448, 64, 7, 584)}  # d, d_nope, tile, tiles, bytes
PAGE = 64  # page_block_size unless a case names another
ROPE_SCALE = 10.0


def build(root):
    """setup.py build_ext --inplace with sm90a alone (ninja keeps the sources' paths apart, as the JIT loader's
    basenames do not); returns the module flash_mla.cuda and the folder of its objects."""
    t0 = time.time()
    env = dict(os.environ, FLASH_MLA_DISABLE_SM100="1", NVCC_THREADS="4")
    r = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=root, env=env,
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(r.stdout[-3000:] + r.stderr[-6000:])
    sys.path.insert(0, root)
    import flash_mla.cuda as mod
    print(f"built in {time.time() - t0:.0f} s", flush=True)
    return mod, os.path.join(root, "build")


def bf16_from(x64):
    return bf16_bits(x64.astype(np.float32))


def to_bf16(bits):
    return torch.from_numpy(bits.view(np.int16).copy()).cuda().view(torch.bfloat16)


def run_case(mod, quant, name, case, outdir):
    layout, b, s_q, h_q, topk, ntok, invalid, topk_length, dist, seed = case[:10]
    page = case[10] if len(case) > 10 else PAGE
    d, d_nope, tile, ntiles, nbytes = LAYOUT[layout]
    rs = np.random.RandomState(seed)
    qx = draw_wide(rs, (b, s_q, h_q, d), dist)
    qx[..., d_nope:] *= ROPE_SCALE
    kx = draw_wide(rs, (ntok, d), dist)
    kx[:, d_nope:] *= ROPE_SCALE
    nblocks = (ntok + page - 1) // page
    kpad = np.zeros((nblocks * page, d))
    kpad[:ntok] = kx
    q = bf16_from(qx)
    k = bf16_from(kpad).reshape(nblocks, page, 1, d)
    idx = rs.randint(0, ntok, size=(b, s_q, topk)).astype(np.int32)
    if invalid > 0:
        idx = np.where(rs.uniform(0.0, 1.0, idx.shape) < invalid, -1, idx).astype(np.int32)
    elif invalid < 0:  # the last entry has no valid index
        idx[-1] = -1
    if topk_length is not None:  # indices past an entry's length are junk the kernel must not read
        for i, n in enumerate(topk_length):
            idx[i, :, n:] = np.int32(2 ** 31 - 1)
    kind = quant.FP8KVCacheLayout.V32_FP8Sparse if layout == "V32" else quant.FP8KVCacheLayout.MODEL1_FP8Sparse
    kc = quant.quantize_k_cache(to_bf16(k), kind)  # FlashMLA's own quantizer: the cache as the kernel reads it
    kc_bytes = kc.view(torch.uint8).contiguous().cpu().numpy()  # [blocks, 64, 1, bytes], padding dropped
    qt = to_bf16(q)
    it = torch.from_numpy(idx).cuda()
    tl = torch.tensor(topk_length, dtype=torch.int32, device="cuda") if topk_length is not None else None
    scale = d ** -0.5
    out, lse, tsm, ns = mod.sparse_decode_fwd(qt, kc, it, tl, None, None, None, None, None, None, 512, scale)
    parts = tsm.shape[0]
    # the single split: part 0 takes every entry whole, the other parts are idle (begin_req_idx = b)
    last = topk if topk_length is None else max((topk_length[-1] + 63) // 64 * 64, 64)
    one = torch.zeros_like(tsm)
    one[0, :5] = torch.tensor([0, b - 1, 0, last // 64, 0], dtype=torch.int32)
    one[1:, 0] = b
    res = {}
    for path, (m, n) in {"": (tsm, ns), "_nosplit": (one, torch.arange(b + 1, dtype=torch.int32, device="cuda"))}.items():
        runs = [mod.sparse_decode_fwd(qt, kc, it, tl, None, m, n, None, None, None, 512, scale)[:2] for _ in range(3)]
        torch.cuda.synchronize()
        same = all(torch.equal(r[0].view(torch.int16), runs[0][0].view(torch.int16))
                   and torch.equal(r[1].view(torch.int32), runs[0][1].view(torch.int32)) for r in runs)
        o, l = runs[0]
        res["out" + path] = o.view(torch.int16).cpu().numpy().view(np.uint16)
        res["lse" + path] = np.ascontiguousarray(l.float().cpu().numpy())  # [b, h_q, s_q]
        res["tile_scheduler_metadata" + path] = m.cpu().numpy()
        res["num_splits" + path] = n.cpu().numpy()
        res["deterministic" + path] = same
    first_same = torch.equal(out.view(torch.int16), torch.from_numpy(res["out"].view(np.int16)).cuda())
    extra = {"topk_length": np.array(topk_length, np.int32)} if topk_length is not None else {}
    np.savez_compressed(os.path.join(outdir, name + ".npz"), q=q, k_bf16=k, kcache=kc_bytes, indices=idx, **extra,
                        **{key: v for key, v in res.items() if not key.startswith("deterministic")})
    return {"layout": layout, "b": b, "s_q": s_q, "h_q": h_q, "topk": topk, "cache_tokens": ntok,
            "cache_blocks": nblocks, "page_block_size": page, "invalid_fraction": invalid, "topk_length": topk_length,
            "distribution": list(dist), "seed": seed, "softmax_scale": scale, "num_sm_parts": int(parts),
            "num_splits": res["num_splits"].tolist(),
            "deterministic_3_runs": bool(res["deterministic"] and res["deterministic_nosplit"] and first_same)}


def sass(bdir, outdir):
    """The sparse kernels' SASS (cuobjdump of the built objects), for the model's instruction-level facts."""
    objs = [os.path.join(d, f) for d, _, fs in os.walk(bdir) for f in fs if "persistent" in f and f.endswith(".o")]
    with open(os.path.join(outdir, "sass.txt"), "w") as f:
        for o in sorted(objs):
            f.write(f"// {os.path.basename(o)}\n")
            f.write(subprocess.run(["cuobjdump", "-sass", o], capture_output=True, text=True).stdout)
    subprocess.run(["xz", "-9", os.path.join(outdir, "sass.txt")])


def main():
    root, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    sys.path.insert(0, os.path.join(root, "tests"))
    import quant  # FlashMLA's tests/quant.py
    mod, bdir = build(root)
    cases = {}
    only = os.environ.get("CAPTURE_CASES")
    for name, case in CASES.items():
        if only and name not in only.split(","):
            continue
        cases[name] = run_case(mod, quant, name, case, outdir)
        print(name, json.dumps(cases[name]), flush=True)
    meta = {
        "what": "Outputs of FlashMLA's FP8 sparse decoding kernel (sm90/decode/sparse_fp8) on "
                + torch.cuda.get_device_name() + ", with their exact inputs (written by scripts/device/capture_flashmla_fp8.py)",
        "commit": COMMIT, "cutlass": CUTLASS, "build": os.environ.get("FLASHMLA_BUILD"), "device": torch.cuda.get_device_name(),
        "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "nvcc": subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1],
        "nvcc_flags": NVCC_FLAGS, "sources": SOURCES,
        "api": "flash_mla.cuda.sparse_decode_fwd(q, kcache, indices, topk_length, None, tile_scheduler_metadata, "
               "num_splits, None, None, None, 512, d ** -0.5): flash_mla_with_kvcache's sparse path with no attn_sink "
               "and no extra cache; the default path passes no metadata (the API's get_decoding_sched_meta fills it), "
               "the no-split path hands part 0 every entry whole and leaves the other parts idle",
        "keys": {"q": "uint16 bf16 bits [b, s_q, h_q, d]",
                 "k_bf16": "uint16 bf16 bits [blocks, 64, 1, d]: the values FlashMLA's tests/quant.py quantized "
                           "(tokens past cache_tokens are zero)",
                 "kcache": "uint8 [blocks, 64, 1, bytes]: the cache bytes as the kernel reads them (MODEL1: a block's "
                           "64 x (448 e4m3 + 64 bf16) bytes, then 64 x 8 bytes of e8m0 scales, 7 and a pad byte; the "
                           "[64, 1, 584] view does not follow tokens)",
                 "indices": "int32 [b, s_q, topk]: token ids in the cache (block * 64 + row), -1 invalid",
                 "topk_length": "int32 [b] (MODEL1 cases that have one); indices past it are 2^31 - 1",
                 "out, out_nosplit": "uint16 bf16 bits [b, s_q, h_q, 512]",
                 "lse, lse_nosplit": "float32 [b, h_q, s_q], natural log; +inf for a row with no valid key",
                 "tile_scheduler_metadata(_nosplit)": "int32 [parts, 8]: begin_req_idx, end_req_idx, begin_block_idx, "
                                                      "end_block_idx, begin_split_idx, is_first_req_splitted, "
                                                      "is_last_req_splitted, pad",
                 "num_splits(_nosplit)": "int32 [b + 1], cumulative"},
        "layouts": {"V32": "d 576: 512 e4m3 in 4 tiles of 128, 4 float32 scales, 64 bf16 RoPE: 656 bytes a token",
                    "MODEL1": "d 512: 448 e4m3 in 7 tiles of 64, 7 e8m0 scales + 1 pad byte, 64 bf16 RoPE: 584 bytes"},
        "input_generation": "numpy RandomState(seed): q [b, s_q, h_q, d] then k [cache_tokens, d] (normal: N(0, s^2); "
                            "wide: N(0,1) exp(N(0, s^2)) per row; outlier: N(0,1), then a uniform draw of the same "
                            "shape, entries below 0.01 times p), the last 64 dims times 10 (RoPE), float64 -> float32 "
                            "-> bf16 RNE; then indices randint(0, cache_tokens, [b, s_q, topk]) and, with an invalid "
                            "fraction f > 0, a uniform draw below f makes an index -1 (f = -1: the last entry all -1)",
        "cases": cases}
    with open(os.path.join(outdir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    try:
        sass(bdir, outdir)
    except Exception as e:  # the captures stand without it
        print("sass:", e)


if __name__ == "__main__":
    main()
