"""pytest: FlashAttention's varlen layout (flash_attn_varlen_func's packed q [total_q, Hq, D], k and v
[total_k, Hkv, D], cu_seqlens_q.npy and cu_seqlens_k.npy) in `run --load`, `check` and `--dump`, and
python/amla_lab.py's save_varlen_case. Expected answers come from the committed captures of the real kernel
(tests/data/fa3/p5, p8) and from an attention numpy computes per sequence in float64, not from the lab."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from labtest import ROOT, bf16_bits, bf16_values, lab, refused

sys.path.insert(0, os.path.join(ROOT, 'python'))
import amla_lab  # noqa: E402

P8 = os.path.join(ROOT, 'tests', 'data', 'fa3', 'p8')


def varlen_case(d, sq, sk, hq=2, hkv=1, dk=24, dv=16, seed=5):
    """a random bf16 case of len(sq) sequences in the packed layout"""
    rs = np.random.RandomState(seed)
    tq, tk = sum(sq), sum(sk)
    q, k, v = (bf16_bits(rs.normal(0, 1, s)) for s in ((tq, hq, dk), (tk, hkv, dk), (tk, hkv, dv)))
    cq, ck = (np.concatenate([[0], np.cumsum(x)]).astype(np.int32) for x in (sq, sk))
    return amla_lab.save_varlen_case(d, q, k, v, cq, ck)


def exact(d, causal):
    """softmax(q k^T / sqrt(dk)) v per sequence, float64, bottom-right causal: out [total_q, Hq, Dv], lse [Hq, total_q]"""
    q, k, v = (bf16_values(np.load(os.path.join(d, n + '.npy'))) for n in 'qkv')
    cq, ck = np.load(os.path.join(d, 'cu_seqlens_q.npy')), np.load(os.path.join(d, 'cu_seqlens_k.npy'))
    hq, hkv = q.shape[1], k.shape[1]
    out = np.zeros((q.shape[0], hq, v.shape[2]))
    lse = np.zeros((hq, q.shape[0]))
    for b in range(len(cq) - 1):
        qs, ks, vs = q[cq[b]:cq[b + 1]], k[ck[b]:ck[b + 1]], v[ck[b]:ck[b + 1]]
        sq, sk = len(qs), len(ks)
        for h in range(hq):
            s = qs[:, h] @ ks[:, h * hkv // hq].T / np.sqrt(q.shape[2])
            if causal:
                s[np.arange(sk)[None, :] > np.arange(sq)[:, None] + sk - sq] = -np.inf
            m = s.max(axis=1, keepdims=True)
            p = np.exp(s - m)
            out[cq[b]:cq[b + 1], h] = p @ vs[:, h * hkv // hq] / p.sum(axis=1, keepdims=True)
            lse[h, cq[b]:cq[b + 1]] = (m[:, 0] + np.log(p.sum(axis=1)))
    return out, lse


@pytest.mark.parametrize('causal', [False, True])
def test_golden_per_sequence(tmp_path, causal):
    d = varlen_case(tmp_path / 'c', [3, 1, 7], [9, 4, 7], hq=4, hkv=2)
    r = lab('run', '--load', d, '--variants', 'base', '--dump', tmp_path / 'o', *(['--causal'] if causal else []))
    assert r.returncode == 0, r.stderr
    g = np.load(tmp_path / 'o' / 'golden.npy')
    gl = np.load(tmp_path / 'o' / 'golden.lse.npy')
    want, wl = exact(d, causal)
    assert g.shape == want.shape and gl.shape == wl.shape
    assert np.abs(g - want).max() <= 1e-12 * np.abs(want).max()
    assert np.abs(gl - wl).max() <= 1e-12
    # the dump is the same packed case again
    for n in ('q', 'k', 'v', 'cu_seqlens_q', 'cu_seqlens_k'):
        a, b = np.load(os.path.join(d, n + '.npy')), np.load(tmp_path / 'o' / (n + '.npy'))
        assert np.array_equal(bf16_values(a) if a.dtype == np.uint16 else a, b), n


def test_kernel_capture_dump(tmp_path):
    """fa3:sm-parts=1 on the H200's capture p8: its dump, cast to bf16, is the kernel's out.npy byte for byte and its
    lse the kernel's, in the packed layout flash_attn_varlen_func returns"""
    r = lab('run', '--load', P8, '--in-format', 'bf16', '--out-format', 'bf16', '--variants', 'fa3:sm-parts=1',
            '--dump', tmp_path / 'o')
    assert r.returncode == 0, r.stderr
    o = np.load(tmp_path / 'o' / 'fa3:sm-parts=1.npy')
    assert np.array_equal(bf16_bits(o), np.load(os.path.join(P8, 'out.npy')))
    lse = np.load(tmp_path / 'o' / 'fa3:sm-parts=1.lse.npy')
    assert np.array_equal(lse.astype(np.float32), np.load(os.path.join(P8, 'lse.npy')))


def test_check_names_fa3_and_reads_save_varlen_case(tmp_path):
    a = {n: np.load(os.path.join(P8, n + '.npy')) for n in ('q', 'k', 'v', 'cu_seqlens_q', 'cu_seqlens_k', 'out', 'lse')}
    d = amla_lab.save_varlen_case(tmp_path / 'c', a['q'], a['k'], a['v'], a['cu_seqlens_q'], a['cu_seqlens_k'],
                                  out=a['out'], lse=a['lse'])
    r = lab('check', d, '--in-format', 'bf16', '--out-format', 'bf16')
    assert r.returncode == 0, r.stderr
    assert 'varlen batch of 1 entry' in r.stdout
    assert 'verdict: bit-identical to fa3:sm-parts=1 on 100.00% of 33024 elements, and its log-sum-exp on every ' \
           'row' in r.stdout


