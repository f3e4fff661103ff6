"""Running untrusted Python tests in isolated child processes (parent side).

Each execution starts one process, ``<python> -S -s -P _sandbox_boot.py``, with an explicit
minimal environment (``PATH``, ``LANG``, ``HOME`` and ``TMPDIR`` = its private folder,
``PYTHONHASHSEED=0``, ``PYTHONDONTWRITEBYTECODE=1``; nothing of rolleval's own, so not in
``/proc/self/environ`` either), in a new session (its own process group). The child
(:mod:`._sandbox_boot`, whose docstring has the details) enters new mount, PID, network,
IPC and UTS namespaces, builds a root holding only read-only ``/usr`` and the Python
installation, and runs the program and the tests in two processes: the **candidate**
(the program; nobody on the host, no capabilities, resource limits, its own PID namespace,
a private ``/tmp``) and the **harness** (the tests and the result channel, which the
candidate cannot reach), which calls the program's functions through a
data-only channel. The judgement is the harness's report, read from a file descriptor
only the harness holds.

At the wall-clock deadline the parent SIGKILLs the process group once and reaps the child
(the PID namespace dies with its first process): the kill path costs milliseconds, not
seconds. Without isolation (``--unsafe-exec``) it then kills what is left in the group
for at most half a second.

What the child writes that rolleval stores (the stderr tail, messages) is redacted of every
registered secret (:mod:`rolleval._sanitize`) before it is cut.

:func:`isolation_problem` probes once per process whether this works here (namespaces can
be disabled by the kernel, a container's seccomp profile or AppArmor).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .._sanitize import redact, redact_tail

__all__ = ["ExecLimits", "ExecOutcome", "isolation_problem", "run_tests"]

_BOOT = Path(__file__).with_name("_sandbox_boot.py")
#: Namespaces the boot process enters (``CLONE_NEWNS | NEWPID | NEWNET | NEWIPC | NEWUTS``;
#: a new user namespace too when rolleval does not run as root).
_NAMESPACES = 0x00020000 | 0x20000000 | 0x40000000 | 0x08000000 | 0x04000000
_TAIL = 2000
_SIGNALS = {int(s) for s in signal.Signals}
#: After the wall-clock limit: how long the kill path may wait for the group to be gone.
_KILL_WAIT_S = 0.5


@dataclass(frozen=True)
class ExecLimits:
    """Limits of one execution."""

    timeout_s: float = 10.0
    """Wall-clock seconds before the process group is killed."""
    cpu_s: int = 10
    """CPU seconds (``RLIMIT_CPU``)."""
    memory_mb: int = 1024
    """Address space (``RLIMIT_AS``)."""
    processes: int = 32
    """Processes of the sandbox (``RLIMIT_NPROC``; see the module notes for root)."""
    file_mb: int = 16
    """Largest file the code may write (``RLIMIT_FSIZE``), output included."""
    tmp_mb: int = 64
    """Size of the private ``/tmp``."""

    def to_json(self) -> dict[str, Any]:
        return {
            "cpu_s": self.cpu_s,
            "memory_mb": self.memory_mb,
            "processes": self.processes,
            "file_mb": self.file_mb,
            "tmp_mb": self.tmp_mb,
        }


@dataclass(frozen=True)
class ExecOutcome:
    """What happened to one execution.

    ``failure`` is ``None`` (every test passed), ``"syntax"``, ``"assertion"``,
    ``"timeout"`` (wall clock or CPU time), ``"crash"`` (an exception other than an
    assertion, a signal, or an exit before the harness reported) or ``"sandbox"`` (the
    isolation could not be set up: a harness failure, never the code's fault).
    """

    failure: str | None
    tests_run: int | None
    tests_passed: int | None
    message: str | None
    isolated: bool
    seconds: float
    stderr: str = ""

    @property
    def passed(self) -> bool:
        return self.failure is None

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary (stored as the judgement's ``judge_raw``)."""
        out: dict[str, Any] = {
            "failure": self.failure,
            "tests_run": self.tests_run,
            "tests_passed": self.tests_passed,
            "isolated": self.isolated,
            "seconds": round(self.seconds, 3),
        }
        if self.message:
            out["message"] = self.message
        if self.stderr:
            out["stderr_tail"] = self.stderr[-_TAIL:]
        return out


def _interpreter() -> str:
    """The real interpreter behind ``sys.executable`` (not a virtual environment's link):
    the sandbox mounts its installation, and the boot script needs the standard library
    only."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(base)


def _command() -> list[str]:
    # -S -s: no site-packages; -P (3.11+): not the script's folder on sys.path. Not -E/-I:
    # the environment is rolleval's own minimal one, and PYTHONHASHSEED must apply.
    flags = ["-S", "-s"] + (["-P"] if sys.version_info >= (3, 11) else [])
    return [_interpreter(), *flags, str(_BOOT)]


def _environment(home: str) -> dict[str, str]:
    """The child's whole environment: nothing of rolleval's own reaches it."""
    return {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": home,
        "TMPDIR": home,
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's process group once (its PID namespace goes with its first
    process)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _empty_group(pgid: int, wait_s: float = _KILL_WAIT_S) -> None:
    """Unsafe mode (no PID namespace): SIGKILL what is left in the group, for at most
    ``wait_s`` (members that left the group, or zombies not yet reaped, are not waited
    for)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        if time.monotonic() >= deadline:
            return
        time.sleep(0.01)


def _read(fh: IO[bytes], limit: int = 1 << 20) -> str:
    """The first ``limit`` bytes of ``fh``."""
    fh.seek(0)
    return fh.read(limit).decode("utf-8", errors="replace")


def _read_end(fh: IO[bytes], limit: int = 1 << 20) -> str:
    """The last ``limit`` bytes of ``fh`` (what output's tail is cut from)."""
    size = fh.seek(0, os.SEEK_END)
    fh.seek(max(0, size - limit))
    return fh.read(limit).decode("utf-8", errors="replace")


def _redacted_tail(text: str, size: int = _TAIL) -> str:
    """The last ``size`` characters of ``text`` (output read to its very end), every
    registered secret redacted before the cut, so no secret straddles it."""
    return redact(text)[-size:]


class _Running:
    """One started execution."""

    def __init__(self, solution: str, tests: Sequence[str], limits: ExecLimits, isolate: bool):
        self.limits = limits
        self.isolate = isolate
        # closed in finish(), which every started execution reaches
        self.result = tempfile.TemporaryFile()  # noqa: SIM115
        self.tests = tempfile.TemporaryFile()  # noqa: SIM115
        self.stdout = tempfile.TemporaryFile()  # noqa: SIM115
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self.tests.write(json.dumps(list(tests)).encode("utf-8"))
        self.tests.flush()
        self.tests.seek(0)
        self.workdir = None if isolate else tempfile.mkdtemp(prefix="rolleval-exec-")
        job = {
            "isolate": isolate,
            "namespaces": _NAMESPACES,
            "workdir": self.workdir,
            "result_fd": self.result.fileno(),
            "tests_fd": self.tests.fileno(),
            "solution": solution,
            "limits": limits.to_json(),
        }
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            _command(),
            stdin=subprocess.PIPE,
            stdout=self.stdout,
            stderr=self.stderr,
            pass_fds=(self.result.fileno(), self.tests.fileno()),
            start_new_session=True,
            cwd=self.workdir or "/",
            env=_environment(self.workdir or "/tmp"),
        )
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(job).encode("utf-8"))
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        self.deadline = self.started + limits.timeout_s

    def finish(self) -> ExecOutcome:
        """Wait for the child (killing its group at the deadline) and read its report."""
        timed_out = False
        try:
            code = self.proc.wait(timeout=max(0.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(self.proc)
            code = self.proc.wait()
        if not self.isolate:
            # No PID namespace: what the code left in the group. (Isolated, the killed
            # namespace is torn down by the kernel within milliseconds; its first process's
            # zombie, reparented to the machine's init, would keep a group kill
            # "succeeding": retrying it until the wait ended cost 5 s before.)
            _empty_group(self.proc.pid)
        seconds = time.monotonic() - self.started
        try:
            raw = _read(self.result).strip()
            stderr = _read_end(self.stderr)
        finally:
            for fh in (self.result, self.tests, self.stdout, self.stderr):
                fh.close()
            if self.workdir is not None:
                shutil.rmtree(self.workdir, ignore_errors=True)
        return _outcome(raw, code, timed_out, stderr, seconds, self.isolate)


def _ended(code: int | None) -> tuple[str, str]:
    """Failure kind and message for a candidate process that ended with status ``code``
    before the tests were done."""
    if code == 128 + signal.SIGXCPU:
        return "timeout", "CPU-time limit reached"
    if code is not None and code > 128:
        name = signal.Signals(code - 128).name if code - 128 in _SIGNALS else str(code - 128)
        return "crash", f"killed by signal {name} before reporting its tests"
    shown = "?" if code is None else code
    return "crash", f"the program ended (exit {shown}) before reporting its tests"


def _lines(raw: str) -> list[dict[str, Any]]:
    lines = []
    for line in raw.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            lines.append(item)
    return lines


def _outcome(
    raw: str, code: int, timed_out: bool, stderr: str, seconds: float, isolated: bool
) -> ExecOutcome:
    tail = _redacted_tail(stderr)

    def make(
        failure: str | None,
        message: str | None,
        run: int | None = None,
        passed: int | None = None,
    ) -> ExecOutcome:
        message = redact_tail(message) if message else message  # cut at its end
        return ExecOutcome(failure, run, passed, message, isolated, seconds, tail)

    lines = _lines(raw)
    errors = [item["sandbox_error"] for item in lines if "sandbox_error" in item]
    if errors:
        return make("sandbox", f"sandbox setup failed: {errors[0]}")
    if not any(item.get("ready") for item in lines):
        if timed_out:
            return make("sandbox", "the sandbox did not start before the wall-clock limit")
        short = " ".join(stderr.split())[-300:]
        return make("sandbox", f"the sandbox did not start (exit {code}): {short}")
    harness = [item["harness_error"] for item in lines if "harness_error" in item]
    if harness:
        return make("sandbox", f"the test harness failed: {harness[0]}")
    reports = [item for item in lines if "failure" in item]
    report = reports[-1] if reports else {}
    statuses = [item["candidate_status"] for item in lines if "candidate_status" in item]
    candidate = statuses[-1] if statuses and isinstance(statuses[-1], int) else None
    run, passed = report.get("tests_run"), report.get("tests_passed")
    if timed_out:
        return make("timeout", "killed at the wall-clock limit", run, passed)
    if not report:  # the harness itself was killed (its CPU time, memory)
        failure, message = _ended(code)
        return make(failure, message, run, passed)
    if report.get("candidate_ended"):
        failure, message = _ended(candidate)
        return make(failure, message, run, passed)
    kind = report.get("failure")
    if kind not in (None, "syntax", "assertion", "crash"):
        return make("crash", f"unexpected harness report {raw[:200]!r}")
    return make(kind, report.get("message"), run, passed)


def run_tests(
    jobs: Sequence[tuple[str, Sequence[str]]],
    limits: ExecLimits | None = None,
    *,
    isolate: bool = True,
    parallel: int = 4,
) -> list[ExecOutcome]:
    """Run each ``(solution, tests)`` job in its own child process; one outcome per job.

    The solution runs first, then each test snippet in order in the same namespace,
    stopping at the first failure. Up to ``parallel`` children run at once. ``isolate=False``
    runs without namespaces (limits, private folder and the group kill still apply):
    only for trusted code, see ``--unsafe-exec``.
    """
    limits = limits or ExecLimits()
    outcomes: list[ExecOutcome | None] = [None] * len(jobs)
    running: list[tuple[int, _Running]] = []
    queue = list(enumerate(jobs))
    queue.reverse()
    while queue or running:
        while queue and len(running) < max(1, parallel):
            i, (solution, tests) = queue.pop()
            try:
                running.append((i, _Running(solution, tests, limits, isolate)))
            except OSError as exc:
                outcomes[i] = ExecOutcome(
                    "sandbox", None, None, f"could not start: {exc}", isolate, 0.0
                )
        still: list[tuple[int, _Running]] = []
        now = time.monotonic()
        for i, job in running:
            if job.proc.poll() is not None or now >= job.deadline:
                outcomes[i] = job.finish()
            else:
                still.append((i, job))
        if len(still) == len(running):
            time.sleep(0.005)
        running = still
    return [o for o in outcomes if o is not None]


@functools.lru_cache(maxsize=1)
def isolation_problem() -> str | None:
    """``None`` when isolated execution works here, else why not (one line).

    Runs a probe program that must find itself without network and unable to write
    outside its folder.
    """
    if not sys.platform.startswith("linux"):
        return f"isolated execution needs Linux namespaces (this is {sys.platform})"
    probe = (
        "import socket, os\n"
        "try:\n"
        "    socket.create_connection(('127.0.0.1', 9), timeout=1)\n"
        "    raise SystemExit('network reachable')\n"
        "except OSError as exc:\n"
        "    assert 'network reachable' not in str(exc)\n"
        f"try:\n    open({str(_BOOT.parent / '.rolleval-probe')!r}, 'w')\n"
        "    raise SystemExit('outside write allowed')\n"
        "except OSError:\n    pass\n"
        "open('probe.txt', 'w').write('ok')\n"
    )
    try:
        (outcome,) = run_tests([(probe, [])], ExecLimits(timeout_s=20.0), isolate=True)
    finally:
        (_BOOT.parent / ".rolleval-probe").unlink(missing_ok=True)
    if outcome.failure is None:
        return None
    detail = outcome.message or outcome.failure
    return f"user namespaces are not usable here ({' '.join(detail.split())[:300]})"
