"""``rolleval run``: n rollouts per problem against OpenAI-compatible endpoints, resumably.

:func:`run_eval` is five named stages (``docs/architecture.md`` draws them):

1. **resolve** (:mod:`._resolve`): config -> tasks, problems, graders (dependencies checked),
   prompt records and task settings. Plus the endpoint settings and the API key's presence.
2. **open** (:mod:`._open`): check that ``--out`` can be created, or resumed (the config
   diff, the stored tasks and prompts). Every usage error is raised here at the latest,
   before anything is written. Then start the embedded server (``model: local``), ask each
   endpoint's ``/v1/models`` for provenance, and create the run directory atomically or
   take the existing one's write lock.
3. **plan** (:mod:`._plan`): a pure function of the stored records says which rollouts to
   request (and as which attempt), which judgements stay, which problems to grade.
4. **schedule** (:mod:`._schedule`): request, store each rollout at once, grade each
   problem when its rollouts are all in.
5. **finish** (:mod:`._finish`): the segment, each task's profile, the run's status, the
   report. Ctrl-C leaves status ``interrupted`` and a directory ``--resume`` continues.
   A run in which every rollout failed raises :class:`RunError` saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._sanitize import redact
from ..client import Client, EndpointConfig
from ..client._client import read_api_key
from ..errors import RollevalError, RunError, UsageError
from ..records import Segment
from ..rundir._store import collect_warnings
from ..rundir._writer import RunWriter
from ._config import RunConfig
from ._finish import profile_from_files
from ._open import (
    check_new,
    check_resumable,
    create_run,
    lock_for_resume,
    now,
    provenance,
    record_resume,
)
from ._plan import Request, TaskPlan, plan_task
from ._resolve import ResolvedTask, resolve_tasks
from ._schedule import Counters, Scheduler, derive_seed
from ._sequential import Prepared, SequentialOptions, prepare_sequential, schedule_sequential

__all__ = [
    "Counters",
    "Request",
    "ResolvedTask",
    "RunOutcome",
    "SequentialOptions",
    "TaskPlan",
    "derive_seed",
    "plan_task",
    "resolve_tasks",
    "resume_command",
    "run_eval",
]


def resume_command(out: str) -> str:
    """The command that continues the run directory ``out`` (shell-quoted): a resumed run
    reads its settings from the directory, so nothing else is needed."""
    return f"rolleval run --out {shlex.quote(out)} --resume"


@dataclass
class RunOutcome:
    """What :func:`run_eval` did."""

    path: Path
    report: dict[str, Any]
    requested: int
    completed: int
    failed: int
    resumed: bool
    seconds: float
    sequential: dict[str, Any] | None = None
    """A sequential run's design, looks and verdict (the manifest's ``sequential``)."""
    exit_code: int = 0
    """0, or a sequential run's verdict exit code (1 regression, 3 inconclusive)."""


def _check_api_key(config: RunConfig) -> None:
    """Refuse a missing or unusable API key before anything is written (and register it for
    redaction: :func:`rolleval.client.read_api_key`)."""
    if config.api_key_env is not None:
        read_api_key(config.api_key_env)


