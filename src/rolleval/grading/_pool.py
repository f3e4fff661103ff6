"""Grading many problems: in the calling thread, or in a pool of worker processes.

Why processes: math-verify times out with ``signal.alarm``, which only works in the main
thread of a process, and a stuck sympy simplification cannot be interrupted from another
thread. Each worker of :class:`GradingPool` is a one-process
:class:`concurrent.futures.ProcessPoolExecutor` (``spawn`` start method) that runs the
grader in its main thread; the parent keeps a per-problem deadline and, when it passes,
kills that worker and starts a fresh one. A slow problem thus costs one worker restart and
never stalls or poisons the others. The same holds from any thread of the parent: a grader
that needs the main thread (``Grader.needs_main_thread``: math) asked to grade in the calling
thread (``workers=0``) from another thread (a notebook, a web service, a test harness)
grades in one worker process instead, so its judgements and its time bounds are those of the
main thread.

Workers never outlive the process that started them: each sets ``PR_SET_PDEATHSIG``
(SIGKILL, Linux) in its initializer, so a ``kill -9`` of rolleval takes its workers, and with
them the multiprocessing resource tracker (which exits when the last holder of its pipe is
gone). Workers ignore SIGINT and SIGTERM: Ctrl-C reaches the whole terminal process group,
and stopping the workers is the parent's job (it kills them when it closes the pool). Workers
started from the main thread (the usual case: the first ``submit``) inherit the ignored
dispositions from the moment they exec; a replacement started by the dispatcher thread
ignores them once its initializer runs.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from .._sanitize import registered_forms
from ..errors import MissingDependencyError, RollevalError, RunError, UsageError
from ._protocol import Grader, Judgement, check_rollouts, describe_exception, failed_all

__all__ = ["GradingPool", "default_workers", "grade_problems"]

#: Upper bound of the default worker count (each worker imports sympy: ~100 MB).
MAX_DEFAULT_WORKERS = 8

# --------------------------------------------------------------------------- worker side

_WORKER_GRADER: Grader | None = None


def _init_worker(parent_pid: int, secret_forms: tuple[str, ...] = ()) -> None:
    """Initializer of every worker process: die with the parent, leave signals to it, and
    redact the secrets the parent registered (what a grader returns, e.g. the output of
    model-written code, is redacted like everything else rolleval writes)."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    _die_with_parent(parent_pid)
    if secret_forms:
        from .._sanitize import register_forms

        register_forms(secret_forms)


def _die_with_parent(parent_pid: int) -> None:
    """Have the kernel SIGKILL this process when its parent dies (Linux ``PR_SET_PDEATHSIG``;
    elsewhere nothing), and exit now if the parent is already gone.

    The death signal is tied to the parent *thread* that started this process, so the pool
    starts its workers from the main thread (which lives as long as the process) or from its
    own dispatcher thread (which outlives them).
    """
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(Exception):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:
        os._exit(1)


def _start_worker(grader: Grader) -> int:
    """First task of every worker: keep the grader, check and warm it up."""
    global _WORKER_GRADER
    grader.check_available()
    grader.warm_up()
    _WORKER_GRADER = grader
    return os.getpid()


def _grade_in_worker(reference: Any, rollouts: list[tuple[int, str]]) -> dict[int, Judgement]:
    if _WORKER_GRADER is None:  # pragma: no cover - _start_worker always runs first
        raise RuntimeError("grading worker used before it was started")
    return grade_safely(_WORKER_GRADER, reference, rollouts)


def grade_safely(
    grader: Grader, reference: Any, rollouts: Sequence[tuple[int, str]]
) -> dict[int, Judgement]:
    """``grader.grade_problem`` with the guarantees callers rely on.

    An exception of the grader (other than a :class:`~rolleval.errors.RollevalError`, which
    is a usage or setup error and propagates) gives every rollout ``grader_error =
    "grader crashed: <Type>: <message>"``. A rollout the grader left without a
    :class:`Judgement` gets ``grader_error = "grader returned no judgement for this rollout"``.
    The result holds exactly the given indices.
    """
    try:
        judgements = grader.grade_problem(reference, rollouts)
    except RollevalError:
        raise
    except Exception as exc:
        return failed_all(rollouts, f"grader crashed: {describe_exception(exc)}")
    if not isinstance(judgements, dict):
        judgements = {}
    result = {}
    for index, _ in rollouts:
        judgement = judgements.get(index)
        if not isinstance(judgement, Judgement):
            judgement = Judgement.failed("grader returned no judgement for this rollout")
        result[index] = judgement
    return result


