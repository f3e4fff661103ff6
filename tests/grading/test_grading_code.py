"""The code grader and its sandbox: real child processes, real HumanEval/MBPP data."""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from pathlib import Path

import pytest

from conftest import builtin_rows
from rolleval.errors import UsageError
from rolleval.grading import CodeGrader, _code, _sandbox, extract_code, make_grader
from rolleval.grading._sandbox import ExecLimits, isolation_problem, run_tests


def test_isolation_works_here():
    """The suite's machines must support the sandbox (else every code test below fails too)."""
    assert isolation_problem() is None


def _raw(judgement) -> dict:
    return json.loads(judgement.judge_raw)


def test_extract_code():
    reply = "Here:\n```python\nimport math\n```\nthen\n```py\ndef f(x):\n    return x\n```\nDone."
    assert extract_code(reply) == "def f(x):\n    return x"
    assert extract_code("```\nprint(1)\n```") == "print(1)"
    assert extract_code("```bash\nls\n```\nno python here") is None
    assert extract_code("Sure.\n\ndef g():\n    return 2\n") == "def g():\n    return 2"
    assert extract_code("I cannot help with that.") is None
    assert extract_code("```python\ndef h():\n    return 3") == "def h():\n    return 3"  # unclosed


@pytest.mark.parametrize("task", ["humaneval", "mbpp"])
def test_every_canonical_solution_passes(task):
    rows = builtin_rows(task)
    limits = CodeGrader().limits  # the defaults the built-in tasks use
    jobs = [(r["canonical_solution"], r["answer"]) for r in rows]
    outcomes = run_tests(jobs, limits, parallel=2)
    failed = [(r["id"], o.failure, o.message) for r, o in zip(rows, outcomes) if not o.passed]
    assert failed == []
    assert all(o.isolated for o in outcomes)
    assert len(outcomes) == {"humaneval": 164, "mbpp": 500}[task]
    if task == "mbpp":  # one test per assert, all run and passed
        assert [(o.tests_run, o.tests_passed) for o in outcomes] == [
            (len(r["answer"]),) * 2 for r in rows
        ]


def _entry_point(row: dict) -> str:
    if "entry_point" in row:
        return row["entry_point"]
    return re.search(
        r"assert\s+(?:not\s+)?\(?\s*(?:set\()?([A-Za-z_]\w*)\(", row["answer"][0]
    ).group(1)


@pytest.mark.parametrize("task", ["humaneval", "mbpp"])
def test_broken_solutions_fail(task):
    """The canonical solution, then the entry point redefined to return a constant."""
    rows = builtin_rows(task)[::4]
    jobs = []
    for r in rows:
        broken = f"{r['canonical_solution']}\n\ndef {_entry_point(r)}(*args, **kwargs):\n    return 12345\n"
        jobs.append((broken, r["answer"]))
    outcomes = run_tests(jobs, CodeGrader().limits, parallel=2)
    passed = [r["id"] for r, o in zip(rows, outcomes) if o.passed]
    assert passed == []
    assert {o.failure for o in outcomes} <= {"assertion", "crash"}


def _grade(code: str, tests, **options):
    grader = CodeGrader(**{"timeout_s": 3.0, **options})
    return grader.grade_problem(tests, [(0, f"```python\n{code}\n```")])[0]


