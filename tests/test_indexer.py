"""pytest: DeepSeek's lightning indexer (DeepGEMM's fp8_mqa_logits and fp8_paged_mqa_logits) in `check`: the exact
logits against numpy's (float64 dot products of e4m3 values are exact; math.fsum over the heads), the kernel's
logits byte for byte on H200 captures (tests/data/indexer), the selection metrics on a case whose answer is known,
and bad input refused. Expected answers come from numpy and the captures, not from the lab."""
import math
import os

import numpy as np
import pytest

from labtest import DATA, lab, refused

DATA = os.path.join(DATA, 'indexer')


def e4m3(codes):
    """OCP E4M3FN codes to float64 values (0x7f / 0xff NaN)"""
    c = codes.astype(np.int64)
    s = np.where(c & 0x80, -1.0, 1.0)
    e, m = (c >> 3) & 0xF, c & 7
    v = np.where(e == 0, m / 8.0 * 2.0 ** -6, (1 + m / 8.0) * 2.0 ** (e - 7))
    return np.where((c & 0x7F) == 0x7F, np.nan, s * v)


def exact_prefill(d):
    q, k = e4m3(np.load(os.path.join(d, 'q.npy'))), e4m3(np.load(os.path.join(d, 'k.npy')))
    sc, w = np.load(os.path.join(d, 'k_scale.npy')).astype(np.float64), np.load(os.path.join(d, 'weights.npy'))
    ks, ke = np.load(os.path.join(d, 'ks.npy')), np.load(os.path.join(d, 'ke.npy'))
    out = np.full((q.shape[0], k.shape[0]), np.nan)
    for i in range(q.shape[0]):
        s = np.maximum(q[i] @ k[ks[i]:ke[i]].T, 0)  # [H, n], exact
        for t, j in enumerate(range(ks[i], ke[i])):
            out[i, j] = math.fsum(s[:, t] * w[i].astype(np.float64)) * sc[j]
    return out


def test_golden_against_numpy(tmp_path):
    d = os.path.join(DATA, 'i5')
    r = lab('check', d, '--dump', tmp_path / 'o')
    assert r.returncode == 0, r.stderr
    g = np.load(tmp_path / 'o' / 'golden.npy')
    want = exact_prefill(d)
    ok = ~np.isnan(want)
    assert (np.isnan(g) == ~ok).all()
    assert np.abs(g[ok] - want[ok]).max() <= 1e-14 * np.abs(want[ok]).max()


@pytest.mark.parametrize('case', ['i5', 'i6', 'iv2', 'p2', 'p3'])
def test_kernel_bits(tmp_path, case):
    """the H200's logits at every valid position, byte for byte; check names the kernel"""
    d = os.path.join(DATA, case)
    r = lab('check', d, '--dump', tmp_path / 'o')
    assert r.returncode == 0, r.stderr
    paged = case.startswith('p')
    name = 'deepgemm-paged-mqa-logits' if paged else 'deepgemm-mqa-logits'
    x = np.load(tmp_path / 'o' / (name + '.npy'))
    got = np.load(os.path.join(d, 'logits.npy'))
    if got.dtype == np.uint16:
        got = (got.astype(np.uint32) << 16).view(np.float32)
    ok = ~np.isnan(x)
    assert ok.sum() > 0 and (x[ok].astype(np.float32).view(np.uint32) == got[ok].view(np.uint32)).all()
    verdict = [ln for ln in r.stdout.splitlines() if ln.startswith('verdict:')][0]
    assert verdict.startswith('verdict: bit-identical to %s on 100.00%%' % name), verdict
    assert ("sm90_fp8_paged_mqa_logits" if paged else "sm90_fp8_mqa_logits") in verdict


def write_case(d, q, k, sc, w, ks, ke):
    os.makedirs(d, exist_ok=True)
    for n, a in (('q', q), ('k', k), ('k_scale', sc), ('weights', w), ('ks', ks), ('ke', ke)):
        np.save(os.path.join(d, n + '.npy'), a)
    return d


def small(tmp_path, S=2, H=8, D=32, Skv=300, seed=3):
    rs = np.random.RandomState(seed)
    q = rs.randint(0, 0x7F, (S, H, D)).astype(np.uint8)
    k = rs.randint(0, 0x7F, (Skv, D)).astype(np.uint8)
    return write_case(tmp_path / 'c', q, k, np.ones(Skv, np.float32), rs.normal(0, 1, (S, H)).astype(np.float32),
                      np.zeros(S, np.int32), np.full(S, Skv, np.int32))


def test_selection_ties_of_zeros(tmp_path):
    """every q.k negative (positive codes for q, negative for k): every logit an exact 0 from the ReLU, every key
    tied at the K-th value, recall 1 whichever keys are kept"""
    d = small(tmp_path)
    k = np.load(os.path.join(d, 'k.npy')) | 0x80
    np.save(os.path.join(d, 'k.npy'), k)
    r = lab('check', d, '--topk', 100)
    assert r.returncode == 0, r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith('selection:')][0]
    assert 'recall 1.000000' in line and 'at most 300 keys tied' in line and '(300 of them exact zeros)' in line, line


def test_refusals(tmp_path):
    d = small(tmp_path)
    refused(lab('check', d, '--topk', 0), '--topk')
    refused(lab('check', d, '--out-format', 'e4m3'), '--out-format', 'fp32 or bf16')
    refused(lab('check', d, '--causal'), '--causal', '--topk K')
    q = np.load(os.path.join(d, 'q.npy'))
    q[0, 0, 0] = 0x7F
    np.save(os.path.join(d, 'q.npy'), q)
    refused(lab('check', d), 'q.npy: element 0 is an e4m3 NaN code')
    d = small(tmp_path / 'x')
    np.save(os.path.join(d, 'ke.npy'), np.array([301, 5], np.int32))
    refused(lab('check', d), 'ks.npy', "row 0's keys [0, 301)")
    d = small(tmp_path / 'y')
    np.save(os.path.join(d, 'k_scale.npy'), np.full(300, -1, np.float32))
    refused(lab('check', d), 'k_scale.npy: element 0 = -1 is not a positive finite scale')
    d = small(tmp_path / 'z')
    np.save(os.path.join(d, 'weights.npy'), np.zeros((2, 7), np.float32))
    refused(lab('check', d), 'weights.npy: shape [2, 7]')
    os.remove(os.path.join(d, 'ks.npy'))
    refused(lab('check', d), 'ks.npy: missing')
    d = small(tmp_path / 'w', H=4)
    refused(lab('check', d), 'heads a multiple of 8')
    d = small(tmp_path / 'v')
    np.save(os.path.join(d, 'logits.npy'), np.zeros((2, 300), np.float32))
    refused(lab('check', d, '--out-format', 'bf16'), 'logits.npy holds fp32 logits')