# --------------------------------------------------------------------------- parent side


def default_workers(grader: Grader) -> int:
    """Worker processes used when ``workers=None``: ``min(cpu count, 8)`` for graders that
    need a process of their own (``grader.needs_process``), else 0 (the calling thread)."""
    if not grader.needs_process:
        return 0
    return max(1, min(MAX_DEFAULT_WORKERS, os.cpu_count() or 1))


@dataclass(frozen=True)
class _PoolOptions:
    workers: int
    timeout: float
    startup_timeout: float


def _validate_grading_pool(
    grader: object, workers: object, timeout: object, startup_timeout: object
) -> _PoolOptions:
    if not isinstance(grader, Grader):
        raise UsageError(
            f"grader must be a rolleval.grading.Grader (see make_grader); got {type(grader).__name__}"
        )
    for name, value in (("timeout", timeout), ("startup_timeout", startup_timeout)):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value <= 0
        ):
            raise UsageError(f"{name} must be a finite number of seconds > 0; got {value!r}")
    if workers is None:
        workers = default_workers(grader)
    elif isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise UsageError(
            f"workers must be None (default), 0 (grade in the calling thread) or a number of "
            f"worker processes >= 1; got {workers!r}"
        )
    if workers == 0 and _needs_another_thread(grader):
        workers = 1
    if workers:
        _check_picklable(grader)
    return _PoolOptions(int(workers), float(timeout), float(startup_timeout))  # type: ignore[arg-type]


def _needs_another_thread(grader: Grader) -> bool:
    """True when ``grader`` cannot grade in the calling thread: it needs the main thread
    (math-verify's ``signal.alarm``) and this is another one."""
    return grader.needs_main_thread and threading.current_thread() is not threading.main_thread()


def _check_picklable(grader: Grader) -> None:
    try:
        pickle.dumps(grader)
    except Exception as exc:
        hint = (
            "define it at module level"
            if grader.needs_main_thread
            else "define it at module level or use workers=0"
        )
        raise UsageError(
            f"grader {grader!r} cannot be sent to worker processes ({describe_exception(exc)}); "
            f"{hint}"
        ) from exc


@dataclass
class _Task:
    reference: Any
    rollouts: list[tuple[int, str]]
    future: Future[dict[int, Judgement]]


_STARTING, _IDLE, _BUSY = "starting", "idle", "busy"


class _Slot:
    """One worker process: a one-process executor, started with the grader."""

    def __init__(self, grader: Grader, context: Any, on_done: Any) -> None:
        self.executor = ProcessPoolExecutor(
            max_workers=1,
            mp_context=context,
            initializer=_init_worker,
            initargs=(os.getpid(), registered_forms()),
        )
        self.created = time.monotonic()
        self.state = _STARTING
        self.task: _Task | None = None
        self.inner: Future[dict[int, Judgement]] | None = None
        self.deadline = math.inf
        self.ready: Future[int] = self.executor.submit(_start_worker, grader)
        self.ready.add_done_callback(on_done)

    def kill(self) -> None:
        """Kill the worker process now and let the executor go."""
        kill_workers = getattr(self.executor, "kill_workers", None)  # Python >= 3.14
        if callable(kill_workers):
            with contextlib.suppress(Exception):
                kill_workers()
        else:
            # CPython < 3.14 has no public way to stop a running task's process.
            processes = getattr(self.executor, "_processes", None) or {}
            for process in list(processes.values()):
                with contextlib.suppress(Exception):  # already dead
                    process.kill()
        self.executor.shutdown(wait=False, cancel_futures=True)