def test_failure_kinds_and_test_counts():
    tests = ["assert f(1) == 2", "assert f(2) == 4", "assert f(3) == 6"]
    ok = _grade("def f(x):\n    return 2 * x", tests)
    assert ok.correct is True and ok.metrics == {"tests_run": 3.0, "tests_passed": 3.0}
    assert _raw(ok)["failure"] is None and _raw(ok)["isolated"] is True
    wrong = _grade("def f(x):\n    return x + 1", tests)
    assert wrong.correct is False and wrong.metrics == {"tests_run": 2.0, "tests_passed": 1.0}
    assert _raw(wrong)["failure"] == "assertion"
    syntax = _grade("def f(x) return x", tests)
    assert (syntax.correct, _raw(syntax)["failure"], syntax.metrics["tests_run"]) == (
        False,
        "syntax",
        0.0,
    )
    crash = _grade("def f(x):\n    return 1 / 0", tests)
    assert (crash.correct, _raw(crash)["failure"]) == (False, "crash")
    assert "ZeroDivisionError" in _raw(crash)["message"]
    loop = _grade("def f(x):\n    while True:\n        pass", tests, timeout_s=1.0)
    assert (loop.correct, _raw(loop)["failure"]) == (False, "timeout")
    exits = _grade("import os\nos._exit(0)", tests)
    assert (exits.correct, _raw(exits)["failure"]) == (False, "crash")
    none = CodeGrader().grade_problem(tests, [(0, "No idea, sorry.")])[0]
    assert (none.extracted, none.correct, _raw(none)["failure"]) == (None, False, "no_code")
    memory = _grade("x = bytearray(4 * 1024 ** 3)", tests, memory_mb=256)
    assert (memory.correct, _raw(memory)["failure"]) == (False, "crash")
    assert "MemoryError" in _raw(memory)["message"]


