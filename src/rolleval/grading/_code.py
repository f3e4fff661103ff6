"""The code grader: extract a Python program and run the problem's tests in a sandbox."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from typing import Any, ClassVar

from ..errors import UsageError
from ._protocol import (
    BadReferenceError,
    Grader,
    Judgement,
    check_rollouts,
    check_spec_keys,
    failed_all,
    reference_aliases,
)
from ._sandbox import ExecLimits, ExecOutcome, isolation_problem, run_tests

__all__ = ["PARALLEL", "UNSAFE_EXEC_ENV", "CodeGrader", "extract_code", "unsafe_exec_allowed"]

_LOGIC_VERSION = "2"  # 2: tests in a harness process apart from the program (issue 20)
#: Executions of one problem's programs at once (each grading worker runs its own).
PARALLEL = 2

#: Set to ``1`` (``rolleval run/regrade --unsafe-exec``) to execute code unisolated where
#: isolation does not work.
UNSAFE_EXEC_ENV = "ROLLEVAL_UNSAFE_EXEC"

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:^[ \t]*```|\Z)", re.DOTALL | re.M)
_PYTHON_TAGS = frozenset({"", "python", "py", "python3", "py3"})
_CODE_START = re.compile(r"^(?:def |class |import |from \S+ import |async def |@)", re.M)


def unsafe_exec_allowed() -> bool:
    """True when ``ROLLEVAL_UNSAFE_EXEC=1`` (set by ``--unsafe-exec``)."""
    return os.environ.get(UNSAFE_EXEC_ENV, "") == "1"


def extract_code(text: str) -> str | None:
    """The Python program in a model's reply, or ``None``.

    Fenced blocks first: among blocks tagged ``python``/``py``/``python3`` or untagged, the
    last one that defines a function (``def``), else the last one. Without a usable block:
    the text from the first line that starts like Python (``def``, ``class``, ``import``,
    ``from ... import``, a decorator) to the end. Otherwise nothing.
    """
    blocks = [
        body for tag, body in _FENCE.findall(text) if tag.lower() in _PYTHON_TAGS and body.strip()
    ]
    if blocks:
        with_def = [b for b in blocks if re.search(r"^\s*(?:async\s+)?def ", b, re.M)]
        code = (with_def or blocks)[-1]
    else:
        start = _CODE_START.search(text)
        if start is None:
            return None
        code = text[start.start() :]
    code = code.strip("\n")
    return code if code.strip() else None


def _canonical(code: str) -> str:
    """Cluster key: the code with trailing spaces and blank lines dropped."""
    return "\n".join(line.rstrip() for line in code.splitlines() if line.strip())


def _positive(name: str, value: Any, *, integer: bool) -> None:
    bad = isinstance(value, bool) or not isinstance(value, (int, float))
    if not bad:
        bad = not math.isfinite(value) or value <= 0 or (integer and int(value) != value)
    if bad:
        kind = "an integer" if integer else "a number"
        raise UsageError(f"code grader option {name!r} must be {kind} > 0; got {value!r}")


class CodeGrader(Grader):
    """Runs each rollout's program against the problem's tests in an isolated child process.

    Reference
        A list of test snippets (one string is one snippet). The extracted program runs
        first, then each snippet in order in one namespace holding the program's names
        (data, or proxies to the program's process); the first failing snippet stops the
        run. HumanEval has one snippet (its ``check`` function called on the
        entry point), MBPP one per ``assert``.

    Judgement
        ``extracted`` is the program (:func:`extract_code`); ``correct`` means every snippet
        passed. ``metrics`` holds ``tests_run`` and ``tests_passed`` (snippets) when the
        program ran; ``judge_raw`` is a JSON summary with ``failure``: ``null``,
        ``"no_code"``, ``"syntax"``, ``"assertion"``, ``"timeout"`` or ``"crash"``. A
        sandbox that cannot start is a grader error (``grader_error`` starting
        ``"sandbox:"``), never a wrong answer. Clusters group identical programs
        (trailing spaces and blank lines ignored); running code cannot tell whether two
        different programs are equivalent.

    Isolation
        The program runs as nobody (also when rolleval runs as root) with an explicit
        minimal environment, in its own mount, PID, network, IPC and UTS namespaces, on a
        root holding only read-only ``/usr`` and the Python installation plus a private
        ``/tmp``, without capabilities, under limits on CPU time, memory, processes and
        file size. The tests run in a separate harness process the program cannot reach;
        they call the program's functions through a channel that carries data only, so
        neither a forged report nor an object with a lying ``__eq__`` can pass. A
        wall-clock deadline kills everything (see :mod:`rolleval.grading._sandbox` and
        ``docs/tasks.md``, "Code execution", for the threat model). :meth:`check_available`
        refuses when the isolation does not work here, unless ``ROLLEVAL_UNSAFE_EXEC=1``
        (``--unsafe-exec``): then, where isolation does not work, the code runs as the
        current user with only the limits, the private folder, the harness split and the
        group kill (``judge_raw`` says ``"isolated": false``).

    Options: ``timeout_s`` (CPU seconds per execution, default 10, at most 60; the
    wall clock allows ``3 * timeout_s + 5`` seconds, for waits and a busy machine),
    ``memory_mb`` (address space, 1024), ``processes`` (32). Up to :data:`PARALLEL`
    executions of one problem run at once (not part of the spec: it does not change
    judgements).
    """

    id: ClassVar[str] = "code"
    needs_process: ClassVar[bool] = True
    #: Backstop for the grading pool's per-problem limit: each execution ends by its own
    #: deadline, so a problem only needs time for its executions to run in turn.
    problem_timeout_s: ClassVar[float] = 1800.0

    def __init__(self, timeout_s: float = 10.0, memory_mb: int = 1024, processes: int = 32) -> None:
        _positive("timeout_s", timeout_s, integer=False)
        if timeout_s > 60:
            raise UsageError(
                f"code grader option 'timeout_s' must be at most 60 seconds; got {timeout_s!r}"
            )
        for name, value in (("memory_mb", memory_mb), ("processes", processes)):
            _positive(name, value, integer=True)
        cpu = max(1, math.ceil(timeout_s))
        self.limits = ExecLimits(
            timeout_s=3.0 * cpu + 5.0,
            cpu_s=cpu,
            memory_mb=int(memory_mb),
            processes=int(processes),
        )
        self.spec = {
            "type": self.id,
            "timeout_s": float(timeout_s),
            "memory_mb": int(memory_mb),
            "processes": int(processes),
        }
        self.version = _LOGIC_VERSION

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> CodeGrader:
        """Build from ``{"type": "code", "timeout_s": ..., "memory_mb": ..., "processes": ...}``."""
        check_spec_keys(spec, ("timeout_s", "memory_mb", "processes"))
        return cls(
            spec.get("timeout_s", 10.0), spec.get("memory_mb", 1024), spec.get("processes", 32)
        )

    def check_available(self) -> None:
        """Refuse (``UsageError``, exit 2) when isolation does not work and unsafe
        execution was not allowed."""
        if unsafe_exec_allowed():
            return
        problem = isolation_problem()
        if problem is not None:
            raise UsageError(
                f"code grader refuses to run untrusted code: {problem}; enable unprivileged "
                "user namespaces (sysctl kernel.unprivileged_userns_clone=1, or a container "
                "run with --security-opt seccomp=unconfined), or pass --unsafe-exec to run "
                "model-written code unisolated as the current user"
            )

    def extract(self, text: str) -> str | None:
        """The program in ``text`` (:func:`extract_code`)."""
        return extract_code(text)

    def grade_problem(
        self, reference: str | Sequence[str], rollouts: Sequence[tuple[int, str]]
    ) -> dict[int, Judgement]:
        """Run every rollout's program against the tests (rules in the class docstring)."""
        ordered = check_rollouts(rollouts)
        try:
            tests = reference_aliases(reference)
        except BadReferenceError as exc:
            return failed_all(ordered, f"reference unusable: {exc}", self.extract)
        judgements: dict[int, Judgement] = {}
        programs: dict[str, list[int]] = {}
        code_of: dict[int, str] = {}
        for index, text in ordered:
            code = self.extract(text)
            if code is None:
                raw = json.dumps({"failure": "no_code"})
                judgements[index] = Judgement(None, False, None, judge_raw=raw)
                continue
            code_of[index] = code
            programs.setdefault(_canonical(code), []).append(index)
        keys = list(programs)
        outcomes = run_tests(
            [(code_of[programs[k][0]], tests) for k in keys],
            self.limits,
            isolate=not unsafe_exec_allowed() or isolation_problem() is None,
            parallel=PARALLEL,
        )
        for key, outcome in zip(keys, outcomes, strict=True):
            label = programs[key][0]
            for index in programs[key]:
                judgements[index] = self._judgement(code_of[index], label, outcome)
        return judgements

    @staticmethod
    def _judgement(code: str, label: int, outcome: ExecOutcome) -> Judgement:
        if outcome.failure == "sandbox":
            return Judgement.failed(f"sandbox: {outcome.message}", extracted=code)
        metrics: dict[str, float] = {}
        if outcome.tests_run is not None:
            metrics["tests_run"] = float(outcome.tests_run)
        if outcome.tests_passed is not None:
            metrics["tests_passed"] = float(outcome.tests_passed)
        return Judgement(
            extracted=code,
            correct=outcome.passed,
            cluster=label,
            metrics=metrics,
            judge_raw=json.dumps(outcome.summary(), sort_keys=True),
        )
