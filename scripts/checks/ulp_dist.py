#!/usr/bin/env python3
"""ulp_dist.py A.npy B.npy FMT -- the largest distance in units in the last place of FMT (bf16,
fp16 or fp32) between the elements of A and B: each value (float32/float64 holding FMT values,
or uint16 bit patterns of a 16-bit FMT) mapped to its position in FMT's ordered codes, and the
largest |position(A) - position(B)| printed (0: bit-identical; 'nan' where one side is NaN and
the other is not). Python's standard library only."""
import array
import math
import struct
import sys

from flashmla_case import read_npy

BITS = {'bf16': 16, 'fp16': 16, 'fp32': 32}


def codes(path, fmt):
    try:
        with open(path, 'rb') as f:
            head, data = read_npy(f.read())
        tc = {'<u2': 'H', '<f4': 'f', '<f8': 'd'}[head['descr']]
    except (OSError, ValueError, SyntaxError, KeyError, TypeError, struct.error) as e:
        fail('%s: not a readable uint16/float32/float64 .npy (%s)' % (path, e))
    a = array.array(tc)
    a.frombytes(data[:len(data) // a.itemsize * a.itemsize])
    if head.get('fortran_order'):
        a = c_order(a, head['shape'])
    if tc == 'H':
        if BITS[fmt] != 16:
            fail('%s: uint16 codes, but %s is not a 16-bit format' % (path, fmt))
        return list(a)
    out = []
    for x in a:
        if fmt == 'fp32':
            out.append(struct.unpack('<I', struct.pack('<f', x))[0])
        elif fmt == 'bf16':
            out.append(struct.unpack('<I', struct.pack('<f', x))[0] >> 16)  # exact: x is a bf16 value
        else:
            out.append(struct.unpack('<H', struct.pack('<e', x))[0])
    return out


def c_order(a, shape):
    """a Fortran-order array's elements in C order (element (i0, i1, ...) is at i0 + s0 (i1 + ...))"""
    out = type(a)(a.typecode)
    n = len(a)
    idx = [0] * len(shape)
    for _ in range(n):
        f = 0
        for d in reversed(range(len(shape))):
            f = f * shape[d] + idx[d]
        out.append(a[f])
        for d in reversed(range(len(shape))):
            idx[d] += 1
            if idx[d] < shape[d]:
                break
            idx[d] = 0
    return out


def position(c, bits):
    """sign-magnitude code -> an integer line where neighbours differ by 1 (+0 and -0 both 0)"""
    sign = c >> (bits - 1)
    mag = c & ((1 << (bits - 1)) - 1)
    return -mag if sign else mag


def fail(msg):
    sys.stderr.write('ulp_dist.py: error: %s\n' % msg)
    sys.exit(2)


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in BITS:
        fail('usage: ulp_dist.py A.npy B.npy bf16|fp16|fp32')
    a_path, b_path, fmt = sys.argv[1:4]
    bits = BITS[fmt]
    ea, mb = {'bf16': (8, 7), 'fp16': (5, 10), 'fp32': (8, 23)}[fmt]
    expmask = ((1 << ea) - 1) << mb
    a, b = codes(a_path, fmt), codes(b_path, fmt)
    if len(a) != len(b):
        fail('%s and %s: %d and %d elements' % (a_path, b_path, len(a), len(b)))
    worst = 0
    for x, y in zip(a, b):
        nx = (x & expmask) == expmask and x & ((1 << mb) - 1)
        ny = (y & expmask) == expmask and y & ((1 << mb) - 1)
        if nx or ny:
            if not (nx and ny):
                worst = math.inf
            continue
        worst = max(worst, abs(position(x, bits) - position(y, bits)))
    print('nan' if worst == math.inf else worst)


if __name__ == '__main__':
    main()
