"""Tests of rolleval.records: the record models and their line structs."""
