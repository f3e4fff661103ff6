#!/usr/bin/env bash
# A second demo (issue 22): a real quantized candidate, judged token by token and by accuracy.
#   1. the shipped Q4_1 SmolLM2-135M is requantized to Q4_0 with llama.cpp's own quantizer
#      (llama_cpp.llama_model_quantize, allow_requantize; about a second);
#   2. rolleval drift: the baseline continues each ARC-Easy prompt (sampled, seeded), then
#      both models score prompt and continuation token by token (each .gguf served by
#      rolleval's embedded server, scored exactly from the full vocabulary): mean KL
#      divergence, top-1 agreement, delta NLL, verdict, and the texts needed to decide;
#   3. accuracy beside it: 0-shot ARC-Easy log-likelihood choice (arc_easy_rc, one
#      deterministic rollout per problem) on both models, rolleval compare, and rolleval
#      plan --candidate (the paired variance of the per-problem differences, estimable at
#      n = 1) for the problems the accuracy comparison needs to see the observed drop.
# Nothing is asserted: the figures are shown (docs/contract.md, "Drift", lists measured ones).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
OUT=${OUT:-runs/quickstart-drift}
LIMIT=${LIMIT:-30}
if [ -e "$OUT" ]; then
  old="$OUT.old-$(date +%Y%m%d-%H%M%S)"
  echo "quickstart_drift: $OUT exists; moving it to $old (nothing is deleted)" >&2
  mv "$OUT" "$old"
fi
mkdir -p "$OUT"
PY=.venv/bin/python
BASE=$($PY -c "from rolleval._local._launcher import default_model_path as d; print(d())")
CAND="$OUT/SmolLM2-135M-Instruct.Q4_0.gguf"
$PY - "$BASE" "$CAND" <<'EOF'
import ctypes, sys, time
import llama_cpp
params = llama_cpp.llama_model_quantize_default_params()
params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0
params.allow_requantize = True
t = time.perf_counter()
rc = llama_cpp.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), ctypes.byref(params))
if rc != 0:
    sys.exit(f"quantizing failed ({rc})")
print(f"quickstart_drift: requantized Q4_1 -> Q4_0 in {time.perf_counter() - t:.1f}s", file=sys.stderr)
EOF

echo "quickstart_drift: rolleval drift on $LIMIT ARC-Easy texts (two llama.cpp processes)" >&2
set +e
.venv/bin/rolleval drift --baseline "$BASE" --candidate "$CAND" --task arc_easy --limit "$LIMIT" \
  --max-tokens "${MAX_TOKENS:-32}" --out "$OUT/drift" --html "$OUT/drift.html" | tee "$OUT/drift.txt"
drift_rc=${PIPESTATUS[0]}
set -e

echo "quickstart_drift: accuracy on $LIMIT arc_easy_rc problems, baseline then candidate" >&2
.venv/bin/rolleval run --model local --task arc_easy_rc --limit "$LIMIT" -n 1 --concurrency 2 \
  --server-option n_threads=2 --out "$OUT/acc-baseline" --no-progress > "$OUT/acc-baseline.log" 2>&1
PORT=$($PY -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
$PY -m rolleval._local._serve --model "$CAND" --model_alias smollm2-q4_0 --host 127.0.0.1 \
  --port "$PORT" --n_ctx 2048 --n_threads 2 > "$OUT/candidate-server.log" 2>&1 &
server_pid=$!
trap 'kill $server_pid 2>/dev/null || true' EXIT INT TERM
for _ in $(seq 1 240); do
  if $PY -c "import httpx,sys; sys.exit(httpx.get('http://127.0.0.1:$PORT/v1/models', timeout=2).status_code != 200)" 2>/dev/null; then
    break
  fi
  sleep 1
done
.venv/bin/rolleval run --endpoint "http://127.0.0.1:$PORT/v1" --model smollm2-q4_0 \
  --task arc_easy_rc --limit "$LIMIT" -n 1 --concurrency 2 --out "$OUT/acc-candidate" \
  --no-progress > "$OUT/acc-candidate.log" 2>&1
kill $server_pid 2>/dev/null || true
set +e
.venv/bin/rolleval compare "$OUT/acc-baseline" "$OUT/acc-candidate" --html "$OUT/compare.html" \
  --output "$OUT/compare.json" | tee "$OUT/compare.txt"
compare_rc=${PIPESTATUS[0]}
set -e
# accuracy: plan for the observed drop (when it exceeds compare's threshold, 0.02)
EFFECT=$($PY - "$OUT/compare.json" <<'EOF'
import json, sys
task = json.load(open(sys.argv[1]))["tasks"][0]
drop = -task["effect"] if task["effect"] is not None else None
print(f"{drop:.6f}" if drop is not None and drop > 0.02 else "none")
EOF
)
if [ "$EFFECT" != "none" ]; then
  .venv/bin/rolleval plan "$OUT/acc-baseline" --candidate "$OUT/acc-candidate" --effect "$EFFECT" \
    --format json > "$OUT/plan.json"
fi
echo
$PY - "$OUT" "$EFFECT" <<'EOF'
import json, os, sys
out, effect = sys.argv[1], sys.argv[2]
task = json.load(open(os.path.join(out, "compare.json")))["tasks"][0]
drift = json.load(open(os.path.join(out, "drift", "drift.json")))
acc = (
    f"accuracy: pass@1 change {task['effect']:+.4f} on {task['n_problems']} problems "
    f"(moved on {task['n_moved']}), verdict {task['verdict']}; "
)
if effect == "none":
    acc += (
        "the observed drop is not above compare's threshold 0.02, so no number of problems "
        "makes accuracy call this change a regression"
    )
else:
    plan = next(iter(json.load(open(os.path.join(out, "plan.json")))["tasks"].values()))
    need = plan.get("required_problems")
    acc += (
        f"problems needed to call a drop of {float(effect):.3f} a regression (80% power): "
        + (str(need) if need is not None else f"N/A ({plan.get('reason')})")
    )
plan = drift.get("planning") or {}
iv = drift["intervals"]["mean_kld"]
need = plan.get("texts_needed")
dr = (
    f"drift: mean KLD {drift['mean_kld']:.4f} nats [{iv['low']:.4f}, {iv['high']:.4f}] on "
    f"{drift['n_texts']} texts ({drift['n_tokens']} tokens), verdict {drift['verdict']}; "
    "texts needed to decide (80% power): "
    + (str(need) if need is not None else f"N/A ({plan.get('reason')})")
)
print("quickstart_drift: " + acc)
print("quickstart_drift: " + dr)
EOF
echo "quickstart_drift: drift exit $drift_rc (1 = KL divergence significantly above the" \
     "threshold); accuracy compare exit $compare_rc (3 = inconclusive); pages:" \
     "$OUT/drift.html, $OUT/compare.html"
