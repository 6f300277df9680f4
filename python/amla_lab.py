"""amla_lab -- write a kernel's inputs and outputs the way `amla-lab run --load` and
`amla-lab check` read them, and run `check` from Python.

    import amla_lab
    amla_lab.save_case('case', q, kcache, seqlens=seqlens, out=out, lse=lse)   # numpy or torch
    report = amla_lab.check('case')            # the dict `amla-lab check --format json` prints
    report['verdict']                          # 'bit-identical to flashmla on 100.00% of ...'
    amla_lab.save_sparse_case('fp8', q, kcache, indices, out=out, lse=lse)   # FlashMLA's FP8 sparse decode

Arrays may be numpy arrays (float16/32/64, uint8/uint16 bit patterns, ml_dtypes' bfloat16 and
float8 types) or torch tensors (any device; bfloat16 and float8 included). bfloat16 and FP8
values are saved as their bit patterns (uint16, uint8), which the lab reads as codes of
--in-format / --out-format; other floating-point types as they are. numpy is needed; torch and
ml_dtypes are used only when the arrays are theirs.
"""
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np

# dtype names (torch's and ml_dtypes') whose values are saved as bit patterns, and their width
_CODES = {'bfloat16': np.uint16, 'float8_e4m3fn': np.uint8, 'float8_e5m2': np.uint8,
          'float8_e4m3': np.uint8}


def _to_numpy(x):
    """x as a numpy array: torch tensors are moved to the CPU; bfloat16 and FP8 (torch or
    ml_dtypes) become their bit patterns."""
    if x is None:
        return None
    if type(x).__module__.startswith('torch'):
        name = str(x.dtype).replace('torch.', '')
        x = x.detach().cpu().contiguous()
        if name in _CODES:
            width = _CODES[name]
            import torch
            x = x.view(torch.int16 if width == np.uint16 else torch.uint8).numpy().view(width)
            return x
        return x.numpy()
    x = np.ascontiguousarray(x)
    name = x.dtype.name
    if name in _CODES:
        return x.view(_CODES[name])
    return x


def save_case(directory, q, k, v=None, seqlens=None, out=None, lse=None, q_scale=None, k_scale=None, v_scale=None):
    """Write q.npy, k.npy (and v.npy, seqlens.npy, out.npy, lse.npy where given) into directory.

    FP8 codes with their scales: q_scale (likewise k_scale, v_scale) beside q given as e4m3 codes (uint8, or a
    float8_e4m3fn tensor / ml_dtypes array: its bytes) is written as q_scale.npy, float32 [1] (per tensor: vLLM's FP8
    KV cache, FlashMLA's dense FP8 decode) or [B, Hkv] (per batch entry and KV head: FlashAttention-3's descales);
    the lab reads that array as e4m3 codes times the scale.

    With seqlens (int [B]) the arrays are in FlashMLA's layout: q [B, Sq, Hq, Dk], k [B, Smax,
    Hkv, Dk] or [B, Smax, Dk], out [B, Sq, Hq, Dv], lse [B, Hq, Sq]; without it the lab's:
    q [Hq, Sq, Dk], k [Hkv, Sk, Dk], out [Hq, Sq, Dv], lse [Hq, Sq]. Every array is checked before
    anything is written (ValueError names the problem); the case is written into a temporary folder
    beside directory and moved into place whole, replacing an earlier case there. Returns directory."""
    if q is None or k is None:
        raise ValueError('save_case: q and k are needed')
    arrays = {name: _array(name, a) for name, a in {'q': q, 'k': k, 'v': v, 'out': out, 'lse': lse}.items()
              if a is not None}
    sl = None if seqlens is None else _int32('save_case', 'seqlens', seqlens, 0, ndim=1)
    scales = {x: s for x, s in (('q', q_scale), ('k', k_scale), ('v', v_scale)) if s is not None}
    _check_shapes(arrays, sl, set(scales))
    for x, s in scales.items():
        k = arrays['k']
        hkv = (k.shape[2] if k.ndim == 4 else 1) if sl is not None else k.shape[0]
        arrays[x + '_scale'] = _scale(x, s, arrays, len(sl) if sl is not None else 1, hkv)
    if sl is not None:
        arrays['seqlens'] = sl
    return _write_case('save_case', directory, arrays)


