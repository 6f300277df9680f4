#!/bin/sh
# run-experiments.sh [-j N] [NAME...] -- run experiments/NAME.exp (default: every one) with
# `amla-lab sweep`, N at a time (default 1: each sweep already uses every core). Each sweep
# resumes where an interrupted one stopped. Output under results/.
set -e
cd "$(dirname "$0")/../.."
jobs=1
if [ "$1" = "-j" ]; then jobs=$2; shift 2; fi
if [ $# -eq 0 ]; then
    set -- $(ls experiments/*.exp | sed 's|experiments/||; s|\.exp$||')
fi
for n in "$@"; do
    [ -f "experiments/$n.exp" ] || { echo "run-experiments.sh: no experiments/$n.exp" >&2; exit 2; }
done
printf '%s\n' "$@" | xargs -P "$jobs" -I{} sh -c 'start=$(date +%s); ./amla-lab sweep experiments/{}.exp && echo "{}: $(( $(date +%s) - start )) s"'
