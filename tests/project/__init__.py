"""Whole-project checks: docs, import graph, function size, public API, start-up cost."""