# every file a case may hold (save_case's and save_sparse_case's); a folder holding anything else is not replaced
_CASE_FILES = frozenset(n + '.npy' for n in ('q', 'k', 'v', 'seqlens', 'out', 'lse', 'kcache', 'indices',
                                             'topk_length', 'q_scale', 'k_scale', 'v_scale', 'cu_seqlens_q',
                                             'cu_seqlens_k', 'kv', 'attn_sink', 'max_logits'))


def _scale(x, s, arrays, b, hkv):
    """x's scale as float32 [1] or [b, hkv], checked: x present as one-byte codes, the scale finite and positive"""
    if x not in arrays:
        raise ValueError('save_case: %s_scale given without %s' % (x, x))
    if arrays[x].dtype.kind not in 'uV' or arrays[x].itemsize != 1:
        raise ValueError('save_case: %s_scale needs %s as e4m3 codes (one byte each), not %s' % (x, x, arrays[x].dtype))
    raw = np.asarray(_to_numpy(s))
    if raw.dtype.kind not in 'fiu':
        raise ValueError('save_case: %s_scale is %s, not a number or an array of numbers' % (x, raw.dtype))
    a = raw.astype(np.float64).reshape(-1) if raw.ndim <= 1 else raw.astype(np.float64)
    if not (a.shape == (1,) or a.shape == (b, hkv)):
        raise ValueError('save_case: %s_scale has shape %s; it takes [1] or [%d, %d] (batch entries, KV heads)' %
                         (x, list(a.shape), b, hkv))
    if not np.all(np.isfinite(a)) or not np.all(a > 0):
        raise ValueError('save_case: %s_scale must be finite and positive' % x)
    # what is written, and what a kernel takes, is float32: a value beyond it, or flushed to 0 or a subnormal there
    # (which a fast-math kernel flushes), is not that scale
    with np.errstate(over="ignore"):
        f = a.astype(np.float32)
    bad = ~np.isfinite(f) | (f < np.finfo(np.float32).tiny)
    if bad.any():
        i = int(np.flatnonzero(bad.reshape(-1))[0])
        raise ValueError('save_case: %s_scale element %d is %g, which float32 holds as %g (a scale must be a finite '
                         'positive normal float32)' % (x, i, a.reshape(-1)[i], f.reshape(-1)[i]))
    return f


def _write_case(fn, directory, arrays):
    """arrays (name -> numpy array) as directory/NAME.npy, all or nothing: written into a temporary folder
    beside directory, then moved into place whole; an earlier case there (nothing but a case's files) is
    replaced, so none of its files outlives it; a folder holding anything else is refused (ValueError)."""
    directory = os.fspath(directory)
    target = os.path.abspath(directory)
    if os.path.lexists(target):
        if not os.path.isdir(target) or os.path.islink(target):
            raise ValueError('%s: %s is not a folder' % (fn, directory))
        odd = sorted(set(os.listdir(target)) - _CASE_FILES)
        if odd:
            raise ValueError('%s: %s holds %s, which is no case file: name a new or empty folder, or an earlier '
                             'case (replaced whole)' % (fn, directory, odd[0]))
    parent, base = os.path.split(target)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix='.%s.tmp.' % base, dir=parent)
    try:
        for name, a in arrays.items():
            np.save(os.path.join(tmp, name + '.npy'), a)
        if os.path.isdir(target):
            old = tempfile.mkdtemp(prefix='.%s.old.' % base, dir=parent)
            os.rename(target, old)  # over the empty folder made for it
            try:
                os.rename(tmp, target)
            except BaseException:
                os.rename(old, target)
                raise
            shutil.rmtree(old)
        else:
            os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return directory


