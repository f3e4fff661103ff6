"""The API key never reaches disk or a terminal: every fault kind of the test server, a leaky
proxy that echoes the request headers (in 401 bodies, in error bodies, in ``/v1/models``), a
key cut by the error-excerpt limit, a key with a trailing newline; the run directory, stdout,
stderr, ``show`` (text and jsonl), the HTML report and ``--debug`` output are all searched for
the key and for every 8-character piece of it."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import quote

import pytest

from rolleval.testing import Fault, OpenAIServer

from .conftest import (
    FAULT_KINDS,
    cli_env,
    record_figure,
    run_cli,
    sum_responder,
    write_math_run,
)

# Characters that change under repr, JSON, URL-encoding; 32 characters.
KEY = 'sk-rel"Ab3/Cd+Ef=Gh%Ij\\Kl9Mn0Op~Q'
KEY_ENV = "ROLLEVAL_RELIABILITY_MARKER_KEY"


def _pieces(key: str) -> set[bytes]:
    """The key's 8-character pieces, and the key in every encoding a leak could use."""
    out = {key[i : i + 8].encode() for i in range(len(key) - 7)}
    out |= {
        key.encode(),
        repr(key).encode(),
        json.dumps(key).encode(),
        quote(key, safe="").encode(),
        base64.b64encode(key.encode()),
    }
    return out


PIECES = _pieces(KEY)


def _leaks(data: bytes) -> list[bytes]:
    return [p for p in PIECES if p in data]


def _scan_tree(root: Path) -> dict[str, list[bytes]]:
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            hits = _leaks(path.read_bytes())
            if hits:
                found[str(path)] = hits
    return found


class Outputs:
    """Everything the CLI printed during one test, for one search at the end."""

    def __init__(self) -> None:
        self.chunks: list[tuple[str, bytes]] = []
        self.bytes_searched = 0

    def run(self, *args: str, env: dict[str, str]) -> int:
        res = run_cli(*args, env=env)
        self.chunks += [(f"{args[0]} stdout", res.stdout), (f"{args[0]} stderr", res.stderr)]
        return res.returncode

    def leaks(self) -> dict[str, list[bytes]]:
        self.bytes_searched = sum(len(c) for _, c in self.chunks)
        return {name: _leaks(c) for name, c in self.chunks if _leaks(c)}


#: This file's run settings (6 problems unless a test says otherwise): the key read from
#: ``KEY_ENV``, a 0.5 s timeout, grading in this process.
SETTINGS = {
    "n_rollouts": 2,
    "api_key_env": KEY_ENV,
    "concurrency": 4,
    "max_retries": 1,
    "timeout_s": 0.5,
    "grading_workers": 0,
}


def _read_everything(out: Outputs, run_dir: Path, tmp_path: Path, env: dict[str, str]) -> None:
    """show (text, jsonl, failures), report with HTML, and --debug variants."""
    html = tmp_path / "report.html"
    out.run("show", str(run_dir), env=env)
    out.run("show", str(run_dir), "--format", "jsonl", env=env)
    out.run("show", str(run_dir), "--failures", env=env)
    out.run("report", str(run_dir), "--html", str(html), env=env)
    out.run("--debug", "show", str(run_dir), "--problem", "no-such-problem", env=env)


def _assert_no_leak(out: Outputs, tmp_path: Path, scenario: str) -> None:
    tree = _scan_tree(tmp_path)
    printed = out.leaks()
    assert not tree, f"key on disk: {tree}"
    assert not printed, f"key printed: {printed}"
    disk = sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file())
    record_figure(
        "secrets",
        scenario,
        {"bytes_on_disk_searched": disk, "bytes_printed_searched": out.bytes_searched},
    )


