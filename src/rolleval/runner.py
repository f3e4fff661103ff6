"""``rolleval run``: n rollouts per problem against OpenAI-compatible endpoints, resumably.

Order of work (``docs/run-format.md`` describes the files):

1. Validate the config, resolve tasks, check every grader's dependencies: nothing is written
   before all of that passes. An existing run directory is refused unless resuming; a resume
   refuses a changed measurement config with a key-level diff, and another record schema.
2. Start the embedded server if ``model: local``; ask each endpoint's ``/v1/models``.
3. Write the manifest (status ``running``, config, provenance) and per task ``task.json`` and
   ``prompts.jsonl`` (content hash of every prompt + reference) before the first request.
4. Request rollouts problem by problem (a problem's rollouts go out back to back, so a
   server's prompt cache is reused), one request per rollout, seeds derived from (run seed,
   problem id, rollout index). Each finished rollout is appended to ``rollouts.jsonl`` at
   once; when a problem's rollouts are all in, it is graded in a process pool and its
   judgements appended.
5. At the end: profile, report, manifest status ``completed``. Ctrl-C leaves status
   ``interrupted`` and a directory ``--resume`` continues. A run in which every rollout failed
   raises :class:`RunError` saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import platform
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ._version import __version__
from .client import Client, Completion, EndpointConfig, SamplingParams
from .client._client import read_api_key
from .config import RunConfig, config_diff
from .errors import RunError, UsageError
from .records import SCHEMA_VERSION, content_hash, dump_record, effective_rollouts, make_judgement
from .sanitize import redact
from .store import (
    JsonlAppender,
    RunDir,
    TaskFiles,
    atomic_write_bytes,
    atomic_write_json,
    collect_warnings,
    read_jsonl,
)

__all__ = ["RunOutcome", "derive_seed", "run_eval"]

_RETRY_STATUSES = ("infra_error", "timeout")
#: A run stops (resumably) after this many consecutive failed rollouts, or twice the
#: concurrency if larger: each one already spent its own retries, so the endpoint is down.
_BREAKER_MIN = 24


def derive_seed(run_seed: int, problem_id: str, index: int) -> int:
    """Sampling seed of one rollout: first 31 bits of sha256("<run seed>\\0<problem id>\\0<index>")."""
    digest = hashlib.sha256(f"{run_seed}\x00{problem_id}\x00{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class _Task:
    """A resolved task inside a run."""

    spec: Any  # rolleval.tasks.TaskSpec
    files: TaskFiles
    problems: list[Any]
    prompts: dict[str, Any]  # problem id -> prompt as sent
    references: dict[str, Any]
    sampling: SamplingParams
    grader: Any
    settings: dict[str, Any] = field(default_factory=dict)


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


def _prompt_as_sent(problem: Any, config: RunConfig) -> Any:
    prompt = problem.prompt
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
        extra_body=extra,
    )


def _resolve_tasks(config: RunConfig) -> list[tuple[Any, list[Any]]]:
    from .tasks import get_task, task_from_config

    out = []
    names: set[str] = set()
    for i, entry in enumerate(config.tasks):
        try:
            spec = get_task(entry) if isinstance(entry, str) else task_from_config(entry)
        except UsageError as exc:  # a wrong task entry: name the config it is in
            raise UsageError(f"{config.source}: tasks[{i}]: {exc}") from None
        if spec.name in names:
            raise UsageError(
                f"{config.source}: tasks[{i}]: task {spec.name!r} is listed twice; list each task once"
            )
        names.add(spec.name)
        problems = spec.load(limit=config.limit)
        if not problems:
            raise UsageError(f"{config.source}: tasks[{i}]: task {spec.name!r} has no problems")
        out.append((spec, problems))
    return out


def _package_versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in ("rolleval", "math-verify", "numpy", "scipy", "httpx", "llama-cpp-python"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


class _Progress:
    """A one-line progress display on stderr: done/total, rate, errors, ETA."""

    def __init__(self, total: int, *, enabled: bool, stream: Any = None):
        self.total = total
        self.done = 0
        self.errors = 0
        self.enabled = enabled and total > 0
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self._last = 0.0
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def update(self, *, error: bool) -> None:
        self.done += 1
        self.errors += error
        now = time.monotonic()
        interval = 0.2 if self._tty else 10.0
        if self.enabled and (now - self._last >= interval or self.done == self.total):
            self._last = now
            self._print(now)

    def _print(self, now: float) -> None:
        elapsed = max(now - self.start, 1e-9)
        rate = self.done / elapsed
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        eta_s = "--" if eta == float("inf") else f"{int(eta // 60)}m{int(eta % 60):02d}s"
        line = f"rollouts {self.done}/{self.total} ({100 * self.done / self.total:.0f}%)  {rate:.1f}/s  errors {self.errors}  ETA {eta_s}"
        if self._tty:
            self.stream.write("\r" + line + " " * 4)
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def _task_settings(
    spec: Any, config: RunConfig, grader: Any, hashes: dict[str, str], sampling: SamplingParams
) -> dict[str, Any]:
    from .grading import grader_versions

    ordered = [hashes[k] for k in sorted(hashes)]
    return {
        "name": spec.name,
        "description": spec.description,
        "n_rollouts": config.n,
        "ks": config.ks,
        "denominator_policy": config.denominator_policy,
        "score_key": "correct",
        "grader": grader.spec,
        "grader_identity": grader.identity,
        "grader_dependencies": grader_versions(),
        "sampling": {
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
            "stop": list(sampling.stop) if sampling.stop else None,
            "extra_body": dict(sampling.extra_body),
        },
        "source": spec.source,
        "licence": spec.licence,
        "cluster_field": spec.cluster_field,
        "n_problems": len(hashes),
        "eval_set_hash": hashlib.sha256("".join(ordered).encode()).hexdigest(),
        "problem_hashes": dict(sorted(hashes.items())),
    }


def _write_task_files(task: _Task) -> None:
    task.files.dir.mkdir(parents=True, exist_ok=True)
    lines = []
    for p in sorted(task.problems, key=lambda p: p.problem_id):
        rec = {
            "problem_id": p.problem_id,
            "prompt": task.prompts[p.problem_id],
            "reference": p.reference,
            "cluster": p.cluster,
            "extras": p.extras or None,
            "content_hash": content_hash(task.prompts[p.problem_id], p.reference),
        }
        lines.append(orjson.dumps({k: v for k, v in rec.items() if v is not None}) + b"\n")
    atomic_write_bytes(task.files.prompts, b"".join(lines))
    atomic_write_json(task.files.task_json, task.settings)


def _profile(files: TaskFiles, segments: list[dict[str, Any]]) -> dict[str, Any]:
    """Token usage, latency percentiles, throughput and error counts from stored rollouts."""
    with collect_warnings():
        recs = read_jsonl(files.rollouts, what="rollout records", missing_ok=True).records
    chosen, _ = effective_rollouts(recs)
    ok = [r for r in chosen.values() if r.get("status") == "ok"]
    lat = np.array([r["latency_s"] for r in ok if r.get("latency_s") is not None], dtype=float)
    out_tok = [(r.get("usage") or {}).get("completion_tokens") for r in ok]
    in_tok = [(r.get("usage") or {}).get("prompt_tokens") for r in ok]
    out_tok_v = [t for t in out_tok if t is not None]
    in_tok_v = [t for t in in_tok if t is not None]
    wall = sum(s.get("seconds", 0.0) for s in segments)
    statuses: dict[str, int] = {}
    for r in chosen.values():
        statuses[r.get("status", "?")] = statuses.get(r.get("status", "?"), 0) + 1

    def pct(q: float) -> float | None:
        return float(np.percentile(lat, q)) if len(lat) else None

    return {
        "rollouts": {
            "effective": len(chosen),
            "attempts": len(recs),
            "by_status": dict(sorted(statuses.items())),
        },
        "retries": int(sum(r.get("retries", 0) for r in recs)),
        "tokens": {
            "prompt_total": int(sum(in_tok_v)) if in_tok_v else None,
            "completion_total": int(sum(out_tok_v)) if out_tok_v else None,
            "completion_mean": float(np.mean(out_tok_v)) if out_tok_v else None,
            "reported_by": len(out_tok_v),
        },
        "latency_s": {"p50": pct(50), "p90": pct(90), "p99": pct(99), "n": len(lat)},
        "response_models": sorted({r["model"] for r in ok if r.get("model")}),
        "system_fingerprints": sorted(
            {r["system_fingerprint"] for r in ok if r.get("system_fingerprint")}
        ),
        "note": "throughput uses the wall time of all run segments (all tasks of the run share it)",
        "wall_seconds": wall,
        "rollouts_per_second": (len(ok) / wall) if wall > 0 else None,
    }


def run_eval(
    config: RunConfig,
    out: str | Path,
    *,
    resume: bool = False,
    progress: bool = True,
    transport: Any = None,
    on_event: Callable[[str], None] | None = None,
) -> RunOutcome:
    """Run (or resume) an evaluation into run directory ``out`` and return its report.

    ``transport`` is the httpx transport seam (tests); ``on_event`` receives one-line status
    messages (the CLI prints them).
    """
    say = on_event or (lambda _msg: None)
    out = Path(out)
    t0 = time.monotonic()

    # ---- 1. everything that can fail before anything is written ----
    existing: RunDir | None = None
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not resume:
            raise UsageError(
                f"{out}: run directory exists; pass --resume to continue it, or choose another --out"
            )
        existing = RunDir.open(out)
        diff = config_diff(existing.manifest.get("measurement", {}), config.measurement())
        if diff:
            raise UsageError(
                f"{out}: --resume refused, the measurement config changed ({'; '.join(diff)}); "
                "restore these settings or start a new run with another --out"
            )
    elif resume:
        raise UsageError(
            f"{out}: nothing to resume (no run directory); drop --resume to start a new run"
        )

    from .grading import make_grader

    resolved = _resolve_tasks(config)
    graders = []
    for spec, _ in resolved:
        g = make_grader(spec.grader)
        g.check_available()
        graders.append(g)
    local = None
    if config.model == "local":
        from .local import LocalServer, LocalServerOptions, check_local_available

        check_local_available()
        local = LocalServer(LocalServerOptions(server_options=dict(config.server_options)))
    elif config.server_options:
        raise UsageError(
            "server_options apply only to model 'local' (the embedded llama.cpp server)"
        )
    if local is None and not config.endpoints:
        raise UsageError(
            "no endpoint: pass --endpoint http://HOST:PORT/v1 (repeatable), or --model local"
        )
    if config.api_key_env is not None:
        read_api_key(config.api_key_env)  # refuse a missing or unusable key before any request

    with contextlib.ExitStack() as stack:
        if local is not None:
            say("starting the embedded llama.cpp server ...")
            stack.enter_context(local)
            base_urls = (local.base_url,)
            model_name = "SmolLM2-135M-Instruct.Q4_1"
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
        return asyncio.run(
            _run_async(
                config,
                out,
                existing,
                resolved,
                graders,
                endpoint,
                local,
                transport,
                progress,
                say,
                t0,
            )
        )


async def _run_async(
    config: RunConfig,
    out: Path,
    existing: RunDir | None,
    resolved: list[tuple[Any, list[Any]]],
    graders: list[Any],
    endpoint: EndpointConfig,
    local: Any,
    transport: Any,
    progress: bool,
    say: Callable[[str], None],
    t0: float,
) -> RunOutcome:
    from .grading import GradingPool

    async with Client(endpoint, transport=transport) as client:
        try:
            models = await client.models()
            models_error = None
        except Exception as exc:  # a server without /v1/models still serves completions
            models, models_error = [], redact(f"{type(exc).__name__}: {exc}")

        # ---- 2. tasks, prompts, provenance ----
        tasks: list[_Task] = []
        for (spec, problems), grader in zip(resolved, graders):
            prompts = {p.problem_id: _prompt_as_sent(p, config) for p in problems}
            refs = {p.problem_id: p.reference for p in problems}
            sampling = _sampling(spec.sampling, config)
            hashes = {pid: content_hash(prompts[pid], refs[pid]) for pid in prompts}
            settings = _task_settings(spec, config, grader, hashes, sampling)
            files = (existing or RunDir(out)).task(spec.name)
            tasks.append(_Task(spec, files, problems, prompts, refs, sampling, grader, settings))

        provenance = {
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
        if existing is None:
            run = RunDir.create(
                out,
                {
                    "format": "rolleval-run",
                    "schema_version": SCHEMA_VERSION,
                    "run_id": uuid.uuid4().hex,
                    "created_at": _now(),
                    "rolleval_version": __version__,
                    "status": "running",
                    "measurement": config.measurement(),
                    "throughput": {k: v for k, v in config.throughput().items()},
                    "config": {"model": config.model, "n_rollouts": config.n, "seed": config.seed},
                    "tasks": [t.spec.name for t in tasks],
                    "provenance": provenance,
                    "segments": [],
                },
            )
            for t in tasks:
                _write_task_files(t)
        else:
            run = existing
            for t in tasks:
                stored = t.files.read_task()
                changed = config_diff(
                    {
                        "problem_hashes": stored.get("problem_hashes"),
                        "grader": stored.get("grader"),
                    },
                    {
                        "problem_hashes": t.settings["problem_hashes"],
                        "grader": t.settings["grader"],
                    },
                )
                if changed:
                    raise UsageError(
                        f"{t.files.task_json}: --resume refused, task {t.spec.name!r} changed since the run started "
                        f"({len(changed)} differences, e.g. {changed[0][:160]}); start a new run with another --out"
                    )
            run.manifest["status"] = "running"
            run.manifest["throughput"] = config.throughput()
            run.manifest.setdefault("provenance_resumes", []).append(provenance)
            run.write_manifest()

        # ---- 3. plan: which rollouts are still needed ----
        work: list[tuple[int, str, int, int]] = []  # (task position, problem id, index, attempt)
        states: list[dict[str, dict[int, dict[str, Any]]]] = []
        to_grade: list[tuple[int, str]] = []
        for ti, t in enumerate(tasks):
            with collect_warnings():
                have = read_jsonl(t.files.rollouts, what="rollout records", missing_ok=True).records
            chosen, _ = effective_rollouts(have)
            attempts: dict[tuple[str, int], int] = {}
            for r in have:
                key = (r["problem_id"], r["index"])
                attempts[key] = max(attempts.get(key, 0), int(r.get("attempt", 1)))
            state: dict[str, dict[int, dict[str, Any]]] = {}
            need_problems: set[str] = set()
            for pid in sorted(t.prompts):
                state[pid] = {}
                for j in range(config.n):
                    r = chosen.get((pid, j))
                    if r is not None and r.get("status") not in _RETRY_STATUSES:
                        state[pid][j] = r
                    else:
                        work.append((ti, pid, j, attempts.get((pid, j), 0) + 1))
                        need_problems.add(pid)
            states.append(state)
            # judgements: keep only problems that are final and fully judged
            with collect_warnings():
                jrecs = read_jsonl(
                    t.files.judgements, what="judgement records", missing_ok=True
                ).records
            judged: dict[str, dict[int, dict[str, Any]]] = {}
            for rec in jrecs:
                judged.setdefault(rec.get("problem_id"), {}).setdefault(rec.get("index"), rec)
            keep_lines: list[bytes] = []
            rewrite = False
            for pid in sorted(t.prompts):
                js = judged.get(pid, {})
                complete = (
                    pid not in need_problems
                    and set(js) == set(range(config.n))
                    and all(js[j].get("status") == state[pid][j].get("status") for j in js)
                )
                if complete:
                    keep_lines += [orjson.dumps(js[j]) + b"\n" for j in sorted(js)]
                else:
                    rewrite = rewrite or bool(js)
                    if pid not in need_problems:
                        to_grade.append((ti, pid))
            if rewrite or sum(len(v) for v in judged.values()) != len(keep_lines):
                atomic_write_bytes(t.files.judgements, b"".join(keep_lines))

        total = len(work)
        if existing is not None:
            say(f"resuming {out}: {total} rollouts to request, {len(to_grade)} problems to grade")
        bar = _Progress(total, enabled=progress)
        appenders = [JsonlAppender(t.files.rollouts) for t in tasks]
        j_appenders = [JsonlAppender(t.files.judgements) for t in tasks]
        pools = [GradingPool(t.grader, workers=config.grading_workers) for t in tasks]
        remaining: list[dict[str, int]] = []
        for ti, _t in enumerate(tasks):
            counts: dict[str, int] = {}
            for wti, pid, _, _ in work:
                if wti == ti:
                    counts[pid] = counts.get(pid, 0) + 1
            remaining.append(counts)
        grading: list[asyncio.Future[Any]] = []
        segment = {"started_at": _now(), "requested": total}
        stats: dict[str, Any] = {
            "completed": 0,
            "failed": 0,
            "last_error": None,
            "streak": 0,
            "tripped": False,
            "stopping": False,
        }
        # consecutive failed rollouts (each after its own retries) that stop a run
        breaker = max(_BREAKER_MIN, 2 * endpoint.concurrency)
        seg_start = time.monotonic()

        def grade(ti: int, pid: str) -> None:
            t = tasks[ti]
            rolls = states[ti][pid]
            items = [
                (j, r.get("text") or "")
                for j, r in sorted(rolls.items())
                if r.get("status") == "ok"
            ]
            fut = asyncio.wrap_future(pools[ti].submit(t.references[pid], items))

            def done(f: asyncio.Future[Any]) -> None:
                if f.cancelled() or stats["stopping"]:
                    return  # a result after cancellation is never stored: resume regrades it
                verdicts = f.result() if f.exception() is None else None
                lines = []
                for j, r in sorted(rolls.items()):
                    v = None
                    if r.get("status") == "ok":
                        if verdicts is None:
                            from .grading import Verdict

                            v = Verdict.failed(f"grading failed: {f.exception()}")
                        else:
                            v = verdicts.get(j)
                    lines.append(orjson.dumps(make_judgement(r, v, t.grader.identity)) + b"\n")
                j_appenders[ti].write_many(lines)

            fut.add_done_callback(done)
            grading.append(fut)

        # A problem's rollouts go out back to back (a server's prompt cache is then reused).
        # With server-side n, one request carries all of a problem's pending rollouts.
        batches: list[list[tuple[int, str, int, int]]] = []
        for item in work:
            if config.server_n and batches and batches[-1][0][:2] == item[:2]:
                batches[-1].append(item)
            else:
                batches.append([item])
        queue: asyncio.Queue[list[tuple[int, str, int, int]]] = asyncio.Queue()
        for batch in batches:
            queue.put_nowait(batch)

        def record_outcome(
            ti: int, pid: str, j: int, attempt: int, seed: int, comp: Completion
        ) -> None:
            record = comp.to_record(problem_id=pid, index=j, seed=seed, attempt=attempt)
            appenders[ti].write(dump_record(record))
            failed = comp.status != "ok"
            stats["completed" if not failed else "failed"] += 1
            if failed:
                stats["last_error"] = comp.error
                stats["streak"] += 1
                if stats["streak"] >= breaker and not queue.empty():
                    # Every recent rollout failed after its retries: the endpoint is down.
                    # Stop instead of retrying thousands of rollouts against it.
                    stats["tripped"] = True
                    while not queue.empty():
                        queue.get_nowait()
            else:
                stats["streak"] = 0
            bar.update(error=failed)
            states[ti][pid][j] = record.model_dump(exclude_none=True)
            remaining[ti][pid] -= 1
            if remaining[ti][pid] == 0:
                grade(ti, pid)

        async def worker() -> None:
            while True:
                try:
                    batch = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                ti, pid = batch[0][0], batch[0][1]
                t = tasks[ti]
                seeds = [derive_seed(config.seed, pid, j) for _, _, j, _ in batch]
                if len(batch) == 1:
                    comps = [await client.complete(t.prompts[pid], t.sampling, seed=seeds[0])]
                else:
                    comps = await client.complete_n(t.prompts[pid], t.sampling, seeds=seeds)
                    seeds = [seeds[0]] * len(
                        seeds
                    )  # one request, one seed sent: record what was sent
                for (_, _, j, attempt), seed, comp in zip(batch, seeds, comps):
                    record_outcome(ti, pid, j, attempt, seed, comp)

        status = "interrupted"
        try:
            for ti, pid in to_grade:
                grade(ti, pid)
            n_workers = min(endpoint.concurrency, max(total, 1))
            await asyncio.gather(*(worker() for _ in range(n_workers)))
            if grading:
                await asyncio.gather(*grading, return_exceptions=True)
            status = "completed"
        finally:
            stats["stopping"] = True
            for f in grading:
                f.cancel()
            for p in pools:
                p.close(cancel_pending=status != "completed")
            for a in appenders + j_appenders:
                a.close()
            segment.update(
                ended_at=_now(),
                seconds=time.monotonic() - seg_start,
                completed=stats["completed"],
                failed=stats["failed"],
                status=status,
            )
            run.manifest.setdefault("segments", []).append(segment)
            run.manifest["status"] = status
            run.write_manifest()

    # ---- 4. profile, report, final status ----
    for t in tasks:
        atomic_write_json(t.files.profile, _profile(t.files, run.manifest["segments"]))
    where = ", ".join(endpoint.base_urls)
    if stats["tripped"]:
        run.manifest["status"] = "interrupted"
        run.write_manifest()
        raise RunError(
            f"{out}: stopped after {stats['streak']} consecutive rollouts failed with no success "
            f"(last error: {stats['last_error']}); check that the server at {where} is up and serves "
            f"model {endpoint.model!r}, then rerun with --resume (completed rollouts are kept)"
        )
    if total > 0 and stats["completed"] == 0:
        run.manifest["status"] = "failed"
        run.write_manifest()
        raise RunError(
            f"{out}: every one of the {total} rollouts failed (last error: {stats['last_error']}); "
            f"check that the server at {where} is up and serves model {endpoint.model!r}, then rerun with --resume"
        )
    from .api import report_run

    rep = report_run(run)
    return RunOutcome(
        path=out,
        report=rep.report,
        requested=total,
        completed=stats["completed"],
        failed=stats["failed"],
        resumed=existing is not None,
        seconds=time.monotonic() - t0,
    )