def _int32(fn, name, a, low, ndim=None):
    """a as int32, or ValueError: integers (not floats, not bools), ndim dims where given, every value from
    low to 2^31 - 1 (never wrapped by the cast)."""
    x = np.asarray(_to_numpy(a))
    if x.dtype.kind not in 'iu' or (ndim is not None and x.ndim != ndim):
        raise ValueError('%s: %s must be integers%s, not %s %s' % (
            fn, name, '' if ndim is None else ' [B]' if ndim == 1 else ' of %d dims' % ndim, x.dtype, list(x.shape)))
    if x.size == 0:
        raise ValueError('%s: %s is empty %s' % (fn, name, list(x.shape)))
    lo, hi = int(x.min()), int(x.max())
    if lo < low or hi > 2 ** 31 - 1:
        raise ValueError('%s: %s holds %d, outside %d to 2^31 - 1 (int32)' % (fn, name, lo if lo < low else hi, low))
    return x.astype(np.int32)


def _array(name, a):
    """a as numpy (_to_numpy), or ValueError naming what it is: a number array, not a string,
    an object or an integer array that is no format's bit pattern"""
    try:
        x = _to_numpy(a)
    except (TypeError, ValueError) as err:
        raise ValueError('save_case: %s is not an array (%s)' % (name, err)) from None
    if not isinstance(x, np.ndarray) or x.dtype.kind not in 'fuV' or (x.dtype.kind in 'uV' and x.itemsize > 2) \
            or x.dtype.itemsize > 8:
        raise ValueError('save_case: %s has dtype %s; it takes float16/32/64 values or uint8/uint16 bit patterns '
                         '(bfloat16 and FP8 are saved as theirs)' % (name, getattr(x, 'dtype', type(a).__name__)))
    if name == 'lse' and x.dtype.kind != 'f':
        raise ValueError('save_case: lse has dtype %s; it takes float values (natural log)' % x.dtype)
    if x.size == 0:
        raise ValueError('save_case: %s is empty %s' % (name, list(x.shape)))
    return x


def _check_shapes(a, seqlens, scaled=frozenset()):
    """The layouts save_case's docstring gives: dims that must agree do, or ValueError names them (arrays with a
    scale are e4m3 codes whatever the others hold)."""
    q, k = a['q'], a['k']
    batch = seqlens is not None
    want = 4 if batch else 3
    if q.ndim != want:
        raise ValueError('save_case: q has %d dims %s; %s' % (q.ndim, list(q.shape), '[B, Sq, Hq, Dk] with seqlens'
                                                              if batch else '[Hq, Sq, Dk] without seqlens'))
    if k.ndim not in ((3, 4) if batch else (3,)):
        raise ValueError('save_case: k has %d dims %s; %s' % (k.ndim, list(k.shape), '[B, Smax, Hkv, Dk] or [B, Smax, Dk]'
                                                              if batch else '[Hkv, Sk, Dk]'))
    widths = {a[n].itemsize for n in ('q', 'k', 'v') if n in a and a[n].dtype.kind in 'uV' and n not in scaled}
    if len(widths) > 1:  # the lab reads the bit patterns of q, k and v as one --in-format
        raise ValueError('save_case: q, k and v hold bit patterns of %s bytes; the lab reads them in one format' %
                         ' and '.join(map(str, sorted(widths))))
    if q.shape[-1] != k.shape[-1]:
        raise ValueError('save_case: q and k have different head dims (%d and %d)' % (q.shape[-1], k.shape[-1]))
    if batch:
        b, sq, hq = q.shape[:3]
        if k.shape[0] != b or len(seqlens) != b:
            raise ValueError('save_case: batch sizes differ: q %d, k %d, seqlens %d' % (b, k.shape[0], len(seqlens)))
        if seqlens.max(initial=0) > k.shape[1]:
            raise ValueError('save_case: seqlens reach %d but k holds %d keys' % (seqlens.max(), k.shape[1]))
        hkv = k.shape[2] if k.ndim == 4 else 1
    else:
        hq, sq, hkv = q.shape[0], q.shape[1], k.shape[0]
    if hq % hkv:
        raise ValueError('save_case: %d query heads are not a multiple of %d KV heads' % (hq, hkv))
    v = a.get('v')
    if v is not None and (v.ndim != k.ndim or v.shape[:-1] != k.shape[:-1]):
        raise ValueError('save_case: v %s does not match k %s but in its last dim' % (list(v.shape), list(k.shape)))
    out, lse = a.get('out'), a.get('lse')
    if out is not None:
        lead = (b, sq, hq) if batch else (hq, sq)
        if out.shape[:-1] != lead:
            raise ValueError('save_case: out %s does not match q: %s [%s, Dv]' % (
                list(out.shape), 'with seqlens' if batch else 'without seqlens', ', '.join(map(str, lead))))
        if v is not None and out.shape[-1] != v.shape[-1]:
            raise ValueError('save_case: out has %d columns, v %d' % (out.shape[-1], v.shape[-1]))
    if lse is not None:
        lead = (b, hq, sq) if batch else (hq, sq)
        if lse.shape != lead and not (not batch and sq == 1 and lse.shape == (hq,)):
            raise ValueError('save_case: lse %s, not %s' % (list(lse.shape), list(lead)))


