"""Stage 2, open: check a run directory can be created or resumed, then create or resume it.

:func:`check_new` and :func:`check_resumable` only read: every reason to refuse (an occupied
``--out``, a changed measurement config, a task whose problems, grader or prompt records
changed or are missing) is found before anything is written. :func:`create_run` builds a new run beside its target and renames it into place with its
manifest, ``task.json`` and ``prompts.jsonl`` complete (holding the write lock from the
start); :func:`lock_for_resume` takes an existing run's write lock before any server is
started or asked, and re-checks the run under it; :func:`record_resume` then records the
new segment's provenance.
"""

from __future__ import annotations

import platform
import sys
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import DataError, UsageError
from ..records import RunManifest, RunSummary
from ..rundir._store import RunDir
from ..rundir._writer import RunWriter
from ._config import RunConfig, config_diff
from ._resolve import ResolvedTask

__all__ = [
    "check_new",
    "check_resumable",
    "create_run",
    "lock_for_resume",
    "provenance",
    "record_resume",
]


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _occupied(path: Path) -> bool:
    return path.exists() and (not path.is_dir() or any(path.iterdir()))


def check_new(out: Path) -> None:
    """Refuse an ``--out`` that exists and is not empty (a fresh run never overwrites)."""
    if _occupied(out):
        raise UsageError(
            f"{out}: run directory exists; pass --resume to continue it, or choose another --out"
        )


def check_resumable(out: Path, config: RunConfig, tasks: list[ResolvedTask]) -> RunDir:
    """The run at ``out`` if ``config`` may continue it; otherwise a one-line refusal.

    Checks the measurement config (key-level diff), and per task: the settings file, the
    problems (content hashes) and grader, and that ``prompts.jsonl`` holds every problem
    with the same content. Reads only.
    """
    if not out.exists():
        raise UsageError(
            f"{out}: nothing to resume (no run directory); drop --resume to start a new run"
        )
    run = RunDir.open(out)
    diff = config_diff(run.info.measurement or {}, config.measurement())
    if diff:
        raise UsageError(
            f"{out}: --resume refused, the measurement config changed ({'; '.join(diff)}); "
            "restore these settings or start a new run with another --out"
        )
    names = run.task_names()
    if names != [t.name for t in tasks]:
        raise UsageError(
            f"{out}: --resume refused, the run's tasks are {', '.join(names) or 'none'}, "
            f"the config's {', '.join(t.name for t in tasks)}; start a new run with another --out"
        )
    for t in tasks:
        files = run.task(t.name)
        stored = files.read_settings()
        if config.thinking is None:  # unset: the run keeps the delimiters it was graded by
            t.settings = t.settings.model_copy(update={"thinking": stored.thinking})
        elif stored.thinking != t.settings.thinking:
            raise UsageError(
                f"{files.task_json}: --resume refused, task {t.name!r} was graded with thinking "
                f"{stored.thinking!r}, the config says {t.settings.thinking!r}; drop the "
                "thinking setting (or change it with `rolleval regrade --thinking`)"
            )
        changed = config_diff(
            {"problem_hashes": stored.problem_hashes, "grader": stored.grader},
            {"problem_hashes": t.settings.problem_hashes, "grader": t.settings.grader},
        )
        if changed:
            raise UsageError(
                f"{files.task_json}: --resume refused, task {t.name!r} changed since the run started "
                f"({len(changed)} differences, e.g. {changed[0][:160]}); start a new run with another --out"
            )
        prompts = files.read_prompts()
        want = dict(t.settings.problem_hashes)
        have = {pid: rec.content_hash for pid, rec in prompts.by_id.items()}
        if have != want:
            missing = sorted(set(want) - set(have))
            detail = (
                f"{len(missing)} problems have no prompt record, e.g. {missing[0]!r}"
                if missing
                else "prompt records differ from the task's problems"
            )
            raise DataError(
                f"--resume refused: {detail}; the run directory is damaged, start a new run "
                "with another --out",
                path=files.prompts,
            )
    return run


def _package_versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in ("rolleval", "math-verify", "numpy", "scipy", "httpx", "llama-cpp-python"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def provenance(
    endpoint: Any, models: list[dict[str, Any]], models_error: str | None, local: Any
) -> dict[str, Any]:
    """What served the run and what ran it, recorded before the first request."""
    return {
        "endpoint": {
            "base_urls": list(endpoint.base_urls),
            "model": endpoint.model,
            "api": endpoint.api,
            "models": models,
            "models_error": models_error,
        },
        "server": local.provenance() if local is not None else None,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": _package_versions(),
    }


def create_run(
    out: Path,
    config: RunConfig,
    tasks: list[ResolvedTask],
    prov: dict[str, Any],
    *,
    on_note: Callable[[str], None] | None = None,
) -> RunWriter:
    """Create the run directory atomically (manifest, task settings and prompts complete)."""
    manifest = RunManifest(
        run_id=uuid.uuid4().hex,
        created_at=now(),
        rolleval_version=__version__,
        status="running",
        measurement=config.measurement(),
        throughput=config.throughput(),
        config=RunSummary(model=config.model, n_rollouts=config.n_rollouts, seed=config.seed),
        tasks=[],
        provenance=prov,
    )
    writer = RunWriter.create(out, manifest, command="run", on_note=on_note)
    try:
        for t in tasks:
            writer.add_task(t.settings, t.prompts.values())
        writer.commit()
    except BaseException:
        writer.close()
        raise
    return writer


def lock_for_resume(
    out: Path,
    config: RunConfig,
    tasks: list[ResolvedTask],
    *,
    on_note: Callable[[str], None] | None = None,
) -> RunWriter:
    """Take the run's write lock and re-check it under the lock (a writer that finished in
    between may have changed it). Done before any server is started or asked."""
    writer = RunWriter.resume(out, command="run --resume", on_note=on_note)
    try:
        check_resumable(out, config, tasks)
    except BaseException:
        writer.close()
        raise
    return writer


def record_resume(writer: RunWriter, config: RunConfig, prov: dict[str, Any]) -> None:
    """Mark the run ``running`` again with this segment's throughput and provenance."""
    info = writer.manifest
    info.status = "running"
    info.throughput = config.throughput()
    info.provenance_resumes.append(prov)
    writer.write_manifest()
