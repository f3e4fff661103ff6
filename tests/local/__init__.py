"""Tests of rolleval._local: the embedded model and any local GGUF file."""
