"""Tests of rolleval.client: the HTTP client, its faults and the prompt log-prob probe."""
