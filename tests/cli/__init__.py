"""Tests of rolleval._cli: the commands through the real console entry point, end to end."""