class GradingPool:
    """Grades problems submitted one at a time; results arrive as futures.

    Parameters
    ----------
    grader
        The grader; it is pickled once into each worker process (so it must be defined
        at module level), where it runs in the main thread.
    workers
        ``None`` (default): :func:`default_workers`. ``0``: grade synchronously in the
        calling thread inside :meth:`submit` (no per-problem timeout: only the grader's own
        timeouts apply, math-verify's 5 s per operation for the math grader). A grader that
        needs the main thread (``needs_main_thread``: math) cannot grade in another thread,
        so a pool made there, or used from there, grades in one worker process instead
        (``workers`` becomes 1, and ``timeout`` applies): the same judgements, still
        bounded in time. ``n >= 1``: that many worker processes.
    timeout
        Seconds one problem may take in a worker (counted from when a warm worker takes
        it). Past it the worker is killed and restarted, and every rollout of the problem
        gets ``grader_error = "timeout after <timeout>s"`` (never a silent wrong answer).
    startup_timeout
        Seconds a new worker may take to start (spawn, imports, warm-up).

    Behaviour
    ---------
    * :meth:`submit` returns a :class:`concurrent.futures.Future` of ``{index: Judgement}``;
      from asyncio, ``await asyncio.wrap_future(pool.submit(reference, rollouts))``.
    * A grader exception gives every rollout of that problem a ``grader_error`` (see
      :func:`grade_safely`); a worker process that dies (segfault, ``os._exit``, out of
      memory) gives ``grader_error = "grader worker process died: ..."`` and is replaced.
    * A :class:`~rolleval.errors.RollevalError` raised by the grader (a usage error) is set
      on the future. A worker that cannot start (missing dependency, unpicklable grader)
      makes the pool unusable: every pending and later future fails with that error
      (:class:`~rolleval.errors.MissingDependencyError` or
      :class:`~rolleval.errors.RunError`).
    * Workers start on the first :meth:`submit`. :meth:`close` (or leaving a ``with``
      block) waits for submitted problems, then stops the workers.
    """

    def __init__(
        self,
        grader: Grader,
        *,
        workers: int | None = None,
        timeout: float = 30.0,
        startup_timeout: float = 120.0,
    ) -> None:
        options = _validate_grading_pool(grader, workers, timeout, startup_timeout)
        grader.check_available()
        self.grader = grader
        self.workers = options.workers
        self.timeout = options.timeout
        self.startup_timeout = options.startup_timeout
        # State below is guarded by _lock. Worker callbacks only set _wakeup, so no thread
        # ever waits for _lock while holding a lock of an executor.
        self._lock = threading.RLock()
        self._wakeup = threading.Event()
        self._pending: deque[_Task] = deque()
        self._slots: list[_Slot] = []
        self._thread: threading.Thread | None = None
        self._closed = False
        self._abort = False
        self._failure: RollevalError | None = None
        self._context = multiprocessing.get_context("spawn")

    # ---------------------------------------------------------------- public

    def submit(
        self, reference: Any, rollouts: Iterable[tuple[int, str]]
    ) -> Future[dict[int, Judgement]]:
        """Grade the rollouts of one problem; the future gives ``{index: Judgement}``.

        ``rollouts`` are ``(index, text)`` pairs (checked here: a bad pair raises
        :class:`~rolleval.errors.UsageError` at once).
        """
        checked = check_rollouts(rollouts)
        future: Future[dict[int, Judgement]] = Future()
        failure: RollevalError | None = None
        with self._lock:
            if self._closed:
                raise UsageError("this GradingPool is closed; create a new one")
            if checked and self.workers == 0 and _needs_another_thread(self.grader):
                _check_picklable(self.grader)
                self.workers = 1  # see the class docstring, ``workers``
            queued = bool(checked) and self.workers > 0
            if queued:
                failure = self._failure
                if failure is None:
                    self._pending.append(_Task(reference, checked, future))
                    if self._thread is None:
                        self._start()
        if not checked:
            future.set_result({})
        elif not queued:
            future.set_running_or_notify_cancel()
            try:
                future.set_result(grade_safely(self.grader, reference, checked))
            except BaseException as exc:
                future.set_exception(exc)
        elif failure is not None:
            future.set_exception(_copy_error(failure))
        else:
            self._wakeup.set()
        return future

    def close(self, *, cancel_pending: bool = False) -> None:
        """Stop the pool. By default wait for every submitted problem first; with
        ``cancel_pending`` cancel queued problems and abandon running ones (their futures
        fail with :class:`~rolleval.errors.RunError`). Idempotent."""
        cancelled: list[_Task] = []
        with self._lock:
            self._closed = True
            if cancel_pending:
                self._abort = True
                cancelled = list(self._pending)
                self._pending.clear()
            thread = self._thread
        self._wakeup.set()
        for task in cancelled:
            task.future.cancel()
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def __enter__(self) -> GradingPool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close(cancel_pending=exc_type is not None)

    def __repr__(self) -> str:
        return f"GradingPool({self.grader!r}, workers={self.workers}, timeout={self.timeout:g})"

    # ---------------------------------------------------------------- dispatcher

    def _start(self) -> None:
        # The death signal is tied to the starting thread (see _die_with_parent): workers are
        # started by the main thread, which lives as long as the process, or else by the
        # dispatcher thread, which outlives them.
        if threading.current_thread() is threading.main_thread():
            with _children_ignore_interrupts():
                self._slots = [self._new_slot() for _ in range(self.workers)]
        self._thread = threading.Thread(target=self._run, name="rolleval-grading-pool", daemon=True)
        self._thread.start()

    def _new_slot(self) -> _Slot:
        return _Slot(self.grader, self._context, self._wake)

    def _wake(self, _future: object = None) -> None:
        self._wakeup.set()

    def _run(self) -> None:
        try:
            with self._lock:
                if not self._slots and not self._abort and self._failure is None:
                    self._slots = [self._new_slot() for _ in range(self.workers)]
            while True:
                finished: list[tuple[Future[dict[int, Judgement]], Any]] = []
                self._wakeup.clear()  # before reading the state: no wake-up is lost
                with self._lock:
                    now = time.monotonic()
                    self._harvest(now, finished)
                    self._dispatch(now)
                    busy = any(slot.state == _BUSY for slot in self._slots)
                    done = self._closed and not self._pending and not busy
                    wait = self._next_wakeup(now)
                _resolve(finished)
                if done:
                    break
                self._wakeup.wait(wait)
        except BaseException as exc:  # pragma: no cover - a bug here must not hang callers
            finished = []
            with self._lock:
                self._fail(
                    RunError(f"the grading pool stopped: {describe_exception(exc)}"), finished
                )
            _resolve(finished)
        finally:
            with self._lock:
                slots, self._slots = self._slots, []
            for slot in slots:
                slot.executor.shutdown(wait=True, cancel_futures=True)

    def _next_wakeup(self, now: float) -> float:
        deadlines = [slot.deadline for slot in self._slots if slot.state == _BUSY]
        deadlines += [
            slot.created + self.startup_timeout for slot in self._slots if slot.state == _STARTING
        ]
        return min([1.0, *(max(0.0, deadline - now) for deadline in deadlines)])

    def _harvest(self, now: float, finished: list[tuple[Future[Any], Any]]) -> None:
        """Collect finished, failed and overdue work; replace dead workers (lock held)."""
        slots: list[_Slot] = []
        startup_error: BaseException | None = None
        for slot in self._slots:
            if slot.state == _STARTING:
                if slot.ready.done():
                    error = slot.ready.exception()
                    if error is None:
                        slot.state = _IDLE
                    else:
                        startup_error = startup_error or error
                elif now - slot.created > self.startup_timeout:
                    startup_error = startup_error or RunError(
                        f"a grading worker did not start within {self.startup_timeout:g}s"
                    )
                slots.append(slot)
                continue
            if slot.state != _BUSY:
                slots.append(slot)
                continue
            task, inner = slot.task, slot.inner
            assert task is not None and inner is not None
            if self._abort:
                message = "the grading pool was closed before this problem was graded"
                finished.append((task.future, RunError(message)))
                slot.kill()
                continue
            if inner.done():
                error = inner.exception()
                slot.state, slot.task, slot.inner = _IDLE, None, None
                if error is None:
                    finished.append((task.future, inner.result()))
                elif isinstance(error, BrokenProcessPool):
                    message = f"grader worker process died: {describe_exception(error)}"
                    finished.append((task.future, failed_all(task.rollouts, message)))
                    slot.kill()
                    slot = self._new_slot()
                elif isinstance(error, RollevalError):
                    finished.append((task.future, error))
                else:  # e.g. a result or argument that does not pickle
                    message = f"grader crashed: {describe_exception(error)}"
                    finished.append((task.future, failed_all(task.rollouts, message)))
            elif now >= slot.deadline:
                message = f"timeout after {self.timeout:g}s"
                finished.append((task.future, failed_all(task.rollouts, message)))
                slot.kill()
                slot = self._new_slot()
            slots.append(slot)
        self._slots = slots
        if startup_error is not None:
            self._fail(_startup_error(startup_error), finished)

    def _dispatch(self, now: float) -> None:
        """Give queued problems to idle workers (lock held)."""
        if self._failure is not None or self._abort:
            return
        for slot in self._slots:
            if slot.state != _IDLE:
                continue
            task = None
            while self._pending:
                candidate = self._pending.popleft()
                if candidate.future.set_running_or_notify_cancel():
                    task = candidate
                    break
            if task is None:
                return
            inner = slot.executor.submit(_grade_in_worker, task.reference, task.rollouts)
            slot.state, slot.task, slot.inner = _BUSY, task, inner
            slot.deadline = now + self.timeout
            inner.add_done_callback(self._wake)

    def _fail(self, error: RollevalError, finished: list[tuple[Future[Any], Any]]) -> None:
        """The pool cannot grade: fail queued and running problems with ``error`` (lock held)."""
        self._failure = error
        for task in self._pending:
            if task.future.set_running_or_notify_cancel():
                finished.append((task.future, _copy_error(error)))
        self._pending.clear()
        for slot in self._slots:
            if slot.task is not None:
                finished.append((slot.task.future, _copy_error(error)))
            slot.kill()
        self._slots = []


