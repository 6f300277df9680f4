# captures-lib.sh -- what the checks against GPU captures share (sourced by flashmla-check.sh,
# flashmla-fp8-check.sh, splitk-check.sh and sdpa-check.sh, run from the repository's root with $caps and $0 set):
# the captures' description ($meta_json, default $caps/meta.json) required (exit 2 without it), a Python with
# numpy ($py), amla-lab built, the committed captures' redrawn inputs (inputs.sh), a temporary folder ($tmp,
# removed on exit), meta CASE EXPR: EXPR evaluated with m = the description and c = its case CASE ({} where it
# has none), and the two layouts a set of captures
# comes in: NAME.npz files as a capture script on the device writes them, or folders NAME/ of .npy files as
# tests/data keeps them (case_names lists either, case_unpack makes a folder of either).
meta_json=${meta_json:-$caps/meta.json}
[ -f "$meta_json" ] || { echo "$(basename "$0"): no captures in $caps (no $meta_json)" >&2; exit 2; }
py=/usr/bin/python3
[ -x $py ] || py=python3
make -s amla-lab >/dev/null
sh scripts/checks/inputs.sh # the committed captures' inputs their seeds draw again
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meta() { $py -c "import json, sys; m = json.load(open(sys.argv[1])); c = m['cases'].get(sys.argv[2], {}); print(eval(sys.argv[3]))" "$meta_json" "$1" "$2"; }
# case_names: the cases in $caps in version order, NAME.npz files and folders NAME/ holding a q.npy
case_names() {
    for f in "$caps"/*.npz "$caps"/*/q.npy; do
        [ -f "$f" ] || continue
        case $f in *.npz) basename "$f" .npz ;; *) basename "$(dirname "$f")" ;; esac
    done | sort -V
}
# case_unpack NAME DEST: DEST a new folder holding case NAME's arrays (its .npz unpacked or its folder copied)
case_unpack() {
    rm -rf "$2"
    if [ -f "$caps/$1.npz" ]; then
        $py -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" "$caps/$1.npz" "$2"
    else
        cp -r "$caps/$1" "$2"
    fi
}
