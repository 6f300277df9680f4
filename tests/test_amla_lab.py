"""pytest: python/amla_lab.py against the lab (AMLA_BIN, default ./amla-lab). The expected
answers come from the H100 captures under tests/data/flashmla, not from the lab. Those are FlashMLA
9c5dfab's kernel: its scheduler is flashmla's 9c5dfab setting (OLD)."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
sys.path.insert(0, os.path.join(ROOT, 'python'))
import amla_lab  # noqa: E402

A3 = os.path.join(ROOT, 'tests', 'data', 'flashmla', 'a3')
OLD = 'flashmla:flashmla-sched=9c5dfab'
BIN = os.environ.get('AMLA_BIN', os.path.join(ROOT, 'amla-lab'))


def load(name):
    return np.load(os.path.join(A3, name + '.npy'))


def test_batch_layout_from_numpy(tmp_path):
    """a3 (bf16 bit patterns, one entry) rewritten in FlashMLA's batched layout by save_case:
    check ranks flashmla first with every output bit and every lse value."""
    q = load('q')                      # [Hq, Sq, Dk] uint16
    k = load('k')                      # [1, Sk, Dk]
    qb = q.transpose(1, 0, 2)[None]    # [1, Sq, Hq, Dk]
    kb = k                             # [B=1, Smax, Dk]
    out = load('out').transpose(1, 0, 2)[None]
    lse = load('lse')[None]            # [1, Hq, Sq]
    d = amla_lab.save_case(tmp_path / 'case', qb, kb, seqlens=np.array([k.shape[1]]), out=out, lse=lse)
    assert sorted(os.listdir(d)) == ['k.npy', 'lse.npy', 'out.npy', 'q.npy', 'seqlens.npy']
    r = amla_lab.check(d, binary=BIN, candidates=['base', OLD, 'flashmla:sm-parts=1'])
    best = r['ranking'][0]
    assert best['variant'] == OLD
    assert best['identical'] == best['elements'] == 65536 and best['lse_bit_identical'] == 1
    assert r['verdict'].startswith('bit-identical to %s on 100.00%%' % OLD)
    assert all(x['bit_identical'] < 1 for x in r['ranking'][1:])


def test_float_values_and_options(tmp_path):
    """The same case with the output as float32 values of bf16 numbers and the no-split path."""
    codes = load('out_nosplit').astype(np.uint32) << 16
    out = codes.view(np.float32)
    d = amla_lab.save_case(tmp_path / 'c2', load('q'), load('k'), out=out)
    r = amla_lab.check(d, binary=BIN, candidates=('flashmla:sm-parts=1', OLD), dv=512)
    assert r['ranking'][0]['variant'] == 'flashmla:sm-parts=1'
    assert r['ranking'][0]['bit_identical'] == 1
    assert r['ranking'][1]['bit_identical'] < 1


def test_bad_input_raises(tmp_path):
    d = amla_lab.save_case(tmp_path / 'bad', load('q'), load('k'), out=load('q'))
    with pytest.raises(RuntimeError, match='shape'):
        amla_lab.check(d, binary=BIN, candidates=['base'], dv=512)


def test_save_case_refuses_mismatches(tmp_path):
    """save_case names a mistake in the caller's arrays (ValueError) before anything is written."""
    q, k = load('q'), load('k')
    cases = [((q, k[..., :64]), {}, 'different head dims'),
             (('not an array', k), {}, 'dtype'),
             ((q.astype(np.int32), k), {}, 'dtype int32'),
             ((q, k), {'seqlens': [1, 2]}, 'q has 3 dims'),
             ((q[None], k[None]), {'seqlens': [1, 2]}, 'batch sizes differ'),
             ((q[None], k[None]), {'seqlens': [k.shape[-2] + 1]}, 'seqlens reach'),
             ((q, k), {'out': np.zeros((3, 1, 512), np.float32)}, 'does not match q'),
             ((q, k), {'lse': np.zeros((2, 2), np.float32)}, 'lse')]
    for i, (args, kw, msg) in enumerate(cases):
        with pytest.raises(ValueError, match=msg):
            amla_lab.save_case(tmp_path / ('bad%d' % i), *args, **kw)
        assert not (tmp_path / ('bad%d' % i)).exists()


