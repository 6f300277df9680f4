# captures-lib.sh -- what the checks against GPU captures share (sourced by flashmla-fp8-check.sh,
# splitk-check.sh and sdpa-check.sh, run from the repository's root with $caps and $0 set): the captures'
# meta.json required (exit 2 without it), a Python with numpy ($py), amla-lab built, a temporary folder
# ($tmp, removed on exit) and meta CASE EXPR: EXPR evaluated with m = meta.json and c = its case CASE.
[ -f "$caps/meta.json" ] || { echo "$(basename "$0"): no captures in $caps" >&2; exit 2; }
py=/usr/bin/python3
[ -x $py ] || py=python3
make -s amla-lab >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meta() { $py -c "import json, sys; m = json.load(open(sys.argv[1])); c = m['cases'].get(sys.argv[2], {}); print(eval(sys.argv[3]))" "$caps/meta.json" "$1" "$2"; }
