"""Untrusted text stays inert: model output and server error bodies holding terminal control
sequences are shown as escapes by ``show`` and in error messages, ``show --format jsonl``
keeps them exact, and a lone surrogate in a response is the model's answer, sent once."""

from __future__ import annotations

from pathlib import Path

import orjson

from rolleval._sanitize import terminal_safe
from rolleval.testing import Fault, OpenAIServer

from .conftest import (
    record_figure,
    run_cli,
    sum_responder,
    write_math_run,
)

#: Clear screen, cursor home, window title (OSC ... BEL), colour, NUL, C1 CSI, bidi override,
#: isolate, DEL.
HOSTILE = (
    "\x1b[2J\x1b[H\x1b]0;owned\x07\x1b[31mred\x1b[0m nul\x00 c1\x9b31m "
    "\u202etxt.exe\u202c \u2066iso\u2069 del\x7f"
)
RAW_BYTES = [
    b"\x1b",
    b"\x07",
    b"\x00",
    b"\x7f",
    "\x9b".encode(),
    "\u202e".encode(),
    "\u2066".encode(),
]


def hostile_responder(request):
    text, finish = sum_responder(request)
    return f"{HOSTILE}\n{text}", finish


#: This file's run settings: 2 rollouts, no retries, grading in this process.
SETTINGS = {
    "n_rollouts": 2,
    "concurrency": 2,
    "max_retries": 0,
    "timeout_s": 5,
    "grading_workers": 0,
}


def _inert(data: bytes) -> bool:
    return not any(raw in data for raw in RAW_BYTES)


def test_terminal_safe_escapes_every_control_kind() -> None:
    shown = terminal_safe(HOSTILE)
    assert _inert(shown.encode())
    assert "\\x1b[2J" in shown and "\\x07" in shown and "\\u202e" in shown and "\\x9b" in shown
    assert (
        terminal_safe("plain text\n\twith tab, ünïcödé, 中文")
        == "plain text\n\twith tab, ünïcödé, 中文"
    )
    assert terminal_safe("a\nb", one_line=True) == "a\\nb"


def test_show_makes_model_output_inert_and_jsonl_exact(tmp_path: Path) -> None:
    with OpenAIServer(responder=hostile_responder) as server:
        config = write_math_run(tmp_path, server, 3, SETTINGS)
        run_dir = tmp_path / "run"
        res = run_cli("run", "--config", str(config), "--out", str(run_dir), "--no-progress")
        assert res.returncode == 0, res.stderr
    shown = run_cli("show", str(run_dir))
    assert shown.returncode == 0 and shown.stderr == b""
    assert _inert(shown.stdout), shown.stdout
    assert shown.stdout.count(b"\\x1b[2J") == 6  # 3 problems x 2 rollouts, visible
    exact = run_cli("show", str(run_dir), "--format", "jsonl")
    items = [orjson.loads(line) for line in exact.stdout.splitlines()]
    texts = [r["text"] for item in items for r in item["rollouts"]]
    assert len(texts) == 6 and all(t.startswith(HOSTILE + "\n") for t in texts)
    assert all(r["correct"] is True for item in items for r in item["rollouts"])
    record_figure("hostile_text", "show_text_inert", {"rollouts": 6, "raw_control_bytes": 0})


def test_error_bodies_are_inert_in_show_and_on_stderr(tmp_path: Path) -> None:
    with OpenAIServer(faults=lambda r: Fault.raw(HOSTILE, status=400)) as server:
        config = write_math_run(tmp_path, server, 3, SETTINGS)
        run_dir = tmp_path / "run"
        res = run_cli("run", "--config", str(config), "--out", str(run_dir), "--no-progress")
    assert res.returncode == 4
    assert res.stderr.count(b"\n") == 1 and _inert(res.stderr), res.stderr
    assert b"\\x1b[2J" in res.stderr
    shown = run_cli("show", str(run_dir), "--failures")
    assert shown.returncode == 0 and _inert(shown.stdout)
    assert shown.stdout.count(b"--- rollout") == 6
    debug = run_cli("--debug", "run", "--config", str(config), "--out", str(run_dir), "--resume")
    assert debug.returncode == 4 and b"Traceback" in debug.stderr and _inert(debug.stderr)
    record_figure(
        "hostile_text", "error_messages_inert", {"stderr_lines": 1, "raw_control_bytes": 0}
    )


def test_lone_surrogate_is_recorded_and_graded_as_the_models_answer(tmp_path: Path) -> None:
    with OpenAIServer(responder=sum_responder, faults=lambda r: Fault.lone_surrogate()) as server:
        config = write_math_run(tmp_path, server, 4, SETTINGS)
        run_dir = tmp_path / "run"
        res = run_cli("run", "--config", str(config), "--out", str(run_dir), "--no-progress")
        assert res.returncode == 0, res.stderr
        assert server.completion_requests == 8  # each rollout sent once, never re-sent
    tf = run_dir / "tasks" / "sums"
    rollouts = [orjson.loads(x) for x in (tf / "rollouts.jsonl").read_bytes().splitlines()]
    judgements = [orjson.loads(x) for x in (tf / "judgements.jsonl").read_bytes().splitlines()]
    assert len(rollouts) == 8 and all(r["status"] == "ok" for r in rollouts)
    assert all(r["text"].endswith(".\ufffd") for r in rollouts)
    assert len(judgements) == 8 and all(j["correct"] is True for j in judgements)
    record_figure(
        "hostile_text",
        "lone_surrogate",
        {"requests": "8/8 rollouts, 0 re-sent", "status": "ok", "graded": "8/8"},
    )
