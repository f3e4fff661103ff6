#!/usr/bin/env bash
# README command (1): set everything up on a fresh machine, then show the whole product on
# the embedded model (SmolLM2-135M served by llama.cpp on 127.0.0.1):
#   1. a baseline run on copycolors and common_knowledge (8 rollouts per problem);
#   2. a candidate run of the same weights mis-served with rope_freq_scale 0.8 (a wrong
#      position scaling, the kind of mistake made when re-serving for longer context);
#   3. rolleval compare, with an HTML page.
# Expected: a regression on copycolors, no established change on common_knowledge, overall
# verdict regression. The script fails loudly if that does not hold.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
OUT=${OUT:-runs/quickstart}
LIMIT=${LIMIT:-100}
if [ -e "$OUT" ]; then
  old="$OUT.old-$(date +%Y%m%d-%H%M%S)"
  echo "quickstart: $OUT exists; moving it to $old (nothing is deleted)" >&2
  mv "$OUT" "$old"
fi
RUN=(.venv/bin/rolleval run --model local --task copycolors --task common_knowledge
     --limit "$LIMIT" -n 8 --concurrency 2 --seed 0)
mkdir -p "$OUT"
# The two runs are independent (each serves its own llama.cpp process, one core each), so
# they run side by side; each prints its report when done.
echo "quickstart: baseline run (embedded model, default serving) and candidate run (same weights," \
     "served with rope_freq_scale 0.8), side by side; logs in $OUT/*.log" >&2
"${RUN[@]}" --out "$OUT/baseline" > "$OUT/baseline.log" 2>&1 &
base_pid=$!
"${RUN[@]}" --server-option rope_freq_scale=0.8 --out "$OUT/candidate" > "$OUT/candidate.log" 2>&1 &
cand_pid=$!
trap 'kill $base_pid $cand_pid 2>/dev/null || true' INT TERM
while kill -0 "$base_pid" 2>/dev/null || kill -0 "$cand_pid" 2>/dev/null; do
  sleep 15
  b=$(grep "^rollouts" "$OUT/baseline.log" 2>/dev/null | tail -n 1 || true)
  c=$(grep "^rollouts" "$OUT/candidate.log" 2>/dev/null | tail -n 1 || true)
  echo "quickstart: baseline ${b:-starting...} | candidate ${c:-starting...}" >&2
done
base_rc=0; cand_rc=0
wait "$base_pid" || base_rc=$?
wait "$cand_pid" || cand_rc=$?
trap - INT TERM
for side in baseline candidate; do
  echo; echo "=== $side ==="; grep -v "^rollouts [0-9]" "$OUT/$side.log" || true
done
if [ "$base_rc" -ne 0 ] || [ "$cand_rc" -ne 0 ]; then
  echo "quickstart: a run failed (baseline exit $base_rc, candidate exit $cand_rc); see $OUT/*.log" >&2
  exit 1
fi
set +e
.venv/bin/rolleval compare "$OUT/baseline" "$OUT/candidate" \
  --output "$OUT/compare.json" --html "$OUT/compare.html"
rc=$?
set -e
.venv/bin/python - "$OUT/compare.json" "$rc" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))
rc = int(sys.argv[2])
verdicts = {t["task"]: t["verdict"] for t in res["tasks"]}
problems = []
if verdicts.get("copycolors") != "regression":
    problems.append(f"copycolors verdict is {verdicts.get('copycolors')!r}, expected 'regression'")
if verdicts.get("common_knowledge") in ("regression", "improvement"):
    problems.append(f"common_knowledge verdict is {verdicts['common_knowledge']!r}, expected no established change")
if res["verdict"] != "regression" or rc != 1:
    problems.append(f"overall verdict {res['verdict']!r} (exit {rc}), expected 'regression' (exit 1)")
if problems:
    print("quickstart: EXPECTATION FAILED: " + "; ".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"\nquickstart: as expected: {verdicts} -> overall {res['verdict']} (rolleval compare exit {rc})")
PY
echo "quickstart: HTML report $OUT/compare.html; run directories $OUT/baseline and $OUT/candidate"
