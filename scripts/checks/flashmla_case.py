#!/usr/bin/env python3
"""flashmla_case.py CASE.npz OUTDIR DTYPE [codes] -- one FlashMLA capture (shared/captures/flashmla, keys
in its meta.json) as `amla-lab run --load` directories, one per batch entry: OUTDIR/bI/q.npy
[h_q, s_q, 576] and k.npy [1, seqlens[i], 576] as uint16 bit patterns of DTYPE (bf16 or fp16; the
kernel's row order s*h_q + h becomes the lab's [h_q, s_q]), and the kernel's outputs out.npy and
out_nosplit.npy [h_q, s_q, 512] as float32 values (with `codes`: as uint16 bit patterns, what
`amla-lab cast --to DTYPE` makes of the lab's dump), and the kernel's log-sum-exps lse.npy and
lse_nosplit.npy [h_q, s_q] (float32, natural log). Python's standard library only."""
import array
import ast
import os
import struct
import sys
import zipfile


def read_npy(blob):
    hl = struct.unpack('<H', blob[8:10])[0]
    return ast.literal_eval(blob[10:10 + hl].decode('latin1')), blob[10 + hl:]


def write_npy(path, shape, descr, arr):
    d = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ', '.join(map(str, shape)) + (',' if len(shape) == 1 else ''))
    pad = (64 - (10 + len(d) + 1) % 64) % 64
    with open(path, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(d) + 1 + pad) + d.encode() + b' ' * pad + b'\n')
        f.write(arr.tobytes())


def to_f32(codes, dtype):
    if dtype == 'bf16':
        out = array.array('f')
        out.frombytes(array.array('I', [c << 16 for c in codes]).tobytes())
        return out
    return array.array('f', [struct.unpack('<e', struct.pack('<H', c))[0] for c in codes])


def transpose(a, base, sq, hq, d, typecode):
    """[sq][hq][d] at a[base:] -> [hq][sq][d]"""
    r = array.array(typecode, bytes(a.itemsize * sq * hq * d))
    for s in range(sq):
        for h in range(hq):
            src = base + (s * hq + h) * d
            dst = (h * sq + s) * d
            r[dst:dst + d] = a[src:src + d]
    return r


def main():
    case, out, dtype = sys.argv[1], sys.argv[2], sys.argv[3]
    codes = len(sys.argv) > 4 and sys.argv[4] == 'codes'
    z = zipfile.ZipFile(case)
    arrs = {n[:-4]: read_npy(z.read(n)) for n in z.namelist()}
    b, sq, hq, dk = arrs['q'][0]['shape']
    smax = arrs['k'][0]['shape'][1]
    seqlens = struct.unpack('<%di' % b, arrs['seqlens'][1][:4 * b])
    q = array.array('H')
    q.frombytes(arrs['q'][1])
    k = array.array('H')
    k.frombytes(arrs['k'][1])
    outs = {}
    for name in ('out', 'out_nosplit'):
        o = array.array('H')
        o.frombytes(arrs[name][1])
        outs[name] = o
    for i in range(b):
        d = os.path.join(out, 'b%d' % i)
        os.makedirs(d, exist_ok=True)
        write_npy(os.path.join(d, 'q.npy'), (hq, sq, dk), '<u2', transpose(q, i * sq * hq * dk, sq, hq, dk, 'H'))
        write_npy(os.path.join(d, 'k.npy'), (1, seqlens[i], dk), '<u2', k[i * smax * dk:i * smax * dk + seqlens[i] * dk])
        for name, o in outs.items():
            t = transpose(o, i * sq * hq * 512, sq, hq, 512, 'H')
            if codes:
                write_npy(os.path.join(d, name + '.npy'), (hq, sq, 512), '<u2', t)
            else:
                write_npy(os.path.join(d, name + '.npy'), (hq, sq, 512), '<f4', to_f32(t, dtype))
        for name in ('lse', 'lse_nosplit'):
            a = array.array('f')
            a.frombytes(arrs[name][1])
            write_npy(os.path.join(d, name + '.npy'), (hq, sq), '<f4', a[i * hq * sq:(i + 1) * hq * sq])
    print('%s: %d batch entries, seqlens %s' % (os.path.basename(case), b, list(seqlens)))


if __name__ == '__main__':
    main()
