"""The run writer, under its older import path: ``rolleval.rundir`` is its home."""

from .rundir import RunWriter, TaskWriter

__all__ = ["RunWriter", "TaskWriter"]
