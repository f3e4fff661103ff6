#!/usr/bin/env bash
# A second demo (issue 22): a real quantized candidate, judged token by token and by accuracy.
#   1. the shipped Q4_1 SmolLM2-135M is requantized to Q4_0 with llama.cpp's own quantizer
#      (llama_cpp.llama_model_quantize, allow_requantize; about a second);
#   2. rolleval drift: both models score the same ARC-Easy prompts and reference answers
#      token by token (each .gguf served by rolleval's embedded server, scored exactly from
#      the full vocabulary): mean KL divergence, top-1 agreement, delta NLL, verdict;
#   3. accuracy beside it: 0-shot ARC-Easy log-likelihood choice (arc_easy_rc) on both
#      models, then rolleval compare, and rolleval plan for the problems the accuracy
#      comparison would need to see the change.
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
  --out "$OUT/drift" --html "$OUT/drift.html" | tee "$OUT/drift.txt"
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
  | tee "$OUT/compare.txt"
compare_rc=${PIPESTATUS[0]}
.venv/bin/rolleval plan "$OUT/acc-baseline" --candidate "$OUT/acc-candidate" | tee "$OUT/plan.txt"
set -e
echo
echo "quickstart_drift: drift verdict exit $drift_rc (1 = KL divergence significantly above" \
     "the threshold) on $LIMIT texts; accuracy compare exit $compare_rc on $LIMIT problems" \
     "(3 = inconclusive); pages: $OUT/drift.html, $OUT/compare.html"