# FlashMLA's FP8 sparse-decode cache: bytes a token -> (layout, head dim of q)
_FP8_LAYOUTS = {656: ('V32', 576), 584: ('MODEL1', 512)}


def save_varlen_case(directory, q, k, v, cu_seqlens_q, cu_seqlens_k, out=None, lse=None, q_descale=None,
                     k_descale=None, v_descale=None):
    """Write a case as FlashAttention's flash_attn_varlen_func took it (vLLM's and SGLang's prefill, DeepSeek's MLA
    prefill with q/k head dim 192 and v 128): q [total_q, Hq, Dk], k [total_k, Hkv, Dk], v [total_k, Hkv, Dv], every
    sequence's tokens packed along the first dimension, cu_seqlens_q and cu_seqlens_k (int [B + 1], from 0, not
    decreasing, ending at total_q and total_k), and where given out [total_q, Hq, Dv] and lse [Hq, total_q] as the
    kernel returned them. FP8: q (k, v) as e4m3 codes with q_descale (k_descale, v_descale): float32 [1] or [B, Hkv],
    written as q_scale.npy. Raises ValueError naming the problem before anything is written; the case is moved into
    place whole (as save_case's). Returns directory."""
    arrays = {name: _array(name, a) for name, a in {'q': q, 'k': k, 'v': v, 'out': out}.items() if a is not None}
    if len(arrays) < 3 + (out is not None):
        raise ValueError('save_varlen_case: q, k and v are needed')
    q, k, v = arrays['q'], arrays['k'], arrays['v']
    for name, a in (('q', q), ('k', k), ('v', v)):
        if a.ndim != 3 or 0 in a.shape:
            raise ValueError('save_varlen_case: %s has shape %s, not [total, heads, head dim]' % (name, list(a.shape)))
    if k.shape[2] != q.shape[2] or v.shape[:2] != k.shape[:2] or q.shape[1] % k.shape[1]:
        raise ValueError('save_varlen_case: q %s, k %s, v %s do not fit: q and k share a head dim, k and v their '
                         'tokens and heads, and the query heads are a multiple of the KV heads' % (
                             list(q.shape), list(k.shape), list(v.shape)))
    cu = {}
    for name, a, total in (('cu_seqlens_q', cu_seqlens_q, q.shape[0]), ('cu_seqlens_k', cu_seqlens_k, k.shape[0])):
        c = _int32('save_varlen_case', name, a, 0, ndim=1)
        if len(c) < 2 or c[0] != 0 or (np.diff(c) < 0).any() or c[-1] != total:
            raise ValueError('save_varlen_case: %s must rise from 0 to %d (its array\'s tokens), not %s' % (
                name, total, c.tolist()[:8]))
        cu[name] = c
    if len(cu['cu_seqlens_k']) != len(cu['cu_seqlens_q']):
        raise ValueError('save_varlen_case: cu_seqlens_q has %d sequences, cu_seqlens_k %d' % (
            len(cu['cu_seqlens_q']) - 1, len(cu['cu_seqlens_k']) - 1))
    if (np.diff(cu['cu_seqlens_q']) == 0).any():
        raise ValueError('save_varlen_case: a sequence without a query token (cu_seqlens_q repeats a value)')
    if 'out' in arrays and arrays['out'].shape != (q.shape[0], q.shape[1], v.shape[2]):
        raise ValueError('save_varlen_case: out has shape %s, not [%d, %d, %d]' % (
            list(arrays['out'].shape), q.shape[0], q.shape[1], v.shape[2]))
    if lse is not None:
        lse = _to_numpy(lse)
        if lse.dtype.kind != 'f' or lse.shape != (q.shape[1], q.shape[0]):
            raise ValueError('save_varlen_case: lse %s of %s, not float values [%d, %d] (heads, tokens; natural '
                             'log)' % (list(lse.shape), lse.dtype, q.shape[1], q.shape[0]))
        arrays['lse'] = np.ascontiguousarray(lse, dtype=np.float32)
    for x, sc in (('q', q_descale), ('k', k_descale), ('v', v_descale)):
        if sc is not None:
            arrays[x + '_scale'] = _scale(x, sc, arrays, len(cu['cu_seqlens_q']) - 1, k.shape[1])
    arrays.update(cu)
    return _write_case('save_varlen_case', directory, arrays)