def fresh(tmp_path, name='c'):
    return varlen_case(tmp_path / name, [3, 2], [5, 4])


@pytest.mark.parametrize('file,value,words', [
    ('cu_seqlens_q', [1, 3, 5], ['cu_seqlens_q.npy', 'starts at 1']),
    ('cu_seqlens_q', [0, 4, 3], ['cu_seqlens_q.npy', 'below']),
    ('cu_seqlens_q', [0, 3, 6], ['cu_seqlens_q.npy', 'ends at 6', 'q.npy has 5 rows']),
    ('cu_seqlens_k', [0, 5, 9, 9], ['cu_seqlens_k.npy', 'int32 [B + 1]']),
    ('cu_seqlens_q', np.array([0.0, 3.0, 5.0]), ['cu_seqlens_q.npy', 'of floats']),
    ('cu_seqlens_q', [0, 0, 5], ['sequence 0 has no query token']),
])
def test_bad_cu_seqlens(tmp_path, file, value, words):
    d = fresh(tmp_path)
    a = np.asarray(value)
    np.save(os.path.join(d, file + '.npy'), a.astype(np.int32) if a.dtype.kind == 'i' else a)
    refused(lab('run', '--load', d, '--variants', 'base'), *words)


def test_varlen_files_missing_or_mixed(tmp_path):
    d = fresh(tmp_path)
    os.remove(os.path.join(d, 'cu_seqlens_k.npy'))
    refused(lab('run', '--load', d), 'cu_seqlens_k.npy is missing')
    d = fresh(tmp_path, 'd')
    os.remove(os.path.join(d, 'cu_seqlens_q.npy'))
    refused(lab('run', '--load', d), 'cu_seqlens_k.npy without cu_seqlens_q.npy')
    d = fresh(tmp_path, 'e')
    np.save(os.path.join(d, 'seqlens.npy'), np.array([5, 4], np.int32))
    refused(lab('run', '--load', d), 'seqlens.npy beside cu_seqlens_q.npy')
    d = fresh(tmp_path, 'f')
    os.remove(os.path.join(d, 'v.npy'))
    refused(lab('run', '--load', d), 'v.npy is missing')


def test_varlen_bad_shapes(tmp_path):
    d = fresh(tmp_path)
    q = np.load(os.path.join(d, 'q.npy'))
    np.save(os.path.join(d, 'q.npy'), q[None])
    refused(lab('run', '--load', d), 'q.npy', '[total, Hq, D]')
    d = fresh(tmp_path, 'd')
    k = np.load(os.path.join(d, 'k.npy'))
    np.save(os.path.join(d, 'k.npy'), k[:, :, :8])
    refused(lab('run', '--load', d), 'k.npy', 'head dim')


def test_causal_sequence_shorter_than_queries(tmp_path):
    d = varlen_case(tmp_path / 'c', [2, 5], [6, 3])
    refused(lab('run', '--load', d, '--causal'), 'sequence 1', '5 queries and 3 keys')


@pytest.mark.parametrize('kw,msg', [
    ({'cu_seqlens_q': [0, 2, 4]}, 'rise from 0 to 5'),
    ({'cu_seqlens_k': [0, 9]}, 'cu_seqlens_q has 2 sequences, cu_seqlens_k 1'),
    ({'cu_seqlens_k': [0, 4, 8]}, 'cu_seqlens_k must rise from 0 to 9'),
    ({'cu_seqlens_q': [0, 5, 5]}, 'without a query token'),
    ({'lse': np.zeros((5, 2), np.float32)}, 'lse [5, 2]'),
])
def test_save_varlen_case_refuses(tmp_path, kw, msg):
    rs = np.random.RandomState(1)
    a = dict(q=bf16_bits(rs.normal(0, 1, (5, 2, 8))), k=bf16_bits(rs.normal(0, 1, (9, 1, 8))),
             v=bf16_bits(rs.normal(0, 1, (9, 1, 4))), cu_seqlens_q=[0, 3, 5], cu_seqlens_k=[0, 5, 9])
    a.update(kw)
    with pytest.raises(ValueError, match=msg.replace('[', r'\[').replace(']', r'\]')):
        amla_lab.save_varlen_case(tmp_path / 'c', **a)
    assert not os.path.exists(tmp_path / 'c')


def test_rebuilt_inputs_checked(tmp_path):
    """a capture's inputs drawn again from its seed are checked against the sha256 of the arrays the GPU ran on
    (meta.json): a missing one is drawn again identical, a changed one is refused"""
    d = tmp_path / 'fa3'
    shutil.copytree(os.path.join(ROOT, 'tests', 'data', 'fa3'), d)
    script = os.path.join(ROOT, 'scripts', 'checks', 'rebuild_inputs.py')
    q = np.load(d / 'p8' / 'q.npy')
    os.remove(d / 'p8' / 'q.npy')
    r = subprocess.run([sys.executable, script, d], capture_output=True, text=True)
    assert r.returncode == 0 and '1 input arrays drawn again' in r.stdout, r.stderr
    assert np.array_equal(np.load(d / 'p8' / 'q.npy'), q)
    q[0, 0, 0] ^= 1
    np.save(d / 'p8' / 'q.npy', q)
    r = subprocess.run([sys.executable, script, d], capture_output=True, text=True)
    assert r.returncode == 1 and 'p8/q.npy is not the array the capture ran on' in r.stderr, r.stderr
