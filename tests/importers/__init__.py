"""Tests of rolleval._importers: imports of other harnesses' logs."""
