"""Tests of rolleval.metrics: the per-problem estimators and the suite summaries."""
