"""pytest: FlashMLA's sparse prefill (flash_mla_sparse_fwd: q [s_q, h_q, d_qk], kv [s_kv, 1, d_qk], indices
[s_q, 1, topk], topk_length, attn_sink; out, lse, max_logits) in `run --load`, `check` and `--dump`, the kernel built
with and without --use_fast_math (tests/data/flashmla-prefill, tests/data/flashmla-ieee: H200 captures), and
python/amla_lab.py's save_prefill_case. Expected answers come from the captures of the real kernel and from an
attention numpy computes in float64 over each token's valid indices, not from the lab."""
import json
import os
import sys

import numpy as np
import pytest

from labtest import DATA, ROOT, bf16_bits, bf16_values, lab, refused

sys.path.insert(0, os.path.join(ROOT, 'python'))
import amla_lab  # noqa: E402

V = 'flashmla-sparse-prefill'


def prefill_case(d, s_q=3, h_q=64, s_kv=300, d_qk=512, topk=128, sink=None, topk_length=None, seed=7):
    """a random bf16 case: indices without repeats, a few -1 and out-of-range ones"""
    rs = np.random.RandomState(seed)
    q = bf16_bits(rs.normal(0, 1, (s_q, h_q, d_qk)))
    kv = bf16_bits(rs.normal(0, 1, (s_kv, 1, d_qk)))
    idx = np.stack([rs.permutation(s_kv)[:topk] for _ in range(s_q)]).reshape(s_q, 1, topk).astype(np.int32)
    idx[0, 0, ::7] = -1
    idx[-1, 0, 3::11] = s_kv + 5
    return amla_lab.save_prefill_case(d, q, kv, idx, topk_length=topk_length, attn_sink=sink)


def exact(d, scale):
    """float64 attention over each token's valid indices: out [s_q, h_q, 512], lse and max_logits [s_q, h_q] (+inf and
    -inf for a token of none); a sink adds exp(sink) to the denominator, not to the lse"""
    q, kv = bf16_values(np.load(os.path.join(d, 'q.npy'))), bf16_values(np.load(os.path.join(d, 'kv.npy')))[:, 0]
    idx = np.load(os.path.join(d, 'indices.npy'))[:, 0]
    p = os.path.join(d, 'topk_length.npy')
    tl = np.load(p) if os.path.exists(p) else np.full(q.shape[0], idx.shape[1])
    p = os.path.join(d, 'attn_sink.npy')
    sink = np.load(p).astype(np.float64) if os.path.exists(p) else None
    out = np.zeros((q.shape[0], q.shape[1], 512))
    lse, ml = np.full(q.shape[:2], np.inf), np.full(q.shape[:2], -np.inf)
    for t in range(q.shape[0]):
        j = idx[t, :tl[t]]
        j = j[(j >= 0) & (j < kv.shape[0])]
        if not len(j):
            continue
        s = q[t] @ kv[j].T * scale
        m = s.max(axis=1, keepdims=True)
        e = np.exp(s - m)
        den = e.sum(axis=1)
        lse[t], ml[t] = m[:, 0] + np.log(den), m[:, 0]
        if sink is not None:
            den = den + np.exp(sink - m[:, 0])
        out[t] = e @ kv[j, :512] / den[:, None]
    return out, lse, ml


def test_golden_with_sink_and_topk_length(tmp_path):
    sink = np.array([0.5, -np.inf, np.inf, -3.0] * 16, np.float32)
    d = prefill_case(tmp_path / 'c', sink=sink, topk_length=np.array([128, 70, 0], np.int32))
    r = lab('run', '--load', d, '--scale', 0.07, '--variants', V, '--dump', tmp_path / 'o')
    assert r.returncode == 0, r.stderr
    want, wl, wm = exact(d, 0.07)
    g = np.load(tmp_path / 'o' / 'golden.npy')
    assert g.shape == want.shape
    assert np.abs(g - want).max() <= 1e-12 * np.abs(want).max()
    assert (g[:, 2::4] == 0).all()  # a sink of +inf: O = 0
    for name, w in (('lse', wl), ('max_logits', wm)):
        x = np.load(tmp_path / 'o' / ('golden.%s.npy' % name))
        assert x.shape == w.shape and (x[-1] == w[-1]).all()  # the token of no index: +inf, -inf
        assert np.abs(x[:-1] - w[:-1]).max() <= 1e-12 * np.abs(w[:-1]).max()
    # every site exact: the kernel's arithmetic in binary64 is Golden (O, lse and max_logits)
    r = lab('run', '--load', d, '--scale', 0.07, '--variants', V, '--exact', 'all', '--dump', tmp_path / 'x')
    assert r.returncode == 0, r.stderr
    x = np.load(tmp_path / 'x' / (V + '.npy'))
    assert np.abs(x - g).max() <= 1e-12 * np.abs(g).max()
    for name in ('lse', 'max_logits'):
        a, b = (np.load(tmp_path / o / ('%s.%s.npy' % (n, name))) for o, n in (('x', V), ('o', 'golden')))
        assert np.allclose(a, b, rtol=1e-12, atol=0) or (a == b).all()


def captures(folder):
    with open(os.path.join(DATA, folder, 'meta.json')) as f:
        cases = json.load(f)['cases']
    return [(folder, c) for c in sorted(cases) if cases[c].get('kernel', 'sparse prefill') == 'sparse prefill']


