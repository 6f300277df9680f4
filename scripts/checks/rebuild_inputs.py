#!/usr/bin/env python3
"""rebuild_inputs.py [DIR...] -- the input arrays of committed captures drawn again from their seeds. A capture
folder whose meta.json names an "inputs_recipe" (capture_inputs.rebuild: fa3, flashmla_prefill) keeps its outputs
and small files only; each of its cases lists the inputs it drops in "inputs_sha256" (file -> sha256 of the array's
dtype, shape and bytes, taken from the arrays the GPU ran on). Each missing file is drawn again and written (or, for
a case with "inputs_from": another committed case's folder under tests/data, copied from there: the same inputs run
through another build), and every listed file, new or there already, must hash as listed: exit 1 naming the first
that does not. DIR: capture folders (default every tests/data/* whose meta.json names a recipe). Needs numpy."""
import glob
import hashlib
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_inputs import rebuild  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')


def digest(a):
    """sha256 of an array's dtype, shape and bytes (what np.save's header may spell differently left out)"""
    h = hashlib.sha256()
    h.update(('%s %s ' % (a.dtype.str, list(a.shape))).encode())
    h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def folder(d):
    with open(os.path.join(d, 'meta.json')) as f:
        m = json.load(f)
    recipe, made = m.get('inputs_recipe'), 0
    for name, c in m.get('cases', {}).items():
        want, source = c.get('inputs_sha256'), c.get('inputs_from')
        if not want or not (recipe or source):
            continue
        drawn = None
        for fname, sha in sorted(want.items()):
            path = os.path.join(d, name, fname)
            if not os.path.exists(path) and source:
                shutil.copyfile(os.path.join(ROOT, 'tests', 'data', source, fname), path)
                made += 1
            elif not os.path.exists(path):
                if drawn is None:
                    drawn = rebuild(recipe, c)
                np.save(path, drawn[fname[:-4]])
                made += 1
            if digest(np.load(path)) != sha:
                sys.exit('rebuild_inputs.py: %s is not the array the capture ran on (sha256 differs)' % path)
    return made


def main():
    dirs = sys.argv[1:] or sorted(os.path.dirname(p) for p in glob.glob(os.path.join(ROOT, 'tests', '*', '*',
                                                                                          'meta.json')))
    made = 0
    for d in dirs:
        if os.path.exists(os.path.join(d, 'meta.json')):
            made += folder(d)
    if made:
        print('rebuild_inputs.py: %d input arrays drawn again from their seeds' % made)


if __name__ == '__main__':
    main()
