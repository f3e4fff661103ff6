#!/usr/bin/env bash
# README command (2): install everything, then lint, type-check and run the whole test suite
# with its coverage floor ([tool.coverage.report] fail_under in pyproject.toml).
# Extra arguments go to pytest (e.g. scripts/test.sh -k metrics).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests bench
.venv/bin/ruff format --check src tests bench
bash scripts/typecheck.sh
# The coverage floor applies to the whole suite; a run narrowed by arguments skips it.
cov=()
[ "$#" -eq 0 ] && cov=(--cov=rolleval --cov-report=term:skip-covered)
set +e
.venv/bin/python -m pytest "${cov[@]}" "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "test: pytest collected no tests" >&2
  exit 1
fi
exit "$rc"