@contextlib.contextmanager
def _children_ignore_interrupts() -> Iterator[None]:
    """Processes started inside start with SIGINT and SIGTERM ignored (an ignored
    disposition survives exec, so a Ctrl-C during a worker's imports prints nothing).
    Main thread only; the parent's own handlers are back on exit (a signal that arrives in
    those few milliseconds of spawning is ignored by the parent too)."""
    signums = (signal.SIGINT, signal.SIGTERM)
    previous = [signal.getsignal(signum) for signum in signums]
    if any(handler is None for handler in previous):  # set outside Python: leave alone
        yield
        return
    try:
        for signum in signums:
            signal.signal(signum, signal.SIG_IGN)
        yield
    finally:
        for signum, handler in zip(signums, previous):
            signal.signal(signum, handler)


def _startup_error(error: BaseException) -> RollevalError:
    if isinstance(error, RollevalError):
        return error
    return RunError(f"a grading worker could not start: {describe_exception(error)}")


def _copy_error(error: RollevalError) -> RollevalError:
    kind = type(error)
    if kind in (RunError, MissingDependencyError, UsageError):
        return kind(str(error))
    return error


def _resolve(finished: list[tuple[Future[Any], Any]]) -> None:
    """Set results (dicts) or exceptions on futures, outside the lock."""
    for future, outcome in finished:
        if future.done():
            continue
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)


