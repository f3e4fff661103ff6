"""Tests of rolleval.stats: intervals, tests, power and confidence sequences."""
