"""amla_lab -- write a kernel's inputs and outputs the way `amla-lab run --load` and
`amla-lab check` read them, and run `check` from Python.

    import amla_lab
    amla_lab.save_case('case', q, kcache, seqlens=seqlens, out=out, lse=lse)   # numpy or torch
    report = amla_lab.check('case')            # the dict `amla-lab check --format json` prints
    report['verdict']                          # 'bit-identical to flashmla on 100.00% of ...'

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


def save_case(directory, q, k, v=None, seqlens=None, out=None, lse=None):
    """Write q.npy, k.npy (and v.npy, seqlens.npy, out.npy, lse.npy where given) into directory.

    With seqlens (int [B]) the arrays are in FlashMLA's layout: q [B, Sq, Hq, Dk], k [B, Smax,
    Hkv, Dk] or [B, Smax, Dk], out [B, Sq, Hq, Dv], lse [B, Hq, Sq]; without it the lab's:
    q [Hq, Sq, Dk], k [Hkv, Sk, Dk], out [Hq, Sq, Dv], lse [Hq, Sq]. Returns directory."""
    os.makedirs(directory, exist_ok=True)
    arrays = {'q': q, 'k': k, 'v': v, 'out': out, 'lse': lse}
    for name, a in arrays.items():
        if a is not None:
            np.save(os.path.join(directory, name + '.npy'), _to_numpy(a))
    if seqlens is not None:
        np.save(os.path.join(directory, 'seqlens.npy'), _to_numpy(seqlens).astype(np.int32))
    return directory


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
    value is a flag such as causal=True) and return its report as a dict. Raises
    RuntimeError with the lab's message when it exits non-zero (bad input exits 2)."""
    args = [_binary(binary), 'check', str(directory), '--format', 'json']
    for key, value in options.items():
        opt = '--' + key.replace('_', '-')
        if value is True:
            args.append(opt)
        elif value is False or value is None:
            continue
        elif isinstance(value, (list, tuple)):
            args += [opt, ','.join(map(str, value))]
        else:
            args += [opt, str(value)]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError('amla-lab check exited %d: %s' % (done.returncode, done.stderr.strip()))
    return json.loads(done.stdout)
