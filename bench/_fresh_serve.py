"""rolleval's embedded server with the KV-cache prefix reuse turned off (a diagnostic).

``Llama.generate`` reuses the longest common token prefix of the previous request's KV
cache; here every request starts from an empty context (``n_tokens = 0``), so each prompt
is evaluated from scratch. Run as ``PYTHONPATH=bench python -m _fresh_serve <args>``
(``bench/realmodel_calibration.py`` does); everything else is ``rolleval._local._serve``.
"""

from __future__ import annotations

from typing import Any

import llama_cpp

from rolleval._local import _serve

_original = llama_cpp.Llama.generate


def _fresh_generate(self: Any, tokens: Any, *args: Any, **kwargs: Any) -> Any:
    self.n_tokens = 0  # no prefix match: generate() resets and evaluates the whole prompt
    return _original(self, tokens, *args, **kwargs)


llama_cpp.Llama.generate = _fresh_generate  # type: ignore[method-assign]

if __name__ == "__main__":  # pragma: no cover - the server process
    _serve.main()
