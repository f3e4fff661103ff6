"""LLM-judged answers (``type: judge``): a second OpenAI-compatible endpoint grades.

For each gradable rollout the judge model gets one chat message, the grader's ``prompt``
with ``{question}``, ``{reference}`` and ``{answer}`` replaced (the problem's last prompt
message, the gold answer(s) joined by `` | ``, the rollout's text stripped), and must reply
with a line ``VERDICT: CORRECT`` or ``VERDICT: INCORRECT`` (the last such line counts).

* ``correct``: the judge's decision; ``extracted``: the stripped answer (``None`` for an
  empty reply, which is wrong without asking the judge); clusters group identical answers.
* ``judge_raw``: the judge's full reply. ``grader_usage``: the judge's token usage, which
  ``profile.json`` sums apart from the candidate's (``grader_tokens``).
* A judge failure (connection, HTTP error after retries, a reply without a ``VERDICT:`` line) is a
  grader error, never a wrong answer.
* The judge's model, prompt and sampling (temperature, max_tokens) are part of the
  grader's version, so ``grader_identity`` changes with them and ``compare`` refuses to
  compare runs judged differently (exit 2). The endpoint URL is not: the same judge model
  served elsewhere is the same judge.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from ..errors import UsageError
from ._protocol import (
    Grader,
    Judgement,
    check_rollouts,
    check_spec_keys,
    describe_exception,
)

__all__ = ["DEFAULT_JUDGE_PROMPT", "JudgeGrader", "parse_judge_reply"]

DEFAULT_JUDGE_PROMPT = (
    "You are grading an answer to a question against the reference answer.\n\n"
    "Question:\n{question}\n\nReference answer:\n{reference}\n\n"
    "Candidate answer:\n{answer}\n\n"
    "Is the candidate's final answer equivalent to the reference answer? Reply with one "
    "line: VERDICT: CORRECT or VERDICT: INCORRECT."
)
_LOGIC_VERSION = "1"
_DECISION_LINE = re.compile(r"VERDICT\s*:\s*\**\s*(CORRECT|INCORRECT)\b", re.IGNORECASE)
_RETRYABLE = {408, 409, 429, 500, 502, 503, 504}


def parse_judge_reply(reply: str) -> bool | None:
    """``True``/``False`` from the last ``VERDICT: CORRECT|INCORRECT`` in ``reply``; ``None``
    when there is none."""
    found = _DECISION_LINE.findall(reply or "")
    return None if not found else found[-1].upper() == "CORRECT"


class JudgeError(Exception):
    """The judge could not decide (the reply, when there is one, is kept)."""

    def __init__(self, message: str, reply: str | None = None, usage: dict[str, int] | None = None):
        super().__init__(message)
        self.reply = reply
        self.usage = usage


class JudgeGrader(Grader):
    """Grades by asking a judge model (rules in the module docstring)."""

    id: ClassVar[str] = "judge"
    needs_process: ClassVar[bool] = True  # blocking HTTP: never in the event loop's thread
    wants_question: ClassVar[bool] = True

    def __init__(
        self,
        endpoint: str,
        model: str,
        *,
        prompt: str = DEFAULT_JUDGE_PROMPT,
        temperature: float = 0.0,
        max_tokens: int = 256,
        api_key_env: str | None = None,
        timeout_s: float = 60.0,
        retries: int = 2,
    ) -> None:
        if not isinstance(endpoint, str) or not endpoint.startswith(("http://", "https://")):
            raise UsageError(
                f"judge grader needs endpoint, an http(s) base URL such as "
                f"http://127.0.0.1:8001/v1; got {endpoint!r}"
            )
        if not isinstance(model, str) or not model:
            raise UsageError(f"judge grader needs model, the judge's model name; got {model!r}")
        if not isinstance(prompt, str) or "{answer}" not in prompt:
            raise UsageError("judge grader option 'prompt' must be a string containing {answer}")
        if (
            isinstance(temperature, bool)
            or not isinstance(temperature, (int, float))
            or temperature < 0
        ):
            raise UsageError(f"judge grader option 'temperature' must be >= 0; got {temperature!r}")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise UsageError(f"judge grader option 'max_tokens' must be >= 1; got {max_tokens!r}")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise UsageError(f"judge grader option 'retries' must be >= 0; got {retries!r}")
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or timeout_s <= 0:
            raise UsageError(f"judge grader option 'timeout_s' must be > 0; got {timeout_s!r}")
        self.endpoint = endpoint.rstrip("/")
        self.model = model
        self.prompt = prompt
        self.temperature = float(temperature)
        self.max_tokens = max_tokens
        self.api_key_env = api_key_env
        self.timeout_s = float(timeout_s)
        self.retries = retries
        self.spec = {
            "type": self.id,
            "endpoint": self.endpoint,
            "model": model,
            "prompt": prompt,
            "temperature": self.temperature,
            "max_tokens": max_tokens,
            "api_key_env": api_key_env,
            "timeout_s": self.timeout_s,
            "retries": retries,
        }
        judge = f"{model}\x00{prompt}\x00{self.temperature!r}\x00{max_tokens}"
        self.version = f"{_LOGIC_VERSION}+{hashlib.sha256(judge.encode()).hexdigest()[:12]}"
        self.problem_timeout_s = self.timeout_s * (retries + 1) + 30.0  # type: ignore[misc]

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> JudgeGrader:
        """Build from ``{"type": "judge", "endpoint": URL, "model": NAME, ...}``."""
        keys = (
            "endpoint",
            "model",
            "prompt",
            "temperature",
            "max_tokens",
            "api_key_env",
            "timeout_s",
            "retries",
        )
        check_spec_keys(spec, keys)
        options = {k: spec[k] for k in keys[2:] if spec.get(k) is not None}
        return cls(spec.get("endpoint"), spec.get("model"), **options)  # type: ignore[arg-type]

    def check_available(self) -> None:
        if self.api_key_env and not os.environ.get(self.api_key_env):
            raise UsageError(
                f"judge grader api_key_env: environment variable {self.api_key_env} is not set "
                "or empty; export the judge's API key there"
            )

    def extract(self, text: str) -> str | None:
        """The answer as the judge sees it: the text, stripped (``None`` when empty)."""
        return text.strip() or None

    def render(self, question: str, reference: Any, answer: str) -> str:
        gold = reference if isinstance(reference, str) else " | ".join(map(str, reference or []))
        return (
            self.prompt.replace("{question}", question)
            .replace("{reference}", gold)
            .replace("{answer}", answer)
        )

    def ask(self, message: str) -> tuple[bool, str, dict[str, int] | None]:
        """``(correct, reply, usage)`` from the judge; :class:`JudgeError` when it fails."""
        import httpx

        headers = {}
        if self.api_key_env:
            headers["authorization"] = "Bearer " + os.environ.get(self.api_key_env, "")
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": message}],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": 0,
        }
        error = "no attempt"
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(0.5 * 2**attempt, 5.0))
            try:
                response = httpx.post(
                    self.endpoint + "/chat/completions",
                    json=body,
                    headers=headers,
                    timeout=self.timeout_s,
                )
            except httpx.HTTPError as exc:
                error = f"judge request failed: {describe_exception(exc)}"
                continue
            if response.status_code != 200:
                error = f"judge answered HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code in _RETRYABLE:
                    continue
                break
            try:
                data = response.json()
                reply = data["choices"][0]["message"]["content"]
                if not isinstance(reply, str):
                    raise TypeError("content is not a string")
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                error = f"judge reply unreadable: {describe_exception(exc)}"
                continue
            raw_usage = data.get("usage") if isinstance(data, dict) else None
            usage = None
            if isinstance(raw_usage, dict):
                usage = {
                    k: raw_usage[k]
                    for k in ("prompt_tokens", "completion_tokens")
                    if isinstance(raw_usage.get(k), int) and not isinstance(raw_usage.get(k), bool)
                }
            correct = parse_judge_reply(reply)
            if correct is None:
                raise JudgeError(
                    "judge reply has no 'VERDICT: CORRECT|INCORRECT' line", reply, usage
                )
            return correct, reply, usage
        raise JudgeError(error)

    def grade_problem(
        self, reference: Any, rollouts: Sequence[tuple[int, str]]
    ) -> dict[int, Judgement]:
        """Judge every rollout (concurrently, up to 8 at a time). ``reference`` is
        ``{"question": ..., "reference": ...}`` (the runner passes the question to graders
        with ``wants_question``) or the bare gold answer (the question is then empty)."""
        ordered = check_rollouts(rollouts)
        if isinstance(reference, dict):
            question, gold = str(reference.get("question") or ""), reference.get("reference")
        else:
            question, gold = "", reference
        answers = {index: self.extract(text) for index, text in ordered}
        asked = [i for i, a in answers.items() if a is not None]

        def one(index: int) -> tuple[Any, ...]:
            try:
                return ("ok", *self.ask(self.render(question, gold, answers[index] or "")))
            except JudgeError as exc:
                return ("error", str(exc), exc.reply, exc.usage)
            except Exception as exc:  # a grader bug: one rollout's error, not all
                return ("error", describe_exception(exc), None, None)

        with ThreadPoolExecutor(max_workers=max(1, min(8, len(asked)))) as ex:
            results = dict(zip(asked, ex.map(one, asked), strict=True))
        judgements: dict[int, Judgement] = {}
        labels: dict[str, int] = {}
        for index, _text in ordered:
            answer = answers[index]
            if answer is None:
                judgements[index] = Judgement(extracted=None, correct=False, cluster=None)
                continue
            kind, *rest = results[index]
            if kind == "error":
                message, reply, usage = rest
                judgements[index] = Judgement(
                    extracted=answer,
                    correct=None,
                    cluster=None,
                    grader_error=message,
                    judge_raw=reply,
                    grader_usage=usage,
                )
                continue
            correct, reply, usage = rest
            judgements[index] = Judgement(
                extracted=answer,
                correct=correct,
                cluster=labels.setdefault(answer, index),
                judge_raw=reply,
                grader_usage=usage,
            )
        return judgements
