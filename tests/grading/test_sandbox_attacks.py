"""The code sandbox against hostile programs, one test per attack of issue 20.

Each attack here succeeded against the sandbox before issue 20 (checked by running this
file against that code): the API key read from ``/proc/self/environ`` and stored in
``judgements.jsonl``; a root-only file and a host Unix socket reached; a passing report
forged from the harness's own frames, then ``os._exit(0)``; an object whose ``__eq__`` is
always true; a timeout that cost 5 s more than its limit.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from pathlib import Path

import pytest

from conftest import run_cli
from rolleval._sanitize import register_secret, secret_forms
from rolleval.grading import CodeGrader
from rolleval.grading._sandbox import ExecLimits, run_tests
from rolleval.testing import OpenAIServer

KEY = "sk-sandbox-Zq7Wm2Xr9Lp4Ty6Hb1Nc8Vd3"
KEY_ENV = "ROLLEVAL_SANDBOX_ATTACK_KEY"


def _raw(judgement) -> dict:
    return json.loads(judgement.judge_raw)


def _grade(code: str, tests, **options):
    grader = CodeGrader(**{"timeout_s": 3.0, **options})
    return grader.grade_problem(tests, [(0, f"```python\n{code}\n```")])[0]


def _outside_tmp() -> Path:
    """A host folder the sandbox's private ``/tmp`` does not hide: next to this file, or
    ``/var/tmp`` when the checkout lies under ``/tmp``."""
    here = Path(__file__).resolve().parent
    under_tmp = here.is_relative_to(Path(tempfile.gettempdir()).resolve())
    return Path("/var/tmp") if under_tmp else here


def _key_forms(key: str) -> dict[str, str]:
    return {
        "plain": key,
        "reversed": key[::-1],
        "hex": key.encode().hex(),
        "HEX": key.encode().hex().upper(),
    }


# The program dumps everything it can find of its environment: /proc/self/environ (the
# kernel's copy, which os.environ.clear() does not touch), os.environ, and PID 1's
# environ; hex-encoded, reversed and plain (last, so in the stored tail), to stderr and in its exception message.
_ENV_DUMP = """
import os
seen = []
for path in ('/proc/self/environ', '/proc/1/environ'):
    try:
        seen.append(open(path, 'rb').read().decode('latin-1'))
    except OSError as exc:
        seen.append(repr(exc))
seen.append(repr(dict(os.environ)))
text = ' | '.join(seen)
import sys
sys.stderr.write(text.encode().hex() + '\\n' + text[::-1] + '\\n' + text + '\\n')
def f(x):
    raise ValueError(text[::-1] + text.encode().hex())
