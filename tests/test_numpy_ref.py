"""pytest: bench/numpy_ref.py, the numpy Golden and base that `make bench` times against the
lab's. BF16 rounding against hand-worked bit patterns; Golden against the lab's Golden (MPFR-
bounded, tests/t-golden.c) on inputs the lab generated (AMLA_BIN, default ./amla-lab)."""
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
sys.path.insert(0, os.path.join(ROOT, 'bench'))
import numpy_ref  # noqa: E402

BIN = os.environ.get('AMLA_BIN', os.path.join(ROOT, 'amla-lab'))


def test_bf16_rounds_to_nearest_even():
    x = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8, 1 + 2.0**-8 + 2.0**-20, -(1 + 2.0**-9), 2.0**-130, 0.0],
                 dtype=np.float32)
    want = np.array([1.0, 1 + 2.0**-6, 1 + 2.0**-7, -1.0, 2.0**-130, 0.0], dtype=np.float32)
    assert np.array_equal(numpy_ref.bf16(x), want)
    assert np.all(numpy_ref.bf16(x).view(np.uint32) & 0xffff == 0)


def test_golden_and_base_against_the_lab(tmp_path):
    d = tmp_path / 'case'
    subprocess.run([BIN, 'run', '--samples', '1', '--heads', '8', '--ctx', '300', '--dk', '64', '--dv', '48',
                    '--variants', 'base', '--seed', '5', '--dump', str(d)], check=True, stdout=subprocess.DEVNULL)
    q = np.load(d / 'q.npy')[:, 0, :].astype(np.float32)  # BF16 values: exact in binary32
    k = np.load(d / 'k.npy')[0].astype(np.float32)
    v = np.load(d / 'v.npy')[0].astype(np.float32)
    gold = np.load(d / 'golden.npy')[:, 0, :]
    scale = 64 ** -0.5
    g = numpy_ref.golden(q, k, v, scale)
    assert np.linalg.norm(g - gold) <= 1e-14 * np.linalg.norm(gold)
    b = numpy_ref.base(q, k, v, scale)
    assert np.all(b.view(np.uint32) & 0xffff == 0)  # every output a BF16 value
    assert np.linalg.norm(b - gold) <= 2.0**-7 * np.linalg.norm(gold)
