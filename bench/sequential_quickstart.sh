#!/usr/bin/env bash
# The quickstart's regression (issue 24, item 6) with --until-decided: the embedded model
# (SmolLM2-135M, llama.cpp on 127.0.0.1) on copycolors, a baseline run of LIMIT problems x 8
# rollouts, then the candidate (the same weights mis-served with rope_freq_scale 0.8) run
# sequentially against it. Prints the rollouts the sequential run used against the fixed
# design's LIMIT x 8. Not a test: the stopping point depends on the rollouts drawn.
#   bash bench/sequential_quickstart.sh            (OUT=runs/sequential-quickstart LIMIT=100)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/sequential-quickstart}
LIMIT=${LIMIT:-100}
if [ -e "$OUT" ]; then
  echo "sequential-quickstart: $OUT exists; move it away first (nothing is deleted)" >&2
  exit 2
fi
mkdir -p "$OUT"
RUN=(.venv/bin/rolleval run --model local --task copycolors --limit "$LIMIT" -n 8 --concurrency 2 --no-progress)
"${RUN[@]}" --seed 0 --out "$OUT/baseline" > "$OUT/baseline.log" 2>&1
set +e
"${RUN[@]}" --seed 0 --server-option rope_freq_scale=0.8 --out "$OUT/candidate" \
  --baseline "$OUT/baseline" --until-decided > "$OUT/candidate.log" 2>&1
rc=$?
.venv/bin/rolleval compare "$OUT/baseline" "$OUT/candidate" > "$OUT/compare.txt" 2>&1
crc=$?
set -e
cat "$OUT/compare.txt"
.venv/bin/python - "$OUT" "$LIMIT" "$rc" "$crc" <<'PY'
import json, sys
out, limit, rc, crc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
seq = json.load(open(f"{out}/candidate/manifest.json"))["sequential"]
task = seq["tasks"]["copycolors"]
segs = json.load(open(f"{out}/candidate/manifest.json"))["segments"]
used = sum(s["requested"] for s in segs)
print(
    f"sequential-quickstart: copycolors: stopped after {task['stopped_after']} of {limit} problems: "
    f"{task['verdict']} (run exit {rc}, compare exit {crc}); rollouts {used} against the fixed "
    f"design's {limit * 8} ({used / (limit * 8):.0%}); last sequence "
    f"[{task['looks'][-1]['lower']:+.4f}, {task['looks'][-1]['upper']:+.4f}], "
    f"effect {task['looks'][-1]['effect']:+.4f}"
)
PY