"""


def test_the_api_key_in_the_environment_never_reaches_the_code_nor_the_run(tmp_path):
    """``rolleval run --api-key-env`` with the key in the environment, as root as CI runs:
    the program finds nothing of rolleval's environment (the variable's name is absent from
    what it dumped), and no form of the key is anywhere in the run directory."""
    data = tmp_path / "tasks.jsonl"
    data.write_text(json.dumps({"id": "p1", "question": "Write f.", "tests": ["assert f(2) == 4"]}))
    reply = f"```python\n{_ENV_DUMP}\n```"
    with OpenAIServer(responder=lambda request: reply, api_key=KEY) as srv:
        cfg = tmp_path / "run.yaml"
        cfg.write_text(
            f"model: {srv.model}\nendpoints: [{srv.base_url}]\nn_rollouts: 1\nseed: 1\n"
            f"api_key_env: {KEY_ENV}\n"
            f"tasks: [{{name: hostile, path: {data}, type: code, id_field: id, "
            f"answer_field: tests, grader: {{timeout_s: 3}}}}]\n"
        )
        run = tmp_path / "run"
        res = run_cli(
            "run", "--config", str(cfg), "--out", str(run), "--no-progress", env={KEY_ENV: KEY}
        )
    assert res.returncode == 0, res.stderr
    (judgement,) = [
        json.loads(x) for x in (run / "tasks/hostile/judgements.jsonl").read_text().splitlines()
    ]
    raw = json.loads(judgement["judge_raw"])
    assert judgement["correct"] is False and raw["failure"] == "crash"
    dumped = raw["stderr_tail"]
    assert "PATH=" in dumped  # the program did read its environment
    assert KEY_ENV not in dumped and KEY_ENV[::-1] not in dumped
    assert "HOME=/tmp" in dumped
    for path in run.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            for name, form in _key_forms(KEY).items():
                assert form not in text, f"{name} key in {path}"


def _run_code_task(tmp_path: Path, reply: str) -> Path:
    """``rolleval run --api-key-env`` of a one-problem code task whose every reply is
    ``reply``; the run directory."""
    data = tmp_path / "tasks.jsonl"
    data.write_text(json.dumps({"id": "p1", "question": "Write f.", "tests": ["assert f(2) == 4"]}))
    with OpenAIServer(responder=lambda request: reply, api_key=KEY) as srv:
        cfg = tmp_path / "run.yaml"
        cfg.write_text(
            f"model: {srv.model}\nendpoints: [{srv.base_url}]\nn_rollouts: 1\nseed: 1\n"
            f"api_key_env: {KEY_ENV}\n"
            f"tasks: [{{name: hostile, path: {data}, type: code, id_field: id, "
            f"answer_field: tests, grader: {{timeout_s: 3}}}}]\n"
        )
        run = tmp_path / "run"
        res = run_cli(
            "run", "--config", str(cfg), "--out", str(run), "--no-progress", env={KEY_ENV: KEY}
        )
    assert res.returncode == 0, res.stderr
    return run


def _assert_no_key_form(run: Path) -> None:
    for path in run.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            for name, form in _key_forms(KEY).items():
                assert form not in text, f"{name} key in {path}"


def test_a_key_the_program_prints_is_redacted_in_the_stored_judgement(tmp_path):
    """The key reaches the program some other way (here: its pieces in the reply, which the
    client's redaction of whole forms lets through): what the grading worker stores of
    the program's stderr and messages is redacted, plain, reversed and hex-encoded,
    including the beginning of a key where the 500-character message limit cut it."""
    half = len(KEY) // 2
    code = (
        f"k = {KEY[:half]!r} + {KEY[half:]!r}\n"
        "import sys\n"
        "sys.stderr.write('x' * 5000 + k + ' ' + k[::-1] + ' ' + k.encode().hex())\n"
        # flushed: the candidate may be stopped right after its error reaches the harness,
        # before an unflushed stderr buffer is written (the tail is then absent, not leaked)
        "sys.stderr.flush()\n"
        "def f(x):\n    raise ValueError(k + ' ' + k[::-1] + ' ' + 'y' * 426 + k)\n"
    )
    run = _run_code_task(tmp_path, f"```python\n{code}\n```")
    (judgement,) = [
        json.loads(x) for x in (run / "tasks/hostile/judgements.jsonl").read_text().splitlines()
    ]
    raw = json.loads(judgement["judge_raw"])
    assert raw["failure"] == "crash" and raw["message"].startswith("ValueError: ***")
    assert raw["stderr_tail"].endswith("*** *** ***")
    assert raw["message"].endswith("y***"), raw["message"][-60:]  # the cut key's start
    _assert_no_key_form(run)
    assert KEY[:4] not in raw["message"] and KEY[:4] not in raw["stderr_tail"]


def test_every_form_of_a_registered_key_is_redacted_from_what_the_sandbox_returns():
    """The key reaches the program by another way than the environment (built from pieces
    in its source): its stderr tail and messages are redacted like the rest of rolleval,
    plain, reversed and hex-encoded."""
    register_secret(KEY)
    half = len(KEY) // 2
    code = (
        f"k = {KEY[:half]!r} + {KEY[half:]!r}\n"
        "import sys\n"
        "sys.stderr.write('x' * 5000 + k + ' ' + k[::-1] + ' ' + k.encode().hex() + ' '"
        " + k.encode().hex().upper() + '\\n')\n"
        "def f(x):\n    raise ValueError(k + ' ' + k[::-1] + ' ' + k.encode().hex())\n"
    )
    judgement = _grade(code, ["assert f(2) == 4"])
    raw = _raw(judgement)
    assert raw["failure"] == "crash" and "ValueError" in raw["message"]
    assert "***" in raw["stderr_tail"] and "***" in raw["message"]
    for name, form in _key_forms(KEY).items():
        assert form not in judgement.judge_raw, name
    assert {"reversed", "hex", "HEX"} <= {
        name for name, form in _key_forms(KEY).items() if form in secret_forms(KEY)
    }


def test_root_only_files_host_files_and_host_sockets_are_out_of_reach():
    """As root, a 0600 root-owned file outside ``/tmp``, ``/etc/shadow`` and a Unix socket
    on the host disk: the program gets none of them."""
    folder = _outside_tmp()
    secret = folder / f".root-only-{os.getpid()}.txt"
    secret.write_text("root-only-content")
    secret.chmod(0o600)
    sock_path = folder / f".host-{os.getpid()}.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock_path))
    server.listen(1)
    code = (
        "import socket\n"
        "got = []\n"
        f"for path in ({str(secret)!r}, '/etc/shadow', '/etc/passwd'):\n"
        "    try:\n        got.append(open(path).read()[:20])\n"
        "    except OSError as exc:\n        pass\n"
        "try:\n"
        "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        f"    s.connect({str(sock_path)!r})\n"
        "    got.append('socket')\n"
        "except OSError:\n    pass\n"
    )
    try:
        judgement = _grade(code, ["assert got == [], got"])
    finally:
        server.close()
        sock_path.unlink(missing_ok=True)
        secret.unlink(missing_ok=True)
    assert judgement.correct is True, judgement.judge_raw


def test_the_program_runs_as_an_unprivileged_user():
    """Run as root, the program's user is nobody (65534) on the host too: its uid as the
    kernel reports it, with no supplementary group of the host's root."""
    code = (
        "status = open('/proc/self/status').read().splitlines()\n"
        "uids = [line.split()[1:] for line in status if line.startswith(('Uid:', 'Gid:'))]\n"
        "import os\ngroups = os.getgroups()\n"
    )
    tests = ["assert 0 not in groups, groups"]
    if os.geteuid() == 0:
        tests.append("assert uids == [['65534'] * 4] * 2, uids")
    judgement = _grade(code, tests)
    assert judgement.correct is True, judgement.judge_raw


# Forgery: find the harness's result object and channel in the caller frames, write a
# passing report there and on every open descriptor, mark any report-like dict passed,
# then leave before the tests run.
_FORGERY = """
import sys, os, json
fake = json.dumps({"stage": "tests", "tests_run": 1, "tests_passed": 1, "failure": None})
frame = sys._getframe()
while frame is not None:
    for value in list(frame.f_locals.values()):
        if isinstance(value, dict) and "failure" in value:
            value.update(failure=None, tests_run=1, tests_passed=1)
        if hasattr(value, "write") and hasattr(value, "flush"):
            try:
                value.write(fake + "\\n")
                value.flush()
            except Exception:
                pass
    frame = frame.f_back
for fd in range(3, 256):
    try:
        os.write(fd, (fake + "\\n").encode())
    except OSError:
        pass
os._exit(0)
"""


def test_a_forged_report_from_the_harness_frames_is_not_a_pass():
    judgement = _grade(_FORGERY, ["assert f(2) == 4"])
    assert judgement.correct is False, judgement.judge_raw
    assert _raw(judgement)["failure"] == "crash"


_EQUAL_TEST = "assert f(2) == 4"
_CLOSE_TEST = "assert abs(f(2) - 4.0) < 1e-9"


@pytest.mark.parametrize(
    ("impostor", "test"),
    [
        (
            "class Equal:\n    def __eq__(self, other):\n        return True\n"
            "def f(x):\n    return Equal()",
            _EQUAL_TEST,
        ),
        (
            "class Equal(int):\n    def __eq__(self, other):\n        return True\n"
            "def f(x):\n    return Equal(0)",
            _EQUAL_TEST,
        ),
        (
            "class Equal(tuple):\n    def __eq__(self, other):\n        return True\n"
            "def f(x):\n    return Equal()",
            _EQUAL_TEST,
        ),
        (
            "class Close(float):\n    def __sub__(self, other):\n        return 0.0\n"
            "def f(x):\n    return Close(0)",
            _CLOSE_TEST,
        ),
    ],
    ids=["object", "int-subclass", "tuple-subclass", "float-subclass-minus"],
)
def test_an_always_equal_object_does_not_pass(impostor, test):
    """``__eq__`` (or ``__sub__``) answering what the test hopes: the test compares plain
    data, never the program's object."""
    judgement = _grade(impostor, [test])
    assert judgement.correct is False, judgement.judge_raw
    assert _raw(judgement)["failure"] in ("assertion", "crash")


def test_a_timeout_ends_within_a_second_and_a_half_of_its_limit():
    """The limit is 1 s; the kill path used to take 5 s more (a group kill retried against
    the unreaped parent). 1.5 s of slack is generous on a loaded 2-core machine."""
    limits = ExecLimits(timeout_s=1.0, cpu_s=10)
    jobs = [("import time\ntime.sleep(60)", []), ("while True:\n    pass", [])]
    t0 = time.monotonic()
    outcomes = run_tests(jobs, limits, parallel=2)
    wall = time.monotonic() - t0
    assert [o.failure for o in outcomes] == ["timeout", "timeout"]
    assert all(o.seconds < 2.5 for o in outcomes), [o.seconds for o in outcomes]
    assert wall < 2.5, wall


def test_unsafe_exec_warns_what_it_gives_up(capsys, monkeypatch):
    from rolleval._cli._unsafe import unsafe_exec_scope
    from rolleval.grading._code import UNSAFE_EXEC_ENV

    monkeypatch.delenv(UNSAFE_EXEC_ENV, raising=False)
    with unsafe_exec_scope(False):
        assert UNSAFE_EXEC_ENV not in os.environ
    assert capsys.readouterr().err == ""
    with unsafe_exec_scope(True):
        assert os.environ[UNSAFE_EXEC_ENV] == "1"
    assert UNSAFE_EXEC_ENV not in os.environ
    warning = capsys.readouterr().err
    for gives_up in ("environment", "API key", "file", "network", "signals"):
        assert gives_up in warning, gives_up


@pytest.mark.parametrize(
    ("program", "test", "correct"),
    [
        # abs redefined to answer 0: the test passes it a value computed from the answer
        ("def abs(x):\n    return 0\ndef f(x):\n    return 0.0", _CLOSE_TEST, False),
        # a fake math module: the test reaches isclose through it
        (
            "class M:\n    def isclose(self, *a, **k):\n        return True\nmath = M()\n"
            "def f(x):\n    return 0.0",
            "assert math.isclose(f(2), 4.0)",
            False,
        ),
        # MBPP 126's shape: the function under test is named like a builtin, called with
        # literals: the program's definition is used
        ("def sum(a, b):\n    return a * b", "assert sum(3, 5) == 15", True),
    ],
    ids=["abs", "math", "literal-sum"],
)
def test_a_redefined_builtin_or_module_sees_no_computed_value(program, test, correct):
    judgement = _grade(program, [test])
    assert judgement.correct is correct, judgement.judge_raw
