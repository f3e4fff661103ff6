#!/usr/bin/env bash
# README command (1): set everything up on a fresh machine, then show the whole product on
# the embedded model (SmolLM2-135M served by llama.cpp on 127.0.0.1):
#   1. a baseline run on copycolors and common_knowledge (8 rollouts per problem);
#   2. a candidate run of the same weights mis-served with rope_freq_scale 0.8 (a wrong
#      position scaling, the kind of mistake made when re-serving for longer context);
#   3. a second baseline run with another seed (nothing changed: what "no change" looks like);
#   4. rolleval compare of baseline vs candidate (with an HTML page) and of the two baselines.
# Asserted (scripts/quickstart_check.py gives the chance of each failing by chance, about
# 1e-14): copycolors regresses and the overall verdict is regression (exit 1). Everything
# else (common_knowledge, the A/A comparison) is shown, not asserted: rollouts differ across
# CPUs and llama.cpp builds, and those outcomes are within chance of either verdict.
# Quiet by default: a progress line a minute, then the summary last. The full reports are in
# $OUT/*.log and $OUT/compare*.txt; VERBOSE=1 prints them too.
set -euo pipefail
cd "$(dirname "$0")/.."
VERBOSE=${VERBOSE:-0}
start=$(date +%s)
if [ "$VERBOSE" = 1 ]; then bash scripts/setup.sh; else
  echo "quickstart: setting up .venv (scripts/setup.sh; its output is shown only if it fails)" >&2
  bash scripts/setup.sh > /tmp/rolleval-setup.$$.log 2>&1 || { cat /tmp/rolleval-setup.$$.log >&2; exit 1; }
  rm -f /tmp/rolleval-setup.$$.log
fi
OUT=${OUT:-runs/quickstart}
LIMIT=${LIMIT:-100}
if [ -e "$OUT" ]; then
  old="$OUT.old-$(date +%Y%m%d-%H%M%S)"
  echo "quickstart: $OUT exists; moving it to $old (nothing is deleted)" >&2
  mv "$OUT" "$old"
fi
RUN=(.venv/bin/rolleval run --model local --task copycolors --task common_knowledge
     --limit "$LIMIT" -n 8 --concurrency 2)
mkdir -p "$OUT"
# The three runs are independent (each serves its own llama.cpp process), so they run side
# by side; each writes its report to its log.
echo "quickstart: three runs side by side (logs in $OUT/*.log): baseline (default serving)," \
     "candidate (same weights, rope_freq_scale 0.8), baseline-seed1 (baseline again, seed 1)" >&2
"${RUN[@]}" --seed 0 --out "$OUT/baseline" > "$OUT/baseline.log" 2>&1 &
base_pid=$!
"${RUN[@]}" --seed 0 --server-option rope_freq_scale=0.8 --out "$OUT/candidate" > "$OUT/candidate.log" 2>&1 &
cand_pid=$!
"${RUN[@]}" --seed 1 --out "$OUT/baseline-seed1" > "$OUT/baseline-seed1.log" 2>&1 &
aa_pid=$!
trap 'kill $base_pid $cand_pid $aa_pid 2>/dev/null || true' INT TERM
progress() { grep -o "^rollouts [0-9]*/[0-9]*" "$OUT/$1.log" 2>/dev/null | tail -n 1 || true; }
while kill -0 "$base_pid" 2>/dev/null || kill -0 "$cand_pid" 2>/dev/null || kill -0 "$aa_pid" 2>/dev/null; do
  sleep 60
  echo "quickstart: $(( ($(date +%s) - start) / 60 )) min: baseline $(progress baseline) | candidate $(progress candidate)" \
       "| baseline-seed1 $(progress baseline-seed1)" >&2
done
rcs=()
for pid in "$base_pid" "$cand_pid" "$aa_pid"; do
  rc=0; wait "$pid" || rc=$?; rcs+=("$rc")
done
trap - INT TERM
if [ "$VERBOSE" = 1 ]; then
  for side in baseline candidate baseline-seed1; do
    echo; echo "=== $side ==="; grep -v "^rollouts [0-9]" "$OUT/$side.log" || true
  done
fi
if [ "${rcs[*]}" != "0 0 0" ]; then
  echo "quickstart: a run failed (exit codes baseline, candidate, baseline-seed1: ${rcs[*]}); see $OUT/*.log" >&2
  exit 1
fi
set +e
.venv/bin/rolleval compare "$OUT/baseline" "$OUT/candidate" \
  --output "$OUT/compare.json" --html "$OUT/compare.html" > "$OUT/compare.txt"
rc=$?
.venv/bin/rolleval compare "$OUT/baseline" "$OUT/baseline-seed1" \
  --output "$OUT/compare-aa.json" --html "$OUT/compare-aa.html" > "$OUT/compare-aa.txt"
aa_rc=$?
set -e
if [ "$VERBOSE" = 1 ]; then
  echo; echo "=== rolleval compare baseline candidate ==="; cat "$OUT/compare.txt"
  echo; echo "=== rolleval compare baseline baseline-seed1 ==="; cat "$OUT/compare-aa.txt"
fi
check=0
.venv/bin/python scripts/quickstart_check.py "$OUT/compare.json" "$rc" "$OUT/compare-aa.json" "$aa_rc" \
  "$(( $(date +%s) - start ))" "$OUT" || check=$?
exit "$check"
