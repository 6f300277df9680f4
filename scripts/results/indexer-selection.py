#!/usr/bin/env python3
"""indexer-selection.py [OUT] -- OUT (default results/indexer-selection.md): which keys DeepSeek's lightning indexer
keeps. For each context length, head count and logits format, a prefill indexer case is drawn (numpy) and quantized
as DeepSeek's reference does (q to e4m3, its scale folded into the weights; k per token: sf = amax / 448, codes =
e4m3(k (1 / sf)), as DeepGEMM's per_custom_dims_cast_to_fp8), and `amla-lab check` runs DeepGEMM's kernel arithmetic
on it (bit-identical to the kernel on H200 captures: tests/data/indexer) against the exact logits: the recall of its
top-2048 against the exact top-2048, keys missed, ties at the boundary and the worst key kept. Needs numpy."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
BIN = os.path.join(ROOT, 'amla-lab')
TOPK = 2048
S = 64  # query tokens, the last S of the context (causal: token i sees keys 0 .. Skv - S + i)
D = 128

# every non-negative e4m3 value (codes 0 .. 126), for round-to-nearest-even encoding
E4M3 = np.array([(m / 8.0) * 2.0 ** -6 if e == 0 else (1 + m / 8.0) * 2.0 ** (e - 7)
                 for e in range(16) for m in range(8)][:127])


def to_e4m3(x):
    """float32 values (|x| <= 448) to E4M3FN codes, round to nearest, ties to the even code"""
    a = np.abs(x).astype(np.float64).ravel()
    hi = np.clip(np.searchsorted(E4M3, a), 1, 126)
    lo = hi - 1
    dl, dh = a - E4M3[lo], E4M3[hi] - a
    code = np.where(dl < dh, lo, np.where(dh < dl, hi, np.where(lo % 2 == 0, lo, hi)))
    code = np.where(a >= E4M3[126], 126, code)
    return (code | np.where(x.ravel() < 0, 0x80, 0)).astype(np.uint8).reshape(x.shape)


def case(d, skv, h, seed):
    rs = np.random.RandomState(seed)
    spread = np.exp(rs.normal(0, 0.5, (skv, 1)))  # per-token magnitudes, as the mla distribution's token spread
    q = rs.normal(0, 1, (S, h, D)).astype(np.float32)
    k = (rs.normal(0, 1, (skv, D)) * spread).astype(np.float32)
    k = (k.view(np.uint32) + 0x7FFF + ((k.view(np.uint32) >> 16) & 1) >> 16 << 16).view(np.float32)  # bf16, RNE
    sf = np.maximum(np.abs(k).max(axis=1), np.float32(1e-4)) / np.float32(448)
    kc = to_e4m3(k * (np.float32(1) / sf)[:, None])
    w = (rs.normal(0, 1, (S, h)) * (h ** -0.5 * D ** -0.5)).astype(np.float32)
    os.makedirs(d)
    for n, a in (('q', to_e4m3(q)), ('k', kc), ('k_scale', sf.astype(np.float32)), ('weights', w),
                 ('ks', np.zeros(S, np.int32)), ('ke', (np.arange(S) + skv - S + 1).astype(np.int32))):
        np.save(os.path.join(d, n + '.npy'), a)


def attention_cost(d, skv, seed, heads=16, dk=576, dv=512):
    """What the flipped keys cost: per query row, exact (float64) attention of an MLA-shaped q [heads, 576] over the
    kernel's top-K keys against the same over the exact top-K (kv [Skv, 576], V its first 512 dims, N(0, 1), scale
    192^-1/2), rel_fro over the rows; q and kv drawn apart from the indexer's (no correlation between the indexer's
    scores and the attention's)"""
    g = np.load(os.path.join(d, 'dump', 'golden.npy'))
    x = np.load(os.path.join(d, 'dump', 'deepgemm-mqa-logits.npy'))
    rs = np.random.RandomState(seed)
    kv = rs.normal(0, 1, (skv, dk))
    num = den = 0.0
    for i in range(g.shape[0]):
        q = rs.normal(0, 1, (heads, dk))
        sets = []
        for a in (x[i], g[i]):
            a = np.where(np.isnan(a), -np.inf, a)
            sets.append(np.argsort(-a, kind='stable')[:TOPK])
        outs = []
        for js in sets:
            s = q @ kv[js].T * 192 ** -0.5
            p = np.exp(s - s.max(axis=1, keepdims=True))
            outs.append(p @ kv[js, :dv] / p.sum(axis=1, keepdims=True))
        num += ((outs[0] - outs[1]) ** 2).sum()
        den += (outs[1] ** 2).sum()
    return '%.3e' % (num ** 0.5 / den ** 0.5)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, 'results', 'indexer-selection.md')
    tmp = tempfile.mkdtemp()
    rows = []
    try:
        for skv in (2048 + 256, 4096, 8192, 16384):
            for h in (32, 64):
                for fmt in ('fp32', 'bf16'):
                    d = os.path.join(tmp, '%d-%d-%s' % (skv, h, fmt))
                    case(d, skv, h, 7000 + skv + h)
                    r = subprocess.run([BIN, 'check', d, '--out-format', fmt, '--topk', str(TOPK), '--dump',
                                        os.path.join(d, 'dump')], capture_output=True, text=True, check=True).stdout
                    cost = attention_cost(d, skv, 8000 + skv + h)
                    rel = re.search(r'kernel against golden: rel_fro (\S+)', r).group(1)
                    sel = re.search(r'recall (\S+) \(smallest (\S+); (\d+) rows whole\), (\d+) of (\d+) keys missed; at '
                                    r'most (\d+) keys tied .*?\((\d+) of them exact zeros\); the worst key kept is '
                                    r"Golden's rank (\d+)", r)
                    rows.append((skv, h, fmt, rel) + sel.groups() + (cost,))
    finally:
        shutil.rmtree(tmp)
    with open(out + '.tmp', 'w') as f:
        f.write('# Which keys the lightning indexer keeps: DeepGEMM\'s logits against the exact ones\n\n')
        f.write('Produced by `scripts/results/indexer-selection.py`. %s\n\n' % ' '.join(__doc__.split('\n\n')[0].split('\n')[1:]))
        f.write('Each row: %d query tokens (the last of the context, causal key ranges), %d dims, q ~ N(0, 1), k ~ '
                'N(0, 1) times a per-token exp(N(0, 0.25)) in bf16, weights N(0, 1) H^-1/2 D^-1/2. rel_fro: the '
                'kernel\'s logits against the exact ones over every valid position; recall: the share of the kernel\'s '
                'top-%d that is in the exact top-%d (a key tied at the boundary counts while tied slots remain), mean '
                'and smallest over the rows; rows whole: rows whose top-%d is the exact one.\n\n' % (S, D, TOPK, TOPK, TOPK))
        f.write('attention cost: %s\n\n' % ' '.join(attention_cost.__doc__.split()))
        f.write('| keys | heads | logits | rel_fro | recall | smallest | rows whole | keys missed | ties at the K-th | '
                'of them zeros | worst rank kept | attention cost |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n')
        for skv, h, fmt, rel, rec, rmin, whole, missed, total, ties, zeros, worst, cost in rows:
            f.write('| %d | %d | %s | %s | %s | %s | %s of %d | %s of %s | %s | %s | %s | %s |\n' % (
                skv, h, fmt, rel, rec, rmin, whole, S, missed, total, ties, zeros, worst, cost))
    os.replace(out + '.tmp', out)
    print('wrote', out)


if __name__ == '__main__':
    main()