def run_eval(
    config: RunConfig,
    out: str | Path,
    *,
    resume: bool = False,
    progress: bool = True,
    transport: Any = None,
    on_event: Callable[[str], None] | None = None,
    sequential: SequentialOptions | None = None,
) -> RunOutcome:
    """Run (or resume) an evaluation into run directory ``out`` and return its report.

    ``transport`` is the httpx transport seam (tests); ``on_event`` receives one-line status
    messages (the CLI prints them). With ``sequential`` the run visits the baseline's problems
    in a seeded random order and stops when its verdict is settled (``docs/contract.md``,
    "Sequential comparison"); the outcome's ``exit_code`` is the verdict's.
    """
    say = on_event or (lambda _msg: None)
    out = Path(out)
    t0 = time.monotonic()

    # ---- 1. resolve, and 2. check the directory: nothing is written before both pass ----
    if not resume:
        check_new(out)
    if config.local_model is not None:
        _identify_local_model(config)
    if transport is None and config.model != "local":
        _preflight(config)  # before the tasks' data and graders load: seconds, on a busy machine
    tasks = resolve_tasks(config)
    if resume:
        check_resumable(out, config, tasks)
    prepared = None
    if sequential is not None:
        if resume:
            raise UsageError(
                "--resume of a sequential run (--until-decided) is not supported yet: start a "
                "new run (the same --seed visits the problems in the same order)"
            )
        prepared = prepare_sequential(sequential, tasks, config.seed)
    local = None
    if config.model == "local":
        from .._local._launcher import LocalServer, LocalServerOptions, check_local_available

        check_local_available(weights=config.local_model is None)
        local = LocalServer(
            LocalServerOptions(
                model_path=config.local_model, server_options=dict(config.server_options)
            )
        )
    elif config.server_options:
        raise UsageError(
            "server_options apply only to model 'local' (the embedded llama.cpp server)"
        )
    if local is None and not config.endpoints:
        raise UsageError(
            "no endpoint: pass --endpoint http://HOST:PORT/v1 (repeatable), or --model local"
        )
    _check_api_key(config)

    with contextlib.ExitStack() as stack:
        # a resume takes the run's write lock first: a second writer is refused at once
        writer = (
            stack.enter_context(lock_for_resume(out, config, tasks, on_note=say))
            if resume
            else None
        )
        if local is not None:
            say("starting the embedded llama.cpp server ...")
            stack.enter_context(local)
            base_urls: tuple[str, ...] = (local.base_url,)
            model_name = local.model_name
        else:
            base_urls = tuple(config.endpoints)
            model_name = config.model
        endpoint = EndpointConfig(
            base_urls=base_urls,
            model=model_name,
            api=config.api,
            api_key_env=config.api_key_env,
            timeout_s=config.timeout_s,
            max_retries=config.max_retries,
            concurrency=config.concurrency,
            server_n=config.server_n,
        )
        if any(t.loglik for t in tasks):
            _probe_logprobs(endpoint, say)
        outcome = asyncio.run(
            _run_async(
                config, out, writer, tasks, endpoint, local, transport, progress, say, prepared
            )
        )
    return RunOutcome(**{**outcome, "seconds": time.monotonic() - t0})


def _identify_local_model(config: RunConfig) -> None:
    """Check ``local_model`` is a GGUF file and put its sha256 into the run's measurement,
    so ``--resume`` with another file is refused (before anything is written)."""
    from .._local._launcher import check_gguf, file_sha256

    config._local_sha256 = file_sha256(check_gguf(config.local_model or ""))


def _probe_logprobs(endpoint: EndpointConfig, say: Callable[[str], None]) -> None:
    """Before a log-likelihood run: every endpoint must serve usable prompt log-probs
    (:func:`~rolleval.client._logprob_probe.require_prompt_logprobs`; exit 2 otherwise)."""
    import os

    from ..client._logprob_probe import require_prompt_logprobs

    key = os.environ.get(endpoint.api_key_env) if endpoint.api_key_env else None
    for url in endpoint.base_urls:
        say(f"probing the prompt log-probs of {url} ...")
        require_prompt_logprobs(url, endpoint.model, api_key=key, timeout_s=endpoint.timeout_s)


