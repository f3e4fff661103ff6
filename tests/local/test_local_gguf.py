"""Issue 21: any local GGUF file as the local model (``--model local:/path.gguf``, or the
``local_model`` config key), served by rolleval's launcher with correct prompt log-probs,
its sha256 in the run's measurement so ``--resume`` with another file is refused.

The end-to-end test serves a requantized copy of the embedded model (Q4_1 -> Q4_0 with
llama-cpp-python's ``llama_model_quantize``, about 3 s): one rollout of one problem, a
refused resume, then the prompt log-probs probe (which refuses llama-cpp-python's own,
shifted ones) against the same file. The other tests need no model.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
from pathlib import Path

import pytest

from conftest import run_main
from rolleval import build_config
from rolleval.errors import UsageError


def test_local_path_forms_of_the_model_setting():
    cfg = build_config({"model": "local:/models/x.gguf", "tasks": ["copycolors"]})
    assert (cfg.model, cfg.local_model) == ("local", "/models/x.gguf")
    same = build_config(
        {"model": "local", "local_model": "/models/x.gguf", "tasks": ["copycolors"]}
    )
    assert same.local_model == cfg.local_model
    with pytest.raises(UsageError, match="give the GGUF path once"):
        build_config({"model": "local:/a.gguf", "local_model": "/b.gguf", "tasks": ["copycolors"]})
    with pytest.raises(UsageError, match="applies only to model 'local'"):
        build_config({"model": "gpt-x", "local_model": "/b.gguf", "tasks": ["copycolors"]})
    with pytest.raises(UsageError, match="needs a GGUF path"):
        build_config({"model": "local:", "tasks": ["copycolors"]})
    # the embedded model's runs keep their measurement as before (no new key)
    assert (
        "local_model_sha256"
        not in build_config({"model": "local", "tasks": ["copycolors"]}).measurement()
    )


@pytest.mark.parametrize("content", [None, b"not a model"])
def test_a_missing_or_non_gguf_file_exits_2_before_anything_is_written(tmp_path, capsys, content):
    path = tmp_path / "m.gguf"
    if content is not None:
        path.write_bytes(content)
    out = tmp_path / "run"
    code, _o, err = run_main(
        capsys, "run", "--model", f"local:{path}", "--task", "copycolors", "--out", out
    )
    assert code == 2 and str(path) in err and not out.exists()
    assert ("not found" if content is None else "not a GGUF file") in err


@pytest.fixture(scope="module")
def requantized(tmp_path_factory) -> Path:
    """A Q4_0 copy of the embedded Q4_1 model (requantized: lossy, but a real model)."""
    llama_cpp = pytest.importorskip("llama_cpp")
    from rolleval._local._launcher import default_model_path

    dst = tmp_path_factory.mktemp("gguf") / "smollm2-q4_0.gguf"
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0
    params.allow_requantize = True
    params.nthread = 2
    rc = llama_cpp.llama_model_quantize(
        str(default_model_path()).encode(), str(dst).encode(), ctypes.byref(params)
    )
    assert rc == 0 and dst.stat().st_size > 0
    return dst


@pytest.mark.local_model
def test_a_requantized_gguf_runs_end_to_end_and_resume_with_another_file_is_refused(
    requantized, tmp_path, capsys
):
    from rolleval._local._launcher import LocalServer, LocalServerOptions, default_model_path
    from rolleval.client._logprob_probe import require_prompt_logprobs

    out = tmp_path / "run"
    run = ["run", "--task", "copycolors", "--limit", 1, "-n", 1, "--max-tokens", 4]
    run += ["--server-option", "n_threads=2", "--no-progress"]
    code, _o, err = run_main(capsys, *run, "--model", f"local:{requantized}", "--out", out)
    assert code == 0, err
    manifest = json.loads((out / "manifest.json").read_text())
    sha = hashlib.sha256(requantized.read_bytes()).hexdigest()
    assert manifest["measurement"]["local_model_sha256"] == sha
    assert manifest["measurement"]["model"] == "local"
    server = manifest["provenance"]["server"]
    assert (server["model_file"], server["model_sha256"]) == (requantized.name, sha)
    assert server["model_path"] == str(requantized.resolve())
    assert manifest["provenance"]["endpoint"]["model"] == requantized.stem
    rollouts = [
        json.loads(x)
        for x in (out / "tasks" / "copycolors" / "rollouts.jsonl").read_text().splitlines()
    ]
    # the server answered under the file's name
    assert [(r["status"], r["model"]) for r in rollouts] == [("ok", requantized.stem)]
    # another file (the embedded one) cannot continue this run: refused before any server
    code, _o, err = run_main(
        capsys, *run, "--model", f"local:{default_model_path()}", "--out", out, "--resume"
    )
    assert code == 2 and "local_model_sha256" in err and "--resume refused" in err
    # --out alone continues it: the stored settings serve the same file again
    code, _o, err = run_main(capsys, "run", "--out", out, "--resume", "--no-progress")
    assert code == 0, err
    # served through rolleval's wrapper: the echoed prompt log-probs pass the probe that
    # refuses llama-cpp-python's own (shifted by one token; tests/client/test_logprob_probe.py)
    options = LocalServerOptions(model_path=str(requantized), server_options={"n_threads": 2})
    with LocalServer(options) as srv:
        assert srv.model_name == requantized.stem
        assert require_prompt_logprobs(srv.base_url, srv.model_name).ok