def test_every_fault_kind_with_a_marker_key_leaks_nothing(tmp_path: Path) -> None:
    """All fault kinds in one run, the leaky-proxy kinds included, plus error bodies holding
    the key at every offset around the 300-character excerpt cut."""
    straddles = [
        Fault.http_status(400, message="x" * offset + f"Bearer {KEY} trailing words")
        for offset in range(255, 300, 3)
    ]
    cycle = [fault for fault, _, _ in FAULT_KINDS.values()] + straddles

    def hook(request):
        return cycle[request.index % len(cycle)]

    with OpenAIServer(
        responder=sum_responder, faults=hook, api_key=KEY, echo_headers=True
    ) as server:
        config = write_math_run(tmp_path, server, 12, SETTINGS, n_rollouts=4)
        env = cli_env(**{KEY_ENV: KEY})
        out = Outputs()
        run_dir = tmp_path / "run"
        code = out.run("run", "--config", str(config), "--out", str(run_dir), env=env)
        assert code in (0, 4), out.chunks
        assert server.completion_requests > len(cycle)
        assert server.path_counts.get("/v1/models") == 1
        manifest = (run_dir / "manifest.json").read_text()
        assert "request headers were" in manifest and "***" in manifest  # the echo was stored
        out.run("--debug", "run", "--config", str(config), "--out", str(run_dir), env=env)
        out.run("run", "--config", str(config), "--out", str(run_dir), "--resume", env=env)
        _read_everything(out, run_dir, tmp_path, env)
    _assert_no_leak(out, tmp_path, "every_fault_kind")


def test_wrong_key_echoed_by_a_leaky_proxy_leaks_nothing(tmp_path: Path) -> None:
    """The server wants another key and echoes the request headers in every 401 body and in
    a 200 ``/v1/models`` debug page: every rollout fails (exit 4) and the key is nowhere."""
    with OpenAIServer(api_key="the-right-key", echo_headers=True) as server:
        config = write_math_run(tmp_path, server, 6, SETTINGS)
        env = cli_env(**{KEY_ENV: KEY})
        out = Outputs()
        run_dir = tmp_path / "run"
        code = out.run("run", "--config", str(config), "--out", str(run_dir), env=env)
        assert code == 4
        assert server.completion_requests >= 1
        stored = (run_dir / "tasks" / "sums" / "rollouts.jsonl").read_text()
        assert "HTTP 401" in stored and "Bearer ***" in stored
        out.run(
            "--debug", "run", "--config", str(config), "--out", str(run_dir), "--resume", env=env
        )
        _read_everything(out, run_dir, tmp_path, env)
    _assert_no_leak(out, tmp_path, "leaky_proxy_wrong_key")


def test_key_with_trailing_newline_is_stripped_and_works(tmp_path: Path) -> None:
    """A key read from a file ends in a newline: it is stripped, sent, accepted."""
    with OpenAIServer(responder=sum_responder, api_key=KEY, echo_headers=True) as server:
        # a generous timeout: the count of 12 requests below must not depend on the load
        # (at 0.5 s, a loaded machine timed requests out and retried them: 14 were counted)
        config = write_math_run(tmp_path, server, 6, SETTINGS, timeout_s=30)
        env = cli_env(**{KEY_ENV: f"  {KEY}\n"})
        out = Outputs()
        run_dir = tmp_path / "run"
        code = out.run("run", "--config", str(config), "--out", str(run_dir), env=env)
        assert code == 0, out.chunks
        assert server.fault_counts["ok"] == 12
        assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in server.requests)
        _read_everything(out, run_dir, tmp_path, env)
    _assert_no_leak(out, tmp_path, "trailing_newline")


@pytest.mark.parametrize(
    "value",
    [KEY[:10] + "\n" + KEY[10:], KEY[:10] + "\x1b[2J" + KEY[10:], KEY + "\x07", KEY[:5] + " x"],
    ids=["newline_inside", "escape_inside", "bel_at_end", "space_inside"],
)
def test_key_with_control_characters_is_refused_before_any_request(
    tmp_path: Path, value: str
) -> None:
    with OpenAIServer() as server:
        config = write_math_run(tmp_path, server, 6, SETTINGS)
        out = Outputs()
        run_dir = tmp_path / "run"
        env = cli_env(**{KEY_ENV: value})
        code = out.run("run", "--config", str(config), "--out", str(run_dir), env=env)
        debug_code = out.run(
            "--debug", "run", "--config", str(config), "--out", str(run_dir), env=env
        )
        assert server.path_counts == {}
    assert code == 2 and debug_code == 2
    assert not run_dir.exists()
    stderr = out.chunks[1][1].decode()
    assert stderr.count("\n") == 1 and KEY_ENV in stderr and "position" in stderr
    printed = out.leaks()
    assert not printed, printed
