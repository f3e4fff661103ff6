"""Tests of rolleval.tasks: built-in and user-file tasks, and log-likelihood choice."""