def _sandbox_processes(wait_s: float = 5.0) -> list[int]:
    """Sandbox children still alive after at most ``wait_s`` (a killed PID namespace is torn
    down by the kernel asynchronously)."""
    deadline = time.monotonic() + wait_s
    while (alive := _sandbox_processes_now()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def _sandbox_processes_now() -> list[int]:
    """Sandbox children started from this checkout (its own boot script's path), so that
    another checkout's tests running on the same machine are not counted."""
    from rolleval.grading._sandbox import _BOOT

    boot = str(_BOOT).encode()
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if boot in cmd:
                out.append(int(pid))
    return out


def test_hostile_rollouts_are_contained_and_grading_goes_on():
    # outside /tmp (the sandbox has its own /tmp): next to this file, or in /var/tmp when the
    # checkout itself lies under /tmp (a clone in a temporary folder)
    here = Path(__file__).resolve().parent
    under_tmp = here.is_relative_to(Path(tempfile.gettempdir()).resolve())
    target = (Path("/var/tmp") if under_tmp else here) / f".escaped-{os.getpid()}.txt"
    tests = ["assert f(2) == 4"]
    hostile = {
        0: "import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=1)\ndef f(x):\n    return 2 * x",
        1: f"open({str(target)!r}, 'w').write('x')\ndef f(x):\n    return 2 * x",
        2: "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
        3: "import subprocess\nsubprocess.Popen(['sleep', '300'], start_new_session=True)\ndef f(x):\n    return 2 * x",
        4: "def f(x):\n    return 2 * x",
        5: "open('/usr/rolleval-escape.txt', 'w').write('x')\ndef f(x):\n    return 2 * x",
    }
    grader = CodeGrader(timeout_s=2.0)
    judgements = grader.grade_problem(
        tests, [(i, f"```python\n{code}\n```") for i, code in hostile.items()]
    )
    escaped = target.exists()
    target.unlink(missing_ok=True)
    assert not escaped
    assert (
        _raw(judgements[0])["failure"] == "crash"
        and "unreachable" in _raw(judgements[0])["message"]
    )
    # the host's folders are not in the sandbox at all; what is there is read-only
    assert (
        _raw(judgements[1])["failure"] == "crash"
        and "No such file" in _raw(judgements[1])["message"]
    )
    assert (
        _raw(judgements[5])["failure"] == "crash" and "Read-only" in _raw(judgements[5])["message"]
    )
    assert _raw(judgements[2])["failure"] in ("timeout", "crash")
    # a detached child is killed with the PID namespace, the rollout itself passes
    assert judgements[3].correct is True
    assert judgements[4].correct is True
    assert all(v.grader_error is None for v in judgements.values())
    assert _sandbox_processes() == []


def test_process_count_is_capped():
    """Forks past the cap fail (RLIMIT_NPROC, or the PID namespace's pid_max as root)."""
    code = (
        "import os, time\nspawned = 0\nfor _ in range(2000):\n    try:\n        pid = os.fork()\n"
        "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(20)\n        os._exit(0)\n"
        "    spawned += 1\n"
    )
    judgement = _grade(code, ["assert 0 < spawned <= 300, spawned"], timeout_s=10.0, processes=16)
    assert judgement.correct is True, judgement.judge_raw
    assert _sandbox_processes() == []


def test_sandbox_failure_is_a_grader_error(monkeypatch):
    monkeypatch.setattr(_sandbox, "_NAMESPACES", 0x1)  # no namespace flag: EINVAL
    judgements = CodeGrader().grade_problem(["assert True"], [(0, "```python\nx = 1\n```")])
    v = judgements[0]
    assert v.correct is None and v.grader_error.startswith("sandbox:")
    assert v.extracted == "x = 1"


def test_a_child_that_cannot_start_is_a_sandbox_outcome(monkeypatch):
    """An OSError starting the child (no memory, no process slots) gives the ``sandbox``
    failure with its message in ``message``, no test counts, the isolation asked for, and
    the other jobs still run (the fields were shifted by one before mypy caught it)."""
    real = _sandbox._Running
    calls = []

    def flaky(solution, tests, limits, isolate):
        calls.append(solution)
        if len(calls) == 1:
            raise OSError(11, "Resource temporarily unavailable")
        return real(solution, tests, limits, isolate)

    monkeypatch.setattr(_sandbox, "_Running", flaky)
    jobs = [("x = 1", ["assert x == 1"]), ("y = 2", ["assert y == 2"])]
    first, second = run_tests(jobs, CodeGrader().limits, isolate=True, parallel=1)
    assert first == _sandbox.ExecOutcome(
        "sandbox",
        None,
        None,
        "could not start: [Errno 11] Resource temporarily unavailable",
        True,
        0.0,
    )
    assert first.summary()["failure"] == "sandbox"
    assert second.passed and second.tests_run == 1 and second.tests_passed == 1


def test_refuses_without_isolation_unless_unsafe_exec(monkeypatch, tmp_path):
    monkeypatch.setattr(_code, "isolation_problem", lambda: "user namespaces are disabled")
    monkeypatch.delenv(_code.UNSAFE_EXEC_ENV, raising=False)
    with pytest.raises(UsageError, match="--unsafe-exec"):
        CodeGrader().check_available()
    monkeypatch.setenv(_code.UNSAFE_EXEC_ENV, "1")
    CodeGrader().check_available()
    target = tmp_path / "written.txt"
    v = _grade(f"open({str(target)!r}, 'w').write('x')\nok = 1", ["assert ok == 1"])
    assert v.correct is True and _raw(v)["isolated"] is False
    assert target.exists()  # what isolation prevents, shown by its absence


def test_spec_round_trip_and_bad_options():
    g = make_grader({"type": "code", "timeout_s": 3})
    assert g.spec == {
        "type": "code",
        "timeout_s": 3.0,
        "memory_mb": 1024,
        "processes": 32,
    }
    assert make_grader(g.spec) == g
    with pytest.raises(UsageError, match="timeout_s"):
        make_grader({"type": "code", "timeout_s": 61})
    with pytest.raises(UsageError, match="memory_mb"):
        make_grader({"type": "code", "memory_mb": 0})
    with pytest.raises(UsageError, match="accepted keys"):
        make_grader({"type": "code", "network": True})


def test_identical_programs_share_a_cluster_and_one_execution():
    code = "```python\ndef f(x):\n    return 2 * x\n```"
    judgements = CodeGrader().grade_problem(
        ["assert f(2) == 4"], [(3, code), (1, code + "\n\n"), (2, "```python\nf = abs\n```")]
    )
    assert judgements[1].cluster == judgements[3].cluster == 1
    assert judgements[2].cluster == 2 and judgements[2].correct is False


def test_limits_are_applied():
    (o,) = run_tests(
        [
            (
                "import resource\nlimits = [resource.getrlimit(r)[0] for r in "
                "(resource.RLIMIT_CPU, resource.RLIMIT_AS, resource.RLIMIT_NPROC, resource.RLIMIT_FSIZE)]\n"
                "import os\nplace = (os.getcwd(), os.listdir('/tmp'), os.environ['HOME'])",
                [
                    "assert limits == [3, 128 << 20, 7, 16 << 20], limits",
                    "assert place == ('/tmp', [], '/tmp'), place",
                ],
            )
        ],
        ExecLimits(timeout_s=5, cpu_s=3, memory_mb=128, processes=7),
    )
    assert o.passed, o.message


def test_a_candidate_setup_failure_is_a_sandbox_outcome():
    """The candidate process reports its setup before any of the program's code runs, so a
    failure there (here: an impossible /tmp size) is the sandbox's, never the program's."""
    (o,) = run_tests([("x = 1", ["assert x == 1"])], ExecLimits(timeout_s=10, tmp_mb=-1))
    assert o.failure == "sandbox" and "mount tmpfs on /tmp" in o.message, o


def test_values_cross_as_their_exact_data_types():
    """Every data type of the channel arrives as itself (type and value), subclasses as their
    base type; other objects are proxies that can be called, read, changed and iterated."""
    program = (
        "import collections, decimal, fractions\n"
        "class Tagged(int):\n    pass\n"
        "class Node:\n    def __init__(self, v):\n        self.v = v\n        self.next = None\n"
        "    def __len__(self):\n        return 7\n    def __str__(self):\n        return 'node'\n"
        "def values():\n"
        "    return [None, True, 3, 10 ** 5000, -0.0, float('inf'), 1 + 2j, 'é\\ud800', b'\\x00',"
        " bytearray(b'ab'), (1, [2]), {(1, 2): {3}}, frozenset({4}),"
        " collections.Counter('aab'), collections.OrderedDict(a=1),"
        " collections.defaultdict(list, a=[1]), collections.deque([1], maxlen=3),"
        " decimal.Decimal('1.10'), fractions.Fraction(1, 3), range(1, 9, 2), Tagged(5)]\n"
        "def gen(n):\n    yield from range(n)\n"
        "def fails():\n    assert False, 'inside'\n"
    )
    tests = [
        "import collections, decimal, fractions\n"
        "got = values()\n"
        "want = [None, True, 3, 10 ** 5000, -0.0, float('inf'), 1 + 2j, 'é\\ud800', b'\\x00',"
        " bytearray(b'ab'), (1, [2]), {(1, 2): {3}}, frozenset({4}),"
        " collections.Counter('aab'), collections.OrderedDict(a=1),"
        " collections.defaultdict(list, a=[1]), collections.deque([1], maxlen=3),"
        " decimal.Decimal('1.10'), fractions.Fraction(1, 3), range(1, 9, 2), 5]\n"
        "assert [type(g) for g in got] == [type(w) for w in want], [type(g) for g in got]\n"
        "assert got == want and str(got[-4]) == '1.10' and str(got[4]) == '-0.0'\n"
        "assert got[16].maxlen == 3 and got[15].default_factory is list",
        "n = Node(1)\nn.next = Node(2)\n"
        "assert n.v == 1 and n.next.v == 2 and len(n) == 7 and str(n) == 'node'\n"
        "assert n == n and n != Node(1) and n.next is n.next",
        "assert list(gen(3)) == [0, 1, 2] and 2 in gen(3) and 5 not in gen(3)\n"
        "assert sorted(map(str, gen(2))) == ['0', '1']",
        "fails()",
    ]
    (o,) = run_tests([(program, tests)], ExecLimits(timeout_s=20, cpu_s=10))
    assert (o.failure, o.tests_passed, o.message) == ("assertion", 3, "AssertionError: inside"), o
