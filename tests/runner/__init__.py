"""Tests of rolleval._runner: rolleval run, its config, plan, resume and regrade."""
