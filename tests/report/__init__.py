"""Tests of rolleval._report: reports and their renderings."""
