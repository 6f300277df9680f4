"""pytest: bad input to the lab (AMLA_BIN, default ./amla-lab) that once gave a wrong answer or lost data
quietly: each is a correct result or one line `amla-lab: error: ...` with exit 2. The cases are built
from the committed captures with numpy; the expected answers come from the README's promises (O = 0 and
LSE = +inf for an entry with no valid key) and from the files themselves, not from the lab."""
import os
import shutil
import subprocess

import numpy as np
import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
BIN = os.environ.get('AMLA_BIN', os.path.join(ROOT, 'amla-lab'))
DATA = os.path.join(ROOT, 'tests', 'data')
SMALL = ['--ctx', '64', '--heads', '2', '--dk', '64', '--dv', '32', '--samples', '1']


def lab(*args, cwd=None):
    return subprocess.run([BIN] + [str(a) for a in args], capture_output=True, text=True, cwd=cwd)


def refused(r, *words):
    """exit 2, one stderr line `amla-lab: error: ...` holding every word"""
    lines = r.stderr.splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith('amla-lab: error: '), \
        (r.returncode, r.stderr)
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def sparse_case(tmp_path, name, src='v1'):
    """a committed sparse FP8 capture's inputs alone (q, kcache, indices, topk_length where it has one)"""
    d = tmp_path / name
    d.mkdir()
    for f in ('q', 'kcache', 'indices', 'topk_length'):
        p = os.path.join(DATA, 'flashmla-sparse', src, f + '.npy')
        if os.path.exists(p):
            shutil.copy(p, d / (f + '.npy'))
    return d


