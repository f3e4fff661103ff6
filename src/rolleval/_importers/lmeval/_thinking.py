"""lm-eval's ``think_end_token`` model argument: the thinking delimiters of an imported task.

lm-eval (0.4.9.1 and later; ``hf``, ``vllm``, ``sglang``, the OpenAI-compatible chat
backends) accepts ``think_end_token`` among the model arguments and strips every generation
up to the **last** occurrence of it *before* it is scored and logged: ``resps`` and
``filtered_resps`` hold the text after the token (left-stripped), and the thought is gone.
With no end token in a generation (a thought cut at the budget, or by a stop sequence) lm-eval
keeps the whole text, thought included, and scores it as the answer (lm-eval #3382).

So, when a results file's ``config.model_args`` names the token:

* the task's thinking delimiters become ``[open, think_end_token]`` (the opening tag that
  matches a closing tag: ``</think>`` -> ``<think>``, ``[/THINK]`` -> ``[THINK]``; otherwise
  rolleval's default ``<think>``), so the contract's rules split every stored text at import
  and at ``--regrade``;
* a text that still holds the end token (lm-eval did not strip it) splits there;
* a text that opens a thought and never closes it is the unclosed thought lm-eval kept
  whole: no answer, whatever lm-eval scored;
* any other text is the answer; its thought, stripped by lm-eval, is absent (N/A), never
  reconstructed. A thought opened by the chat template and never closed carries no opening
  tag and cannot be told from an answer in lm-eval's log; the import says so.

A token id (``hf`` with an integer ``think_end_token``) has no text rolleval can split at:
the default delimiters stay, and the import says so.
"""

from __future__ import annotations

import re
from typing import Any

from ...records import DEFAULT_THINKING

__all__ = ["think_end_token", "thinking_pair"]

_CLOSING_TAG = re.compile(r"</([^<>/\s]+)>")
_CLOSING_BRACKET = re.compile(r"\[/([^\[\]/\s]+)\]")


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def think_end_token(config: Any) -> str | int | None:
    """``think_end_token`` of a results file's ``config``: ``model_args`` is lm-eval's
    ``k=v,k=v`` string (as typed on the command line) or a mapping. A string of digits is a
    token id (``hf``). None when absent or empty."""
    if not isinstance(config, dict):
        return None
    args = config.get("model_args")
    value: Any = None
    if isinstance(args, dict):
        value = args.get("think_end_token")
    elif isinstance(args, str):
        for part in args.split(","):
            key, sep, rest = part.partition("=")
            if sep and key.strip() == "think_end_token":
                value = _unquote(rest)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value:
        return int(value) if value.isdigit() else value
    return None


def thinking_pair(end: str) -> tuple[str, str] | None:
    """``(open, end)``: the opening tag matching a closing tag, else the default opening;
    None for an end token that is the default opening itself (no pair to split by)."""
    if m := _CLOSING_TAG.fullmatch(end):
        return (f"<{m[1]}>", end)
    if m := _CLOSING_BRACKET.fullmatch(end):
        return (f"[{m[1]}]", end)
    opening = DEFAULT_THINKING[0]
    return (opening, end) if opening != end else None
