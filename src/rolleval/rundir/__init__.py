"""The run directory: its files, the writer that creates and appends to them, the write
lock, and the columnar reader reports use (``docs/run-format.md``).

Importers and user code write runs through :class:`RunWriter`; ``rolleval.writer`` is the
older import path of the same two classes.
"""

from .._public import publish
from ._show import show_records
from ._writer import RunWriter, TaskWriter

__all__ = ["RunWriter", "TaskWriter", "show_records"]

publish(__name__, globals(), __all__)
