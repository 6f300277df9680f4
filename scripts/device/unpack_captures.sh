#!/bin/sh
# unpack_captures.sh SRC DEST -- SRC/captures.npz (from capture_gpu.py) into DEST/NAME.npy
# files, and SRC/meta.json alongside; a .npz is a zip archive of .npy files.
set -e
src=$1 dest=$2
[ -f "$src/captures.npz" ] || { echo "unpack_captures.sh: no $src/captures.npz" >&2; exit 2; }
mkdir -p "$dest"
python3 -m zipfile -e "$src/captures.npz" "$dest"
cp "$src/meta.json" "$dest/meta.json"
ls "$dest" | wc -l