def save_sparse_case(directory, q, kcache, indices, topk_length=None, out=None, lse=None):
    """Write a sparse FP8 decoding case as FlashMLA's flash_mla_with_kvcache(..., is_fp8_kvcache=True,
    indices=...) took it: q.npy (bf16 [B, Sq, Hq, d]), kcache.npy (the cache's bytes, [blocks, page, 1,
    656] for V32 with d 576 or [blocks, page, 1, 584] for MODEL1 with d 512; any dtype of one byte, an
    fp8 tensor included), indices.npy (int32 [B, Sq, topk], -1 invalid, topk a multiple of 64),
    topk_length.npy (int32 [B], MODEL1 only), out.npy (bf16 [B, Sq, Hq, 512]) and lse.npy (float32
    [B, Hq, Sq]) where given. Raises ValueError naming the problem before anything is written; the
    case is moved into place whole (as save_case's). Returns directory."""
    q, kc, idx = _to_numpy(q), _to_numpy(kcache), _to_numpy(indices)
    tl, out, lse = _to_numpy(topk_length), _to_numpy(out), _to_numpy(lse)
    if q is None or kc is None or idx is None:
        raise ValueError('save_sparse_case: q, kcache and indices are needed')
    if kc.dtype.itemsize != 1 or kc.ndim != 4 or kc.shape[2] != 1 or 0 in kc.shape:
        raise ValueError('save_sparse_case: kcache %s of %s, not bytes [blocks, page, 1, bytes]' % (
            list(kc.shape), kc.dtype))
    if kc.shape[3] not in _FP8_LAYOUTS:
        raise ValueError('save_sparse_case: %d bytes a token is no FP8 cache layout (V32: 656, MODEL1: 584)'
                         % kc.shape[3])
    layout, d = _FP8_LAYOUTS[kc.shape[3]]
    if q.dtype != np.uint16 or q.ndim != 4 or q.shape[3] != d or 0 in q.shape:
        raise ValueError('save_sparse_case: q %s of %s, but a %s cache takes bf16 q [B, Sq, Hq, %d]' % (
            list(q.shape), q.dtype, layout, d))
    b, sq, hq = q.shape[:3]
    if idx.dtype.kind not in 'iu' or idx.ndim != 3 or idx.shape[:2] != (b, sq) or idx.shape[2] % 64 or not idx.shape[2]:
        raise ValueError('save_sparse_case: indices %s of %s, not int32 [%d, %d, topk] with topk a multiple of 64'
                         % (list(idx.shape), idx.dtype, b, sq))
    arrays = {'q': q, 'kcache': kc.view(np.uint8), 'indices': _int32('save_sparse_case', 'indices', idx, -1)}
    if tl is not None:
        if layout != 'MODEL1' or tl.dtype.kind not in 'iu' or tl.shape != (b,):
            raise ValueError('save_sparse_case: topk_length %s: the MODEL1 kernel alone takes one, int32 [%d]'
                             % (list(tl.shape), b))
        arrays['topk_length'] = _int32('save_sparse_case', 'topk_length', tl, 0)
        if int(arrays['topk_length'].max()) > idx.shape[2]:
            raise ValueError('save_sparse_case: topk_length holds %d, past topk %d' % (
                arrays['topk_length'].max(), idx.shape[2]))
    if out is not None:
        if out.dtype != np.uint16 or out.shape != (b, sq, hq, 512):
            raise ValueError('save_sparse_case: out %s of %s, not bf16 [%d, %d, %d, 512]' % (
                list(out.shape), out.dtype, b, sq, hq))
        arrays['out'] = out
    if lse is not None:
        if not isinstance(lse, np.ndarray) or lse.dtype.kind != 'f' or lse.shape != (b, hq, sq):
            raise ValueError('save_sparse_case: lse %s of %s, not float values [%d, %d, %d] (natural log)' % (
                list(getattr(lse, 'shape', [])), getattr(lse, 'dtype', type(lse).__name__), b, hq, sq))
        arrays['lse'] = np.ascontiguousarray(lse, dtype=np.float32)
    return _write_case('save_sparse_case', directory, arrays)