# --------------------------------------------------------------------------- batch API


def grade_problems(
    grader: Grader,
    items: Iterable[tuple[Any, Sequence[tuple[int, str]]]],
    *,
    workers: int | None = None,
    timeout: float = 30.0,
) -> Iterator[dict[int, Judgement]]:
    """Grade many problems; yields ``{index: Judgement}`` per item, in the order of ``items``.

    ``items`` holds ``(reference, rollouts)`` per problem, ``rollouts`` being the
    ``(index, text)`` pairs of its gradable rollouts. ``workers`` and ``timeout`` are those
    of :class:`GradingPool` (``None``: a process pool for the math grader, the calling
    thread otherwise). Items are read lazily, a few per worker ahead of the results.

    Arguments are checked (and ``grader.check_available()`` called) before this returns;
    workers start on the first ``next()`` and stop when the iterator is exhausted or closed.
    """
    pool = GradingPool(grader, workers=workers, timeout=timeout)
    return _graded(pool, items)


def _graded(
    pool: GradingPool, items: Iterable[tuple[Any, Sequence[tuple[int, str]]]]
) -> Iterator[dict[int, Judgement]]:
    window: deque[Future[dict[int, Judgement]]] = deque()
    ahead = 1 if pool.workers == 0 else 2 * pool.workers + 2
    completed = False
    try:
        for position, item in enumerate(items):
            try:
                reference, rollouts = item
            except (TypeError, ValueError):
                raise UsageError(
                    f"grade_problems: item {position} must be a (reference, rollouts) pair"
                ) from None
            window.append(pool.submit(reference, rollouts))
            while len(window) >= ahead:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()
        completed = True
    finally:
        pool.close(cancel_pending=not completed)
