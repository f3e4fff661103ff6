"""Tests of rolleval.rundir: the run directory's files, writer, lock and upgrade."""