def save_prefill_case(directory, q, kv, indices, topk_length=None, attn_sink=None, out=None, lse=None, max_logits=None):
    """Write a sparse prefill case as FlashMLA's flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v, attn_sink,
    topk_length) took it (DeepSeek-V3.2's DSA prefill, d_qk 576; V4's, d_qk 512): q.npy (bf16 [s_q, h_q, d_qk], h_q a
    multiple of 64), kv.npy (bf16 [s_kv, 1, d_qk]; V its first 512 dims), indices.npy (int32 [s_q, 1, topk], topk a
    multiple of 128; an index < 0 or >= s_kv is invalid), topk_length.npy (int32 [s_q], 0 .. topk) and attn_sink.npy
    (float32 [h_q], no NaN) where given, and the kernel's out.npy (bf16 [s_q, h_q, 512]), lse.npy and max_logits.npy
    (float32 [s_q, h_q]) where given. The kernel's sm_scale is check's scale= (--scale). Raises ValueError naming the
    problem before anything is written; the case is moved into place whole (as save_case's). Returns directory."""
    fn = 'save_prefill_case'
    q, kv, idx = _to_numpy(q), _to_numpy(kv), _to_numpy(indices)
    if q is None or kv is None or idx is None:
        raise ValueError('%s: q, kv and indices are needed' % fn)
    if q.dtype != np.uint16 or q.ndim != 3 or q.shape[2] not in (512, 576) or q.shape[1] % 64 or 0 in q.shape:
        raise ValueError('%s: q %s of %s, not bf16 [s_q, h_q, d_qk] with d_qk 576 or 512 and h_q a multiple of 64' % (
            fn, list(q.shape), q.dtype))
    s_q, h_q, d = q.shape
    if kv.dtype != np.uint16 or kv.ndim != 3 or kv.shape[1:] != (1, d) or not kv.shape[0]:
        raise ValueError('%s: kv %s of %s, not bf16 [s_kv, 1, %d]' % (fn, list(kv.shape), kv.dtype, d))
    if idx.dtype.kind not in 'iu' or idx.ndim != 3 or idx.shape[:2] != (s_q, 1) or not idx.shape[2] or idx.shape[2] % 128:
        raise ValueError('%s: indices %s of %s, not int32 [%d, 1, topk] with topk a multiple of 128' % (
            fn, list(idx.shape), idx.dtype, s_q))
    arrays = {'q': q, 'kv': kv, 'indices': _int32(fn, 'indices', idx, -2 ** 31)}
    if topk_length is not None:
        tl = _int32(fn, 'topk_length', topk_length, 0, ndim=1)
        if tl.shape != (s_q,) or int(tl.max()) > idx.shape[2]:
            raise ValueError('%s: topk_length %s holding up to %d, not int32 [%d] of 0 .. topk %d' % (
                fn, list(tl.shape), tl.max(), s_q, idx.shape[2]))
        arrays['topk_length'] = tl
    rows = {'attn_sink': (attn_sink, (h_q,)), 'lse': (lse, (s_q, h_q)), 'max_logits': (max_logits, (s_q, h_q))}
    for name, (a, shape) in rows.items():
        a = _to_numpy(a)
        if a is None:
            continue
        if a.dtype.kind != 'f' or a.shape != shape or (name == 'attn_sink' and np.isnan(a).any()):
            raise ValueError('%s: %s %s of %s, not float values %s%s' % (fn, name, list(a.shape), a.dtype, list(shape),
                                                                     ' without NaN' if name == 'attn_sink' else ''))
        arrays[name] = np.ascontiguousarray(a, dtype=np.float32)
    if out is not None:
        out = _to_numpy(out)
        if out.dtype != np.uint16 or out.shape != (s_q, h_q, 512):
            raise ValueError('%s: out %s of %s, not bf16 [%d, %d, 512]' % (fn, list(out.shape), out.dtype, s_q, h_q))
        arrays['out'] = out
    if 'max_logits' in arrays and 'lse' not in arrays:
        raise ValueError('%s: max_logits without lse (the kernel returns both)' % fn)
    return _write_case(fn, directory, arrays)


