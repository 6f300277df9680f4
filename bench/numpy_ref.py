#!/usr/bin/env python3
"""numpy_ref.py -- Golden and base as a numpy user writes them without the lab: Golden as one
binary64 attention (numpy's BLAS, no error bound), base as a binary32 attention through BLAS with
P and O rounded to BF16 (RNE on the bit patterns). `make bench` times both on the bench's shape,
one BLAS thread, and sets the lab's Golden + base against them (issue 17's "numpy script" row).

    OPENBLAS_NUM_THREADS=1 python3 bench/numpy_ref.py --reps 5   # prints: golden_s base_s

The inputs are BF16 values N(0,1) held in binary32, made before the clock starts, V separate from
K as the bench's BLAS reference has it; the medians of --reps runs are printed."""
import argparse
import time

import numpy as np


def bf16(x):
    """binary32 -> the nearest BF16 (ties to even), held in binary32; finite inputs"""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    u = (u + np.uint32(0x7fff) + ((u >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xffff0000)
    return u.view(np.float32)


def golden(q, k, v, scale):
    """softmax(scale Q K^T) V in binary64"""
    s = (q.astype(np.float64) @ k.astype(np.float64).T) * scale
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p @ v.astype(np.float64)) / p.sum(axis=1, keepdims=True)


def base(q, k, v, scale):
    """the same in binary32 through BLAS, P rounded to BF16 before P V, O to BF16 after /l"""
    s = (q @ k.T) * np.float32(scale)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    l = p.sum(axis=1, keepdims=True, dtype=np.float32)
    return bf16((bf16(p) @ v) / l)


def inputs(heads, ctx, dk, dv, seed):
    rng = np.random.default_rng(seed)
    q = bf16(rng.standard_normal((heads, dk), dtype=np.float32))
    k = bf16(rng.standard_normal((ctx, dk), dtype=np.float32))
    v = bf16(rng.standard_normal((ctx, dv), dtype=np.float32))
    return q, k, v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--reps', type=int, default=5)
    ap.add_argument('--heads', type=int, default=128)
    ap.add_argument('--ctx', type=int, default=8192)
    ap.add_argument('--dk', type=int, default=576)
    ap.add_argument('--dv', type=int, default=512)
    a = ap.parse_args()
    if min(a.reps, a.heads, a.ctx, a.dk, a.dv) < 1:
        ap.error('every count must be at least 1')
    q, k, v = inputs(a.heads, a.ctx, a.dk, a.dv, 1)
    scale = a.dk ** -0.5
    med = []
    for f in (golden, base):
        f(q, k, v, scale)  # warm
        t = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            f(q, k, v, scale)
            t.append(time.perf_counter() - t0)
        med.append(float(np.median(t)))
    print('%.6f %.6f' % tuple(med))


if __name__ == '__main__':
    main()
