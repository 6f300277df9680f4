"""capture_inputs -- the inputs of the capture scripts (capture_flashmla.py, capture_etap.py, capture_fa3.py,
capture_flashmla_fp8.py, capture_flashmla_prefill.py) as numpy draws them, so that a case can be drawn again from
its seed without a GPU (etap-table1.py, rebuild_inputs.py): bit patterns of bf16 (RNE on the float32 bits), fp16
(numpy's RNE) or e4m3 (RNE, as torch's float8_e4m3fn cast) from the draws."""
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


def flashmla_qk(rs, b, s_q, h_q, seqlens, dist, dtype):
    """capture_flashmla.py's (and capture_etap.py's) q [b, s_q, h_q, 576], then k [b, max(seqlens), 576] entry by
    entry (rows past an entry's length zero), as bits of dtype"""
    q = bits(draw(rs, (b, s_q, h_q, 576), dist), dtype)
    k = np.zeros((b, max(seqlens), 576), np.uint16)
    for i, n in enumerate(seqlens):
        k[i, :n] = bits(draw(rs, (n, 576), dist), dtype)
    return q, k


def etap_table1_case(seed, ctx):
    """FlashMLA-ETAP Table 1's setting as capture_etap.py draws it: fp16 q [16, 576] then k [ctx, 576],
    N(0, 1), from RandomState(seed)"""
    rs = np.random.RandomState(seed)
    q = bits(draw(rs, (1, 1, 16, 576), ("normal", 1.0)), "fp16")
    k = bits(draw(rs, (ctx, 576), ("normal", 1.0)), "fp16")
    return q, k


def e4m3_bits(x32):
    """float32 values as OCP E4M3FN codes, round to nearest even (subnormals kept; a value past 464 is refused, where
    torch's cast gives NaN)"""
    x = np.asarray(x32, np.float32).astype(np.float64)
    if (np.abs(x) >= 464).any() or np.isnan(x).any():
        raise ValueError('e4m3_bits: a value beyond e4m3 (|x| >= 464) or NaN')
    codes = np.arange(0x7F)  # 0x00 .. 0x7E, every finite non-negative code
    e, m = codes >> 3, codes & 7
    vals = np.where(e == 0, m / 8.0 * 2.0 ** -6, (1 + m / 8.0) * 2.0 ** (e - 7.0))
    a = np.abs(x)
    hi = np.clip(np.searchsorted(vals, a), 1, len(vals) - 1)
    lo = hi - 1
    dl, dh = a - vals[lo], vals[hi] - a
    pick = np.where(dl < dh, lo, np.where(dh < dl, hi, np.where(lo % 2 == 0, lo, hi)))
    pick = np.where(a <= vals[0], 0, pick)
    return (pick | np.where(np.signbit(x), 0x80, 0)).astype(np.uint8)


def codes_of(x32, dtype):
    """float32 values as the bit patterns of dtype (bf16, fp16, e4m3)"""
    return e4m3_bits(x32) if dtype == 'e4m3' else bits(np.asarray(x32, np.float32), dtype)


def fa3_draw(rs, shape, dist):
    """capture_fa3.py's draw: normal(0, p) in float32, or pow2 (signed powers of two 2^-12 .. 2^4)"""
    kind, p = dist
    if kind == 'pow2':
        e = rs.randint(-12, 5, shape)
        s = rs.choice([-1.0, 1.0], shape)
        return (s * np.ldexp(1.0, e)).astype(np.float32)
    return rs.normal(0.0, p, shape).astype(np.float32)