def test_ml_dtypes_void_codes(tmp_path):
    """bfloat16 arrays saved by numpy as the two-byte void type (how ml_dtypes' arrays are
    stored): the lab reads them as bit patterns."""
    q = load('q').view(np.dtype('V2'))
    d = amla_lab.save_case(tmp_path / 'v2', q, load('k'), out=load('out'), lse=load('lse'))
    r = amla_lab.check(d, binary=BIN, candidates=[OLD])
    assert r['ranking'][0]['bit_identical'] == 1


def test_torch_tensors(tmp_path):
    torch = pytest.importorskip('torch')
    q = torch.from_numpy(load('q').view(np.int16)).view(torch.bfloat16)
    k = torch.from_numpy(load('k').view(np.int16)).view(torch.bfloat16)
    out = torch.from_numpy(load('out').view(np.int16)).view(torch.bfloat16)
    d = amla_lab.save_case(tmp_path / 't', q, k, out=out)
    r = amla_lab.check(d, binary=BIN, candidates=[OLD])
    assert r['ranking'][0]['bit_identical'] == 1


def test_sparse_fp8_case(tmp_path):
    """A committed capture of FlashMLA's FP8 sparse decode written back through save_sparse_case is named
    by check; a bad case raises before anything is written."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'flashmla-sparse', 'm1')
    a = {n: np.load(os.path.join(src, n + '.npy')) for n in ('q', 'kcache', 'indices', 'out', 'lse')}
    d = amla_lab.save_sparse_case(tmp_path / 'm1', a['q'], a['kcache'], a['indices'], out=a['out'], lse=a['lse'])
    report = amla_lab.check(d, binary=BIN, candidates=['flashmla-sparse', 'base'])
    assert report['verdict'].startswith('bit-identical to flashmla-sparse on 100.00%')
    with pytest.raises(ValueError, match='no FP8 cache layout'):
        amla_lab.save_sparse_case(tmp_path / 'bad', a['q'], a['kcache'][..., :500], a['indices'])
    with pytest.raises(ValueError, match='MODEL1 kernel alone'):
        amla_lab.save_sparse_case(tmp_path / 'bad', np.zeros((1, 1, 64, 576), np.uint16),
                                  np.zeros((1, 64, 1, 656), np.uint8), a['indices'], topk_length=np.ones(1, np.int32))
    assert not (tmp_path / 'bad').exists()


def test_int32_never_wrapped(tmp_path):
    """indices, topk_length and seqlens past int32 are refused, not wrapped by the cast (2^32 + 5 would be 5)"""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'flashmla-sparse', 'm1')
    a = {n: np.load(os.path.join(src, n + '.npy')) for n in ('q', 'kcache', 'indices')}
    big = a['indices'].astype(np.int64)
    big[0, 0, 0] = 2 ** 32 + 5
    with pytest.raises(ValueError, match='int32'):
        amla_lab.save_sparse_case(tmp_path / 'i', a['q'], a['kcache'], big)
    with pytest.raises(ValueError, match='int32'):
        amla_lab.save_sparse_case(tmp_path / 'i', a['q'], a['kcache'], a['indices'].astype(np.uint64) * 0 + 2 ** 63)
    with pytest.raises(ValueError, match='topk_length'):
        amla_lab.save_sparse_case(tmp_path / 'i', a['q'], a['kcache'], a['indices'],
                                  topk_length=np.array([2 ** 32 + 5], np.int64))
    q, k = load('q'), load('k')
    with pytest.raises(ValueError, match='int32'):
        amla_lab.save_case(tmp_path / 'i', q.transpose(1, 0, 2)[None], k, seqlens=np.array([2 ** 32 + 5]))
    for sl in ([-1], []):  # the lab refuses a negative length and an empty batch
        with pytest.raises(ValueError, match='seqlens'):
            amla_lab.save_case(tmp_path / 'i', q.transpose(1, 0, 2)[None], k, seqlens=np.array(sl, np.int32))
    assert not (tmp_path / 'i').exists()
    # an entry of no key is a case (a serving batch may hold one): each kernel's convention for it
    amla_lab.save_case(tmp_path / 'z', q.transpose(1, 0, 2)[None], k, seqlens=np.array([0], np.int32))
    assert int(np.load(tmp_path / 'z' / 'seqlens.npy')[0]) == 0


def test_nothing_written_before_every_array_is_checked(tmp_path):
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'flashmla-sparse', 'v1')
    a = {n: np.load(os.path.join(src, n + '.npy')) for n in ('q', 'kcache', 'indices')}
    with pytest.raises(ValueError, match='lse'):
        amla_lab.save_sparse_case(tmp_path / 's', a['q'], a['kcache'], a['indices'], lse='not numbers')
    with pytest.raises(ValueError, match='lse'):
        amla_lab.save_sparse_case(tmp_path / 's', a['q'], a['kcache'], a['indices'],
                                  lse=np.zeros((1, 64, 1), np.int32))
    assert not (tmp_path / 's').exists() and os.listdir(tmp_path) == []
    with pytest.raises(ValueError, match='one format'):  # q and k read in one --in-format
        amla_lab.save_case(tmp_path / 'c', load('q'), load('k').view(np.uint8))
    assert os.listdir(tmp_path) == []


def test_earlier_case_replaced_whole(tmp_path):
    """a V32 case written where a MODEL1 case with top-k lengths was: no file of the earlier case survives; a
    folder holding anything else is refused"""
    base = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'flashmla-sparse')
    m = {n: np.load(os.path.join(base, 'x4', n + '.npy')) for n in ('q', 'kcache', 'indices', 'topk_length')}
    v = {n: np.load(os.path.join(base, 'v1', n + '.npy')) for n in ('q', 'kcache', 'indices')}
    d = tmp_path / 'case'
    amla_lab.save_sparse_case(d, m['q'], m['kcache'], m['indices'], topk_length=m['topk_length'])
    assert (d / 'topk_length.npy').exists()
    amla_lab.save_sparse_case(d, v['q'], v['kcache'], v['indices'])
    assert sorted(os.listdir(d)) == ['indices.npy', 'kcache.npy', 'q.npy']
    assert sorted(os.listdir(tmp_path)) == ['case']
    (d / 'notes.txt').write_text('mine')
    with pytest.raises(ValueError, match='notes.txt'):
        amla_lab.save_sparse_case(d, v['q'], v['kcache'], v['indices'])
    assert (d / 'notes.txt').read_text() == 'mine'


def test_full_disk_leaves_no_partial_case(tmp_path, monkeypatch):
    """a write that fails part-way (a full disk) leaves neither a partial case nor a temporary folder"""
    real = np.save
    calls = []

    def failing(path, a):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, 'No space left on device')
        real(path, a)
    monkeypatch.setattr(amla_lab.np, 'save', failing)
    with pytest.raises(OSError):
        amla_lab.save_case(tmp_path / 'full', load('q'), load('k'), out=load('out'))
    assert os.listdir(tmp_path) == []


def test_fp8_codes_with_scales(tmp_path):
    """A committed capture of vLLM's FlashMLA dense FP8 decode written back through save_case with its scales: check
    names flashmla-dense-fp8 with every bit; a bad scale or a scale beside non-codes raises before anything is written."""
    d = os.path.join(ROOT, 'tests', 'data', 'flashmla-dense-fp8', 'e1')
    a = {n: np.load(os.path.join(d, n + '.npy')) for n in ('q', 'k', 'seqlens', 'out', 'lse', 'q_scale', 'k_scale')}
    c = amla_lab.save_case(tmp_path / 'c', a['q'], a['k'], seqlens=a['seqlens'], out=a['out'], lse=a['lse'],
                           q_scale=a['q_scale'], k_scale=a['k_scale'])
    r = amla_lab.check(c, binary=BIN, in_format='e4m3', out_format='bf16', dv=512, candidates=['flashmla-dense-fp8'])
    assert r['ranking'][0]['bit_identical'] == 1 and r['ranking'][0]['lse_bit_identical'] == 1
    for kw, msg in (({'q_scale': [0.0]}, 'finite and positive'), ({'q_scale': [[1.0, 2.0]]}, 'shape'),
                    ({'v_scale': [1.0]}, 'without v')):
        with pytest.raises(ValueError, match=msg):
            amla_lab.save_case(tmp_path / 'bad', a['q'], a['k'], seqlens=a['seqlens'], **kw)
        assert not (tmp_path / 'bad').exists()
    with pytest.raises(ValueError, match='one byte'):
        amla_lab.save_case(tmp_path / 'bad', a['q'].astype(np.float32), a['k'], seqlens=a['seqlens'], q_scale=[1.0])
