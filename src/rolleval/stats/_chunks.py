"""Chunking of (rows x T) random draws, shared by the bootstrap and the sign-flip test."""

from __future__ import annotations


def rows_per_chunk(n_columns: int, chunk_bytes: int) -> int:
    """Rows of ``n_columns`` 8-byte values per chunk: an even number, at least 2.

    numpy's ``Generator.integers`` keeps the unused half of a 64-bit draw in the
    bit generator between calls, so any chunking gives the same stream as one big
    draw. An even element count per chunk keeps that true even for a bit generator
    that dropped the half-word at the end of a call.
    """
    rows = chunk_bytes // (8 * n_columns)
    return max(2, rows - rows % 2)