def fa3_qkv(rs, kind, B, Sq, Hq, Hkv, D, Dv, smax):
    """capture_fa3.py's q [B, Sq, Hq, D], k [B, smax, Hkv, D], v [B, smax, Hkv, Dv] (float32, in this order; pow2 V
    beside normal q and k; 'dominant': key j* of each entry and head is 4 q_0 of its first query head; 'ties': every
    key of an entry the same)"""
    q = fa3_draw(rs, (B, Sq, Hq, D), ('normal', 1.0) if kind[0] == 'pow2' else kind)
    k = fa3_draw(rs, (B, smax, Hkv, D), ('normal', 1.0) if kind[0] == 'pow2' else kind)
    v = fa3_draw(rs, (B, smax, Hkv, Dv), kind)
    if kind[0] == 'dominant':
        for b in range(B):
            j = rs.randint(0, smax // 2)
            for h in range(Hkv):
                k[b, j, h] = 4 * q[b, 0, h * (Hq // Hkv)]
    if kind[0] == 'ties':
        k[:] = k[:, :1]
    return q, k, v


def draw_wide(rs, shape, dist):
    """capture_flashmla_fp8.py's and capture_flashmla_prefill.py's draw, float64: normal(0, s); wide: N(0, 1)
    exp(N(0, s^2)) per row (the last axis); outlier: N(0, 1), then a uniform draw of the same shape, entries below
    0.01 times p"""
    kind, p = dist
    if kind == 'normal':
        return rs.normal(0.0, p, shape)
    if kind == 'wide':
        return rs.normal(0.0, 1.0, shape) * np.exp(rs.normal(0.0, p, shape[:-1] + (1,)))
    x = rs.normal(0.0, 1.0, shape)
    return np.where(rs.uniform(0.0, 1.0, shape) < 0.01, x * p, x)


def prefill_qkv(rs, s_q, h_q, s_kv, d_qk, dist, rope_scale=4):
    """capture_flashmla_prefill.py's q [s_q, h_q, d_qk] and kv [s_kv, 1, d_qk] as bf16 bits (drawn in this order, the
    last 64 dims times rope_scale)"""
    qx = draw_wide(rs, (s_q, h_q, d_qk), dist)
    qx[..., d_qk - 64:] *= rope_scale
    kx = draw_wide(rs, (s_kv, d_qk), dist)
    kx[:, d_qk - 64:] *= rope_scale
    return bf16_bits(qx.astype(np.float32)), bf16_bits(kx.astype(np.float32)).reshape(s_kv, 1, d_qk)


def rebuild(recipe, c):
    """the input arrays (name -> bits) of case c (its meta.json entry) drawn again: recipe 'fa3' (capture_fa3.py:
    flash_attn_func and varlen calls) or 'flashmla_prefill' (capture_flashmla_prefill.py)"""
    rs = np.random.RandomState(c['seed'])
    if recipe == 'flashmla_prefill':
        q, kv = prefill_qkv(rs, c['s_q'], c['h_q'], c['s_kv'], c['d_qk'], tuple(c['distribution']))
        return {'q': q, 'kv': kv}
    if recipe == 'flashmla':  # FlashMLA's layout, or (layout per-head) one entry as [h_q, s_q, 576], [1, keys, 576]
        drawn = c.get('drawn_as', c)
        q, k = flashmla_qk(rs, drawn['b'], c['s_q'], c['h_q'], drawn['seqlens'], tuple(c['draw']), c['dtype'])
        if c.get('layout') == 'per-head':
            i = drawn.get('entry', 0)
            q, k = q[i].transpose(1, 0, 2).copy(), k[i:i + 1, :drawn['seqlens'][i]].copy()
        return {'q': q, 'k': k}
    if recipe != 'fa3' or c['api'] not in ('func', 'kvcache', 'varlen') or c.get('page_size'):
        raise ValueError('rebuild: no recipe %s for %s' % (recipe, c.get('api')))
    kind = tuple(c['inputs'])
    if c['api'] == 'varlen':
        q, k, v = fa3_qkv(rs, kind, 1, sum(c['Sq']), c['Hq'], c['Hkv'], c['D'], c['Dv'], sum(c['seqlens']))
        q, k, v = q[0], k[0], v[0]
    else:
        q, k, v = fa3_qkv(rs, kind, c['B'], c['Sq'], c['Hq'], c['Hkv'], c['D'], c['Dv'], max(c['seqlens']))
        for b, n in enumerate(c['seqlens']):
            k[b, n:] = 0
            v[b, n:] = 0
    return {name: codes_of(x, c['dtype']) for name, x in (('q', q), ('k', k), ('v', v))}
