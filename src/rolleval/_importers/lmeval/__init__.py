"""The lm-evaluation-harness importer: its samples reader and generic path (``_samples``),
the column path for chunks of common-shape lines (``_strict``) and the worker processes that
convert large files (``_parallel``). Private."""
