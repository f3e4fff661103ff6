"""Tests of rolleval.testing: the test server and the synthetic run writer."""
