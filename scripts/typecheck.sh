#!/usr/bin/env bash
# Type-check the package with mypy in strict mode (the package ships py.typed).
# Settings live in pyproject.toml ([tool.mypy]): files, and the few third-party modules
# without type information. Extra arguments go to mypy. Exit 0 when there is no error.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
[ -x "$PY" ] || PY=python
exec "$PY" -m mypy "$@"
