"""Tests of rolleval.drift: per-token drift, its summary and the drift command."""
