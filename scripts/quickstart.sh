#!/usr/bin/env bash
# README command (1): set everything up on a fresh machine and run a small real evaluation
# of the embedded model (SmolLM2-135M on a local llama.cpp server), then print the report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
OUT=${OUT:-runs/quickstart}
if [ -e "$OUT" ]; then
  echo "quickstart: $OUT exists; moving it to $OUT.old-$(date +%s)" >&2
  mv "$OUT" "$OUT.old-$(date +%s)"
fi
.venv/bin/rolleval run --model local --task arc_easy --task gsm8k -n 4 --limit 12 \
  --max-tokens 192 --concurrency 2 --out "$OUT"