async def _run_async(
    config: RunConfig,
    out: Path,
    resumed: RunWriter | None,
    tasks: list[ResolvedTask],
    endpoint: EndpointConfig,
    local: Any,
    transport: Any,
    progress: bool,
    say: Callable[[str], None],
    prepared: Prepared | None = None,
) -> dict[str, Any]:
    async with Client(endpoint, transport=transport) as client:
        try:
            models, models_error = await client.models(), None
        except RollevalError:
            raise  # a usage error (e.g. the API key): refused before anything is written
        except Exception as exc:  # a server without /v1/models still serves completions
            models, models_error = [], redact(f"{type(exc).__name__}: {exc}")
        _refuse_unreachable(models, endpoint.model)
        prov = provenance(endpoint, models, models_error, local)
        if resumed is not None:
            record_resume(resumed, config, prov)
        resume = resumed is not None
        with resumed or create_run(out, config, tasks, prov, on_note=say) as writer:
            plans = _plan(writer, tasks, config.n_rollouts)
            requested = sum(p.n_requests for p in plans)
            if resume:
                n_grade = sum(len(p.to_grade) for p in plans)
                say(f"resuming {out}: {requested} rollouts to request, {n_grade} problems to grade")
            counters = await _schedule(
                writer, tasks, plans, client, config, progress, prepared, say
            )
            if prepared is not None:
                requested = counters.completed + counters.failed
            _finish(writer, tasks, counters, requested, endpoint, out, config.n_rollouts)
            from .._report._api import report_run

            report = report_run(writer.run).report
            design = writer.manifest.sequential
    seq = None if design is None else design.model_dump(mode="json")
    code = 0
    if seq is not None and seq.get("verdict") is not None:
        from ..compare._rule import GATE_VERDICTS

        code = GATE_VERDICTS[seq["verdict"]]
    return {
        "path": out,
        "report": report,
        "requested": requested,
        "completed": counters.completed,
        "failed": counters.failed,
        "resumed": resume,
        "sequential": seq,
        "exit_code": code,
    }


def _preflight(config: RunConfig) -> None:
    """Before the tasks load (seconds on a busy machine): open a TCP connection to each
    endpoint, sending nothing. Where nothing listens (connection refused, no such host) the
    run is refused at once (:func:`_refuse_unreachable`). A timeout, or an endpoint reached
    through a proxy (``*_PROXY``), is left to the ``GET /models`` after the checks."""
    import socket
    import urllib.parse
    import urllib.request

    proxies = urllib.request.getproxies()
    dead = []
    for url in config.endpoints:
        parts = urllib.parse.urlsplit(url)
        if not parts.hostname or (
            parts.scheme in proxies and not urllib.request.proxy_bypass(parts.hostname)
        ):
            continue
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            socket.create_connection(
                (parts.hostname, port), timeout=min(config.timeout_s, 5.0)
            ).close()
        except (ConnectionRefusedError, socket.gaierror) as exc:
            reason = (
                "connection refused" if isinstance(exc, ConnectionRefusedError) else "no such host"
            )
            dead.append({"endpoint": url, "error": f"{reason}: {exc}", "unreachable": True})
        except OSError:  # a timeout, no route: the run's own requests say more
            pass
    _refuse_unreachable(dead, config.model)


def _refuse_unreachable(models: list[dict[str, Any]], model: str) -> None:
    """Pre-flight: the ``/models`` request found no server listening at an endpoint. Say so
    now, before anything is written, rather than after every rollout's retries."""
    dead = [m for m in models if m.get("unreachable")]
    if not dead:
        return
    where = ", ".join(m["endpoint"] for m in dead)
    raise RunError(
        f"cannot connect to {where} ({dead[0].get('error')}); check that the server at {where} "
        f"is up and serves model {model!r}, then run again (nothing was requested)"
    )


def _plan(writer: RunWriter, tasks: list[ResolvedTask], n: int) -> list[TaskPlan]:
    """Stage 3: plan every task from its stored records; drop judgements that do not stay."""
    plans = []
    for ti, t in enumerate(tasks):
        tw = writer.task(t.name)
        with collect_warnings():
            rollouts = tw.files.read_rollouts()
            judgements = tw.files.read_judgements()
        n_task = t.settings.n_rollouts or n  # a log-likelihood task scores once per problem
        plan = plan_task(ti, t.problem_ids, n_task, rollouts, judgements)
        if plan.rewrite_judgements:
            tw.replace_judgements(plan.keep_judgements)
        plans.append(plan)
    return plans


