#!/usr/bin/env bash
# README command (2): install everything and run lint + the whole test suite.
# Extra arguments go to pytest (e.g. scripts/test.sh -k metrics).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests bench
.venv/bin/ruff format --check src tests bench
set +e
.venv/bin/python -m pytest "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "test: pytest collected no tests" >&2
  exit 1
fi
exit "$rc"
