"""The lm-evaluation-harness importer: its samples reader (``_samples``), the typed-line and
column fast paths (``_fast``, ``_strict``, with the optional C reader ``_c``) and the worker
processes that convert large files (``_parallel``). Private."""