@contextlib.contextmanager
def _interrupts_stop(scheduler: Scheduler) -> Iterator[threading.Event]:
    """While requests go out, Ctrl-C (and the CLI's SIGTERM, which acts as Ctrl-C) also
    stops the scheduler and is remembered, before the handler in force (``asyncio.run``'s:
    cancel the main task) runs. An interrupt is then never lost: if a library swallows the
    task's cancellation, the scheduler issues no more requests and the run still ends
    interrupted. Main thread only (elsewhere signals are not this code's to handle)."""
    seen = threading.Event()
    previous = (
        signal.getsignal(signal.SIGINT)
        if threading.current_thread() is threading.main_thread()
        else None
    )
    if previous is None:  # not the main thread, or a handler set outside Python
        yield seen
        return

    def on_interrupt(signum: int, frame: Any) -> None:
        seen.set()
        scheduler.stop()
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


async def _schedule(
    writer: RunWriter,
    tasks: list[ResolvedTask],
    plans: list[TaskPlan],
    client: Client,
    config: RunConfig,
    progress: bool,
    prepared: Prepared | None = None,
    say: Callable[[str], None] = lambda _msg: None,
) -> Counters:
    """Stage 4: request and grade; the segment and the status are recorded however it ends.
    A sequential run (``prepared``) requests round by round until it is settled."""
    scheduler = Scheduler(
        tasks,
        plans,
        writer,
        client,
        seed=config.seed,
        concurrency=config.concurrency,
        server_n=config.server_n,
        grading_workers=config.grading_workers,
        progress=progress and prepared is None,
    )
    started_at, started = now(), time.monotonic()
    status = "interrupted"
    try:
        with _interrupts_stop(scheduler) as interrupted:
            if prepared is None:
                counters = await scheduler.run()
            else:
                counters = await schedule_sequential(
                    scheduler, writer, writer.run.path, prepared, say
                )
            if interrupted.is_set():  # the cancellation was swallowed below: stop all the same
                raise KeyboardInterrupt
        status = "completed"
        return counters
    finally:
        scheduler.close(completed=status == "completed")
        c = scheduler.counters
        segment = Segment(
            started_at=started_at,
            ended_at=now(),
            seconds=time.monotonic() - started,
            requested=scheduler.total if prepared is None else scheduler.issued,
            completed=c.completed,
            failed=c.failed,
            status=status,  # type: ignore[arg-type]
        )
        writer.manifest.segments.append(segment)
        writer.set_status(status)  # type: ignore[arg-type]


def _finish(
    writer: RunWriter,
    tasks: list[ResolvedTask],
    counters: Counters,
    requested: int,
    endpoint: EndpointConfig,
    out: Path,
    config_n: int,
) -> None:
    """Stage 5: profiles, and the status a stopped or failed run ends with."""
    for t in tasks:
        tw = writer.task(t.name)
        n_task = t.settings.n_rollouts or config_n
        tw.write_profile(profile_from_files(tw.files, writer.manifest.segments, n_task))
    where = ", ".join(endpoint.base_urls)
    if counters.tripped:
        writer.set_status("interrupted")
        raise RunError(
            f"{out}: stopped after {counters.streak} consecutive rollouts failed with no success "
            f"(last error: {counters.last_error}); check that the server at {where} is up and serves "
            f"model {endpoint.model!r}, then resume with: {resume_command(str(out))} "
            "(completed rollouts are kept)"
        )
    if requested > 0 and counters.completed == 0:
        writer.set_status("failed")
        raise RunError(
            f"{out}: every one of the {requested} rollouts failed (last error: {counters.last_error}); "
            f"check that the server at {where} is up and serves model {endpoint.model!r}, then "
            f"resume with: {resume_command(str(out))}"
        )