def _binary(binary):
    found = binary or os.environ.get('AMLA_BIN') or shutil.which('amla-lab')
    if not found:
        here = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'amla-lab')
        found = here if os.path.exists(here) else None
    if not found:
        raise FileNotFoundError('amla-lab not found: pass binary=, set AMLA_BIN, or put it on PATH')
    return found


def check(directory, binary=None, **options):
    """Run `amla-lab check DIRECTORY --format json` with options (in_format='bf16' becomes
    --in-format bf16; candidates=['flashmla', 'base'] becomes --candidates flashmla,base; a True
    value is a flag such as causal=True, causal='top-left' PyTorch SDPA's is_causal) and return its report
    as a dict. Raises
    RuntimeError with the lab's message when it exits non-zero (bad input exits 2)."""
    args = [_binary(binary), 'check', str(directory), '--format', 'json']
    for key, value in options.items():
        opt = '--' + key.replace('_', '-')
        if value is True:
            args.append(opt)
        elif value is False or value is None:
            continue
        elif isinstance(value, (list, tuple)):
            args.append(opt + '=' + ','.join(map(str, value)))
        else:
            args.append(opt + '=' + str(value))  # one argument: a flag's value too (--causal=top-left)
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError('amla-lab check exited %d: %s' % (done.returncode, done.stderr.strip()))
    return json.loads(done.stdout)
