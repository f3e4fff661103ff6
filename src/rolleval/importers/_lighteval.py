"""lighteval ``--save-details`` output (placeholder until the real files are read)."""

from __future__ import annotations

from pathlib import Path

from ._base import ImportedRun


class LightevalReader:
    name = "lighteval"

    def looks_like(self, path: Path) -> bool:
        return False

    def read(self, path: Path, *, regrade: str | None) -> ImportedRun:
        raise NotImplementedError