def token_offsets(d, token):
    """V32's layout inside one page: 512 e4m3 bytes a token, then four fp32 scales, then 64 bf16 RoPE dims
    (FlashMLA's sparse cache), tokens of a page one after another: the byte where token's scale 0 is"""
    page = np.load(d / 'kcache.npy').shape[1]
    return (token // page) * page * 656 + (token % page) * 656 + 512


# 1. every entry without a valid key: O = 0 and LSE = +inf (the README), not an error about --ctx
def test_sparse_all_invalid(tmp_path):
    d = sparse_case(tmp_path, 'empty')
    idx = np.load(d / 'indices.npy')
    np.save(d / 'indices.npy', np.full_like(idx, -1))
    r = lab('run', '--load', d, '--variants', 'flashmla-sparse', '--dump', tmp_path / 'out')
    assert r.returncode == 0, r.stderr
    o = np.load(tmp_path / 'out' / 'flashmla-sparse.npy')
    assert not o.any()
    for name in ('flashmla-sparse', 'golden'):
        lse = np.load(tmp_path / 'out' / (name + '.lse.npy'))
        assert np.isposinf(lse).all(), name
    # check on it: the kernel's own answer (zeros, +inf) is named
    np.save(d / 'out.npy', np.zeros(o.shape, np.uint16))
    np.save(d / 'lse.npy', np.full(lse.shape, np.inf, np.float32))
    r = lab('check', d)
    assert r.returncode == 0, r.stderr
    assert 'verdict: bit-identical to flashmla-sparse on 100.00%' in r.stdout
    assert 'nan' not in r.stdout.split('verdict')[0].lower().replace('nonfinite', '')


# 2. a finite power-of-two scale whose dequantized key overflows bf16: refused, naming token and scale
def test_sparse_scale_overflow(tmp_path):
    d = sparse_case(tmp_path, 'big')
    tok = int(np.load(d / 'indices.npy')[0, 0, 0])
    cache = np.load(d / 'kcache.npy')
    flat = cache.reshape(-1)
    off = token_offsets(d, tok)
    flat[off:off + 4] = np.frombuffer(np.float32(2.0 ** 127).tobytes(), np.uint8)
    flat[off - 512] = 0x7e  # dim 0 of tile 0: e4m3 448, times 2^127 past bf16's range
    np.save(d / 'kcache.npy', cache)
    refused(lab('run', '--load', d, '--variants', 'flashmla-sparse'), 'token %d' % tok, 'scale 0 is 2^127',
            'overflows bf16')


# 3. a dense kernel's variant is never named as its kernel on a sparse FP8 case
def test_dense_variant_not_named_on_sparse(tmp_path):
    r = lab('check', os.path.join(DATA, 'flashmla-sparse', 'v1'), '--candidates', 'flashmla,flashmla-sparse',
            '--format', 'json')
    assert r.returncode == 0, r.stderr
    import json
    rep = json.loads(r.stdout)
    assert rep['ranking'][0]['variant'] == 'flashmla-sparse'
    assert "FlashMLA's dense decode kernel" not in rep['verdict']
    dense = [x for x in rep['ranking'] if x['variant'] == 'flashmla'][0]
    assert 'FP8 sparse cache' in dense['kernel_note']
    r = lab('run', '--load', os.path.join(DATA, 'flashmla-sparse', 'v1'), '--variants', 'flashmla', '--format', 'csv')
    assert 'FP8 sparse cache' in r.stdout.splitlines()[1]


# 4. --rope-dims at or above dk: refused everywhere, a sparse load included
@pytest.mark.parametrize('args', [['--rope-dims', '576', '--ctx', '64', '--heads', '2', '--samples', '1'],
                                  ['--rope-dims', '100000', '--ctx', '64', '--heads', '2', '--samples', '1'],
                                  ['--rope-dims', '64'] + SMALL,
                                  ['--rope-dims', '600', '--load', os.path.join(DATA, 'flashmla-sparse', 'v1')]])
def test_rope_dims_refused(args):
    refused(lab('run', *args), '--rope-dims')


def test_rope_dims_default_on_small_head():
    """the default (64) on a head of 64 dims is no user's request: RoPE off, as before"""
    r = lab('run', *SMALL, '--variants', 'base', '--format', 'csv')
    assert r.returncode == 0, r.stderr


# 5. --dump over an earlier dump replaces it whole; a folder that is no dump is refused
def test_dump_replaces_whole(tmp_path):
    a3 = os.path.join(DATA, 'flashmla', 'a3')
    batch = tmp_path / 'batch'  # a3 in FlashMLA's batched layout: its dump writes seqlens.npy
    batch.mkdir()
    q, k = np.load(os.path.join(a3, 'q.npy')), np.load(os.path.join(a3, 'k.npy'))
    np.save(batch / 'q.npy', q.transpose(1, 0, 2)[None])
    np.save(batch / 'k.npy', k)
    np.save(batch / 'seqlens.npy', np.array([k.shape[1]], np.int32))
    out = tmp_path / 'd'
    r = lab('run', '--load', batch, '--variants', 'base', '--dump', out, '--dv', '512')
    assert r.returncode == 0, r.stderr
    assert (out / 'seqlens.npy').exists()
    r = lab('run', *SMALL, '--variants', 'base', '--dump', out)
    assert r.returncode == 0, r.stderr
    assert not (out / 'seqlens.npy').exists()
    assert lab('run', '--load', out, '--variants', 'base').returncode == 0
    mine = tmp_path / 'mine'
    mine.mkdir()
    (mine / 'notes.txt').write_text('keep me')
    refused(lab('run', *SMALL, '--variants', 'base', '--dump', mine), 'notes.txt')
    assert (mine / 'notes.txt').read_text() == 'keep me' and len(os.listdir(mine)) == 1
    assert sorted(os.listdir(tmp_path)) == ['batch', 'd', 'mine']


# 6. a damaged store header: a warning naming the file and the samples set aside, never silence
def test_sweep_store_header(tmp_path):
    exp = tmp_path / 's.exp'
    exp.write_text('name small\nset ctx 64\nset heads 2\nset dk 64\nset dv 32\nset samples 2\n'
                   'set variants base\n')
    out = tmp_path / 'out'
    assert lab('sweep', exp, '--out', out, '--no-plot').returncode == 0
    store = out / '.small.samples'
    text = store.read_bytes()
    store.write_bytes(b'# amla-lab sweep store 2 small XXXX\n' + text.split(b'\n', 1)[1])
    r = lab('sweep', exp, '--out', out, '--no-plot')
    assert r.returncode == 0, r.stderr
    assert 'warning' in r.stderr and str(store) in r.stderr and '2 stored samples' in r.stderr, r.stderr
    assert (out / '.small.samples.set-aside').exists()


# lenient: what was ignored or misnamed is named
def test_lenient_messages(tmp_path):
    v1 = os.path.join(DATA, 'flashmla-sparse', 'v1')
    d = sparse_case(tmp_path, 'fidx')
    np.save(d / 'indices.npy', np.load(d / 'indices.npy').astype(np.float32))
    refused(lab('run', '--load', d), 'indices.npy', 'float values', 'int32')
    c = tmp_path / 'ilse'
    shutil.copytree(os.path.join(DATA, 'flashmla', 'a3'), c)
    np.save(c / 'lse.npy', np.load(c / 'lse.npy').astype(np.int32))
    refused(lab('check', c, '--candidates', 'base'), 'lse.npy', 'integers', 'float values')
    c8 = tmp_path / 'o8'
    shutil.copytree(os.path.join(DATA, 'flashmla', 'a3'), c8)
    np.save(c8 / 'out.npy', np.zeros(np.load(c8 / 'out.npy').shape, np.uint8))
    refused(lab('check', c8, '--candidates', 'base'), '--out-format')
    a3 = os.path.join(DATA, 'flashmla', 'a3')
    refused(lab('check', a3, '--candidates', 'base,base'), '--candidates', 'twice')
    refused(lab('check', a3, '--candidates', 'base,'), '--candidates')
    refused(lab('check', a3, '--candidates', 'golden'), 'golden')
    line = refused(lab('check', a3, '--format', 'yaml'), 'table or json')
    assert 'csv,' not in line
    refused(lab('sweep', os.path.join(ROOT, 'experiments', 'amla-table3.exp'), '--set', 'nosuch=2'), '--set nosuch=2')
    s = sparse_case(tmp_path, 'withk')
    shutil.copy(os.path.join(a3, 'k.npy'), s / 'k.npy')
    refused(lab('run', '--load', s), 'k.npy', 'kcache.npy')
    refused(lab('run', '--load', v1, '--causal'), '--causal')
    refused(lab('run', '--load', a3, '--dk', '64'), '--dk 64', 'dk 576')
    refused(lab('run', '--load', a3, '--heads', '3'), '--heads 3')
    refused(lab('run', *SMALL, '--variants', 'base', '--split-k', '4'), '--split-k')
    refused(lab('run', *SMALL, '--variants', 'base:split-k=4'), 'split-k')
    refused(lab('run', '--sigma', '1e-320', *SMALL[:-2], '--samples', '1'), '--sigma', 'rounds to 0')


def test_check_reports_lse_nan_and_zero_output(tmp_path):
    c = tmp_path / 'nan'
    shutil.copytree(os.path.join(DATA, 'flashmla', 'a3'), c)
    lse = np.load(c / 'lse.npy')
    lse.reshape(-1)[:3] = np.nan
    np.save(c / 'lse.npy', lse)
    np.save(c / 'out.npy', np.zeros(np.load(c / 'out.npy').shape, np.uint16))
    r = lab('check', c, '--candidates', 'base')
    assert r.returncode == 0, r.stderr
    assert 'kernel log-sum-exp: 3 of %d rows NaN' % lse.size in r.stdout
    assert 'nan' not in r.stdout.split('\n')[1].lower().replace('nonfinite', '')


def test_stale_temporary_removed(tmp_path):
    csv = tmp_path / 'x.csv'
    stale = tmp_path / 'x.csv.tmp.999999999.abcdef'  # no such process
    stale.write_text('')
    r = lab('run', *SMALL, '--variants', 'base', '--csv', csv)
    assert r.returncode == 0, r.stderr
    assert not stale.exists() and csv.exists()
    assert [n for n in os.listdir(tmp_path)] == ['x.csv']


def test_csv_load_column_quoted(tmp_path):
    import csv
    d = tmp_path / 'a,b "c"'
    shutil.copytree(os.path.join(DATA, 'flashmla', 'a3'), d)
    for f in ('out.npy', 'lse.npy', 'out_nosplit.npy', 'lse_nosplit.npy'):
        if (d / f).exists():
            os.remove(d / f)
    r = lab('run', '--load', d, '--variants', 'base', '--format', 'csv', '--dv', '512')
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(r.stdout.splitlines()))
    assert rows[0]['load'] == str(d) and rows[0]['variant'] == 'base'


def test_man_page_version():
    with open(os.path.join(ROOT, 'man', 'amla-lab.1')) as f:
        title = f.readline()
    assert '"%s"' % lab('--version').stdout.strip() in title
