"""Stage 1, resolve: from a config to tasks ready to run, touching no run directory.

Each task's problems are loaded, its grader is built and its dependencies checked, and the
records the run will start from are built: the prompt as sent (system prompt and API kind
applied), the effective sampling settings, the :class:`~rolleval.records.PromptRecord` s and
the :class:`~rolleval.records.TaskSettings` with every problem's content hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..client import SamplingParams
from ..errors import UsageError
from ..records import (
    DEFAULT_THINKING,
    PromptRecord,
    SamplingSettings,
    TaskSettings,
    dump_record,
)
from ._config import RunConfig, is_task_file

if TYPE_CHECKING:
    from ..tasks import TaskSpec

__all__ = ["PromptStore", "ResolvedTask", "resolve_tasks"]


class PromptStore(Mapping[str, PromptRecord]):
    """Problem id -> prompt record, each held as its JSONL line and decoded when asked for.

    A line is a few hundred bytes where the record's model objects take a few kilobytes, so
    a task of a hundred thousand problems stays small for the whole run.
    """

    __slots__ = ("_lines",)

    def __init__(self, lines: dict[str, bytes]):
        self._lines = lines

    def __getitem__(self, problem_id: str) -> PromptRecord:
        return PromptRecord.model_validate_json(self._lines[problem_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._lines)

    def __len__(self) -> int:
        return len(self._lines)


@dataclass
class ResolvedTask:
    """A task inside a run, ready to be written and requested."""

    spec: TaskSpec
    grader: Any  # rolleval.grading.Grader
    prompts: Mapping[str, PromptRecord]
    """Problem id -> prompt record (prompt as sent), in sorted-id order (a :class:`PromptStore`)."""
    sampling: SamplingParams
    settings: TaskSettings
    _wire: tuple[str, Any] | None = field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        return str(self.spec.name)

    @property
    def loglik(self) -> bool:
        """A log-likelihood task: its options are scored, nothing is generated."""
        return self.spec.type == "loglik"

    @property
    def problem_ids(self) -> list[str]:
        return list(self.prompts)

    def wire_prompt(self, problem_id: str) -> Any:
        """The prompt of a problem as the client sends it (messages as dicts, or text)."""
        if self._wire is not None and self._wire[0] == problem_id:
            return self._wire[1]  # a problem's requests go out back to back: decode it once
        prompt = self.prompts[problem_id].prompt
        assert prompt is not None  # the runner always records the prompt it sends
        wire = prompt if isinstance(prompt, str) else [m.model_dump() for m in prompt]
        self._wire = (problem_id, wire)
        return wire


def _prompt_as_sent(problem: Any, config: RunConfig, spec: Any) -> Any:
    prompt = problem.prompt
    if spec.type == "loglik":
        return prompt  # the context as scored: no system prompt, no chat template
    if isinstance(prompt, str):
        messages = [{"role": "user", "content": prompt}]
    else:
        messages = [dict(m) for m in prompt]
    if config.system_prompt is not None:
        messages = [
            {"role": "system", "content": config.system_prompt},
            *[m for m in messages if m.get("role") != "system"],
        ]
    if config.api == "completions":
        return "\n\n".join(m["content"] for m in messages)
    return messages


def _sampling(spec_defaults: dict[str, Any], config: RunConfig) -> SamplingParams:
    merged = dict(spec_defaults or {})
    over = config.sampling.model_dump()
    extra = over.pop("extra_body") or {}
    merged.update({k: v for k, v in over.items() if v is not None})
    stop = merged.get("stop")
    return SamplingParams(
        temperature=merged.get("temperature"),
        top_p=merged.get("top_p"),
        max_tokens=merged.get("max_tokens"),
        stop=tuple(stop) if stop else None,
        reasoning_effort=merged.get("reasoning_effort"),
        extra_body=extra,
    )


def _thinking(config: RunConfig, spec: Any) -> tuple[str, str] | Literal["none"]:
    """A task's thinking delimiters: the run config's, else the task's, else the default."""
    if config.thinking is None:
        own = getattr(spec, "thinking", None)
        return own if own is not None else DEFAULT_THINKING
    if config.thinking == "none":
        return "none"
    open_, close = config.thinking
    return (open_, close)


def _task_settings(
    spec: Any,
    config: RunConfig,
    grader: Any,
    hashes: dict[str, str],
    sampling: SamplingParams,
) -> TaskSettings:
    from ..grading import grader_versions

    hashes = dict(sorted(hashes.items()))
    return TaskSettings(
        name=spec.name,
        description=spec.description,
        n_rollouts=1 if spec.type == "loglik" else config.n_rollouts,
        ks=config.ks,
        denominator_policy=config.denominator_policy,
        score_key=spec.score_key,
        grader=grader.spec,
        grader_identity=grader.identity,
        grader_dependencies=grader_versions(),
        sampling=SamplingSettings(
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_tokens=sampling.max_tokens,
            stop=list(sampling.stop) if sampling.stop else None,
            extra_body=dict(sampling.extra_body),
            reasoning_effort=sampling.reasoning_effort,
        ),
        thinking=_thinking(config, spec),
        source=spec.source,
        licence=spec.licence,
        cluster_field=spec.cluster_field,
        n_problems=len(hashes),
        eval_set_hash=hashlib.sha256("".join(hashes.values()).encode()).hexdigest(),
        problem_hashes=hashes,
    )


def resolve_tasks(config: RunConfig) -> list[ResolvedTask]:
    """Every task of ``config``, loaded, graded-ready and turned into records (no writes).

    Raises :class:`UsageError` for a task listed twice or without problems, and whatever a
    grader's dependency check raises (:class:`~rolleval.errors.MissingDependencyError`).
    """
    from ..grading import make_grader
    from ..tasks import get_task, task_from_config

    out: list[ResolvedTask] = []
    names: set[str] = set()
    for i, entry in enumerate(config.tasks):
        where = f"{config.source}: tasks[{i}]"
        try:
            if isinstance(entry, str):
                spec = task_from_config(entry) if is_task_file(entry) else get_task(entry)
            else:
                spec = task_from_config(entry)
        except UsageError as exc:  # a wrong task entry: name the config it is in
            raise UsageError(f"{where}: {exc}") from None
        if spec.name in names:
            raise UsageError(f"{where}: task {spec.name!r} is listed twice; list each task once")
        names.add(spec.name)
        problems = spec.load(limit=config.limit)
        if not problems:
            raise UsageError(f"{where}: task {spec.name!r} has no problems")
        grader = make_grader(spec.grader)
        grader.check_available()
        lines: dict[str, bytes] = {}
        hashes: dict[str, str] = {}
        for p in sorted(problems, key=lambda p: p.problem_id):
            rec = PromptRecord.build(
                p.problem_id,
                _prompt_as_sent(p, config, spec),
                p.reference,
                cluster=p.cluster,
                extras=p.extras or None,
            )
            assert rec.content_hash is not None  # PromptRecord.build always sets it
            lines[p.problem_id] = dump_record(rec)
            hashes[p.problem_id] = rec.content_hash
        del problems
        prompts = PromptStore(lines)
        sampling = _sampling(spec.sampling, config)
        settings = _task_settings(spec, config, grader, hashes, sampling)
        out.append(ResolvedTask(spec, grader, prompts, sampling, settings))
    return out
