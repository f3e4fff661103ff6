"""Tests of rolleval.compare: the paired comparison, the verdict, gate, plan and baseline."""
