"""Tests of rolleval.grading: every grader, the worker pool and the code sandbox."""
