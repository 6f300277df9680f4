"""What the pytest files share: the lab's binary (AMLA_BIN, default ./amla-lab) run on arguments, the check that it
refused bad input in one line with exit 2, and bf16 bit patterns in numpy."""
import os
import subprocess

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
BIN = os.environ.get('AMLA_BIN', os.path.join(ROOT, 'amla-lab'))
DATA = os.path.join(ROOT, 'tests', 'data')


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


def bf16_bits(x):
    """float values to bf16 bit patterns, round to nearest even"""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
