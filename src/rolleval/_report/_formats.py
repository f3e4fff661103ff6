"""The output formats of ``report``, ``compare`` and ``gate``, in a module of their own so
that the CLI declares its ``--format`` options without loading the renderers."""

from __future__ import annotations

__all__ = ["FORMATS"]

FORMATS = ("text", "json", "md", "github")
