"""capture_inputs -- the inputs of the capture scripts (capture_flashmla.py, capture_etap.py) as
numpy draws them, so that a case can be drawn again from its seed without a GPU (etap-table1.py):
bit patterns of bf16 (RNE on the float32 bits) or fp16 (numpy's RNE) from float32 draws."""
import numpy as np


def bf16_bits(x32):
    u = x32.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def draw(rs, shape, dist):
    """normal(0, p), uniform(-p, p), or outlier: normal(0, 1) with one entry in 100 (a uniform draw
    below 0.01, drawn after the normals) times p"""
    kind, p = dist
    if kind == "outlier":
        x = rs.normal(0.0, 1.0, shape)
        x = np.where(rs.uniform(0.0, 1.0, shape) < 0.01, x * p, x)
    else:
        x = rs.normal(0.0, p, shape) if kind == "normal" else rs.uniform(-p, p, shape)
    return x.astype(np.float32)


def describe(dist):
    kind, p = dist
    return {"normal": f"normal(0, sigma={p})", "uniform": f"uniform(-a, a, a={p})",
            "outlier": f"outlier(normal(0, 1), 1% of entries times {p})"}[kind]


def bits(x32, dtype):
    return bf16_bits(x32) if dtype == "bf16" else x32.astype(np.float16).view(np.uint16)


def etap_table1_case(seed, ctx):
    """FlashMLA-ETAP Table 1's setting as capture_etap.py draws it: fp16 q [16, 576] then k [ctx, 576],
    N(0, 1), from RandomState(seed)"""
    rs = np.random.RandomState(seed)
    q = bits(draw(rs, (1, 1, 16, 576), ("normal", 1.0)), "fp16")
    k = bits(draw(rs, (ctx, 576), ("normal", 1.0)), "fp16")
    return q, k