@pytest.mark.parametrize('folder,case', captures('flashmla-prefill') + captures('flashmla-ieee'))
def test_kernel_bits(tmp_path, folder, case):
    """the H200's out, lse and max_logits byte for byte, from the build the capture came from; check names it"""
    d = os.path.join(DATA, folder, case)
    ieee = folder == 'flashmla-ieee'
    v = V + (':build=ieee' if ieee else '')
    scale = open(os.path.join(d, 'scale.txt')).read().strip()
    r = lab('run', '--load', d, '--scale', scale, '--variants', v, '--dump', tmp_path / 'o')
    assert r.returncode == 0, r.stderr
    assert (bf16_bits(np.load(tmp_path / 'o' / (v + '.npy'))) == np.load(os.path.join(d, 'out.npy'))).all()
    for name in ('lse', 'max_logits'):
        a = np.load(tmp_path / 'o' / ('%s.%s.npy' % (v, name))).astype(np.float32)
        assert (a == np.load(os.path.join(d, name + '.npy'))).all(), name
    r = lab('check', d, '--scale', scale)
    verdict = [x for x in r.stdout.splitlines() if x.startswith('verdict:')]
    assert verdict and verdict[0].startswith('verdict: bit-identical to %s on 100.00%%' % v), r.stdout + r.stderr
    assert 'and its log-sum-exp and max_logits on every row' in verdict[0]
    assert ('built without --use_fast_math' in verdict[0]) == ieee


def test_check_reads_max_logits_alone_only_with_lse(tmp_path):
    d = prefill_case(tmp_path / 'c')
    np.save(os.path.join(d, 'out.npy'), np.zeros((3, 64, 512), np.uint16))
    np.save(os.path.join(d, 'max_logits.npy'), np.zeros((3, 64), np.float32))
    refused(lab('check', d), 'max_logits.npy without lse.npy')
    np.save(os.path.join(d, 'lse.npy'), np.zeros((3, 63), np.float32))
    refused(lab('check', d), 'lse.npy: shape [3, 63]', '[3, 64] ([s_q, h_q])')


def broken(tmp_path, name, array):
    d = prefill_case(tmp_path / 'c')
    np.save(os.path.join(d, name), array)
    return d


@pytest.mark.parametrize('name,array,words', [
    ('indices.npy', np.zeros((3, 1, 64), np.int32), ['indices.npy', 'multiple of 128']),
    ('indices.npy', np.zeros((3, 1, 128), np.float32), ['indices.npy', 'non-integers']),
    ('topk_length.npy', np.array([1, 2, 129], np.int32), ['topk_length[2] = 129 is not 0 to topk 128']),
    ('topk_length.npy', np.array([1, 2], np.int32), ['topk_length.npy', 'int32 [3]']),
    ('attn_sink.npy', np.array([np.nan] + [0.0] * 63, np.float32), ['attn_sink.npy: element 0 = nan is NaN']),
    ('attn_sink.npy', np.zeros(32, np.float32), ['attn_sink.npy', 'float32 [64]']),
    ('q.npy', np.zeros((3, 32, 512), np.uint16), ['q.npy', 'multiple of 64']),
    ('q.npy', np.zeros((3, 64, 256), np.uint16), ['q.npy', 'd_qk 576 (V3.2) or 512 (V4)']),
    ('kv.npy', np.zeros((300, 2, 512), np.uint16), ['kv.npy', '[s_kv, 1, 512]']),
    ('kv.npy', np.zeros((300, 1, 512), np.int32), ['kv.npy', 'integers']),
])
def test_bad_cases_refused(tmp_path, name, array, words):
    refused(lab('run', '--load', broken(tmp_path, name, array), '--variants', V), *words)


def test_refusals_of_the_options(tmp_path):
    d = prefill_case(tmp_path / 'c')
    refused(lab('run', '--load', d, '--variants', V, '--in-format', 'fp16'), 'bf16')
    refused(lab('run', '--load', d, '--variants', V, '--causal'), '--causal')
    os.remove(os.path.join(d, 'kv.npy'))
    refused(lab('run', '--load', d, '--variants', V), 'k.npy')
    refused(lab('run', '--variants', V + ':build=fast'), 'build', 'fast-math')
    refused(lab('run', '--variants', 'fa3:build=ieee'), 'build')


def test_save_prefill_case_refuses(tmp_path):
    q = np.zeros((2, 64, 576), np.uint16)
    kv = np.zeros((10, 1, 576), np.uint16)
    idx = np.zeros((2, 1, 128), np.int32)
    for kw, word in ((dict(q=q[:, :32]), 'multiple of 64'), (dict(kv=kv[:, :, :512]), 'kv'),
                     (dict(indices=idx[:, :, :64]), 'multiple of 128'),
                     (dict(topk_length=np.array([1, 200])), 'topk_length'),
                     (dict(attn_sink=np.full(64, np.nan, np.float32)), 'without NaN'),
                     (dict(max_logits=np.zeros((2, 64), np.float32)), 'max_logits without lse'),
                     (dict(out=np.zeros((2, 64, 576), np.uint16)), 'out')):
        args = dict(q=q, kv=kv, indices=idx)
        args.update(kw)
        with pytest.raises(ValueError, match=word):
            amla_lab.save_prefill_case(tmp_path / 'x', **args)
        assert not os.path.exists(tmp_path / 'x')
