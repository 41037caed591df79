#!/bin/sh
# Runs the 24 reproducers checked in REPORT-2.md, one at a time, from reports/survey.
# Usage (from reports/survey): PYTHON=../../.venv/bin/python sh reference-check/scripts2/run_reproducers.sh [OUTDIR]
# (default OUTDIR /tmp/refcheck2/runs)
out=${1:-/tmp/refcheck2/runs}; mkdir -p "$out"
for n in 63 69 70 74 75 77 78 79 80 82 83 85 86 87 91 92 93 94 95 96 97 98 111 112; do
  name=$(awk -v n=$n '$1==n{print $2}' reference-check/list.tsv)
  "${PYTHON:-python3}" "found/$name.py" > "$out/$n-$name.out" 2>&1
  echo "== $n $name (rc=$?)"; cat "$out/$n-$name.out"
done
