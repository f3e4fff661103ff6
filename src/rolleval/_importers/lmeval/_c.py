"""The importers' optional C extension, or None.

``_strict_c`` (``_strict_c.c``) is built by setup.py where a C compiler is available; without
it, or with the environment variable ``ROLLEVAL_NO_C=1`` (to compare, or to rule it out),
the importers run their Python code, which writes the same bytes, more slowly.
"""

from __future__ import annotations

import os
from types import ModuleType

__all__ = ["strict_c"]

strict_c: ModuleType | None = None
if os.environ.get("ROLLEVAL_NO_C", "") in ("", "0"):
    try:
        from . import _strict_c as strict_c  # type: ignore[attr-defined, no-redef]
    except ImportError:  # built without a C compiler
        strict_c = None
