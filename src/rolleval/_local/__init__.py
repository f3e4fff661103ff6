"""The embedded model: the launcher that serves a GGUF file with llama.cpp on 127.0.0.1
(``_launcher``) and the server it starts, llama-cpp-python's with correct prompt log-probs
(``_serve``, run as ``python -m rolleval._local._serve``). Private."""
