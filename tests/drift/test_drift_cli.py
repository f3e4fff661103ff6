"""``rolleval drift`` against real test servers on 127.0.0.1 (rolleval.testing.OpenAIServer,
word tokens scored by a toy model): figures checked against an independent computation,
the verdict's exit codes, the refusals (exit 2, one line, nothing written)."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest
from scipy.stats import entropy

from conftest import run_cli as rolleval
from rolleval._cli import main
from rolleval.testing import OpenAIServer, toy_logprob
from rolleval.testing._server import word_tokens

TEXTS = [
    ("capital", "The capital of France is Paris, and the capital of Italy is Rome."),
    ("count", "One, two, three, four, five, six, seven, eight, nine, ten."),
    ("cat", "The cat sat on the mat because it was tired after a long day."),
    ("odd", "Every morning the small fox ran to the river to drink some water."),
]


def worse(prefix: str, token: str) -> float:
    """The candidate: 0.3 nats less on words of odd length."""
    return toy_logprob(prefix, token) - (0.3 if len(token) % 2 else 0.0)


def _write_texts(path, texts=TEXTS):
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in texts))
    return str(path)


def _expected(text: str) -> tuple[float, float]:
    """(mean KLD, mean delta NLL) of one text from the servers' listed entries: the token
    and ' zzz' (at min(own, -7) - 1), the rest of the mass one tail bucket."""
    tokens = word_tokens(text)
    klds, dnll = [], []
    at = len(tokens[0])
    for tok in tokens[1:]:
        a, b = toy_logprob(text[:at], tok), worse(text[:at], tok)
        pa, pz = math.exp(a), math.exp(min(a, -7.0) - 1.0)
        qa, qz = math.exp(b), math.exp(min(b, -7.0) - 1.0)
        klds.append(entropy([pa, pz, 1 - pa - pz], [qa, qz, 1 - qa - qz]))
        dnll.append(a - b)
        at += len(tok)
    return float(np.mean(klds)), float(np.mean(dnll))


def test_drift_between_two_endpoints_matches_an_independent_computation(tmp_path, capsys):
    texts = _write_texts(tmp_path / "t.jsonl")
    with OpenAIServer() as b, OpenAIServer(logprob_fn=worse) as c:
        code = main(
            [
                "drift",
                "--baseline",
                b.base_url,
                "--candidate",
                c.base_url,
                "--texts",
                texts,
                "--out",
                str(tmp_path / "out"),
                "--format",
                "json",
                "--threshold",
                "0.001",
                "--html",
                str(tmp_path / "d.html"),
            ]
        )
    printed = json.loads(capsys.readouterr().out.split("\nHTML report")[0])
    stored = json.loads((tmp_path / "out" / "drift.json").read_text())
    assert printed["mean_kld"] == stored["mean_kld"]
    want = [_expected(t) for _, t in TEXTS]
    assert stored["mean_kld"] == pytest.approx(np.mean([k for k, _ in want]), rel=1e-9)
    assert stored["delta_nll"] == pytest.approx(np.mean([d for _, d in want]), rel=1e-9)
    assert stored["top1_agreement"] == 1.0  # the actual token leads on both sides
    assert stored["n_tokens"] == sum(len(word_tokens(t)) - 1 for _, t in TEXTS)
    assert stored["method"]["keyed_by"] == "text" and stored["method"]["top_logprobs"] == 20
    assert stored["warnings"] and "lower bound" in stored["warnings"][0]
    # every text's mean KLD is above 0.001, so every resample is: significantly above
    assert stored["verdict"] == "above_threshold" and stored["exit_code"] == code == 1
    lines = (tmp_path / "out" / "tokens.jsonl").read_text().splitlines()
    assert [json.loads(x)["id"] for x in lines] == [i for i, _ in TEXTS]
    assert "<svg" in (tmp_path / "d.html").read_text()


def test_the_same_model_on_both_sides_is_within_any_threshold(tmp_path, capsys):
    texts = _write_texts(tmp_path / "t.jsonl")
    with OpenAIServer() as b, OpenAIServer() as c:
        code = main(
            [
                "drift",
                "--baseline",
                b.base_url,
                "--candidate",
                c.base_url,
                "--texts",
                texts,
                "--out",
                str(tmp_path / "out"),
                "--format",
                "md",
                "--threshold",
                "0",
            ]
        )
    out = capsys.readouterr().out
    assert code == 0 and "WITHIN THRESHOLD (exit 0)" in out and "| top-1 agreement | 1.0000" in out
    data = json.loads((tmp_path / "out" / "drift.json").read_text())
    assert data["mean_kld"] == 0.0 and data["delta_nll"] == 0.0


def test_a_shifted_server_is_refused_with_exit_2(tmp_path):
    texts = _write_texts(tmp_path / "t.jsonl")
    with OpenAIServer() as b, OpenAIServer(prompt_logprobs="shifted") as c:
        res = rolleval(
            "drift",
            "--baseline",
            b.base_url,
            "--candidate",
            c.base_url,
            "--texts",
            texts,
            "--out",
            str(tmp_path / "out"),
        )
    assert res.returncode == 2 and "shifted" in res.stderr and res.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_bad_input_is_one_line_exit_2_and_nothing_is_overwritten(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "fine"}\n{"id": "b"}\n')
    url = "http://127.0.0.1:9/v1"
    res = rolleval(
        "drift",
        "--baseline",
        url,
        "--candidate",
        url,
        "--texts",
        str(bad),
        "--out",
        str(tmp_path / "o"),
    )
    assert res.returncode == 2 and f"{bad}:2" in res.stderr and '"text"' in res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    texts = _write_texts(tmp_path / "t.jsonl")
    nope = str(tmp_path / "nope.gguf")
    assert (
        main(
            [
                "drift",
                "--baseline",
                nope,
                "--candidate",
                url,
                "--texts",
                texts,
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    assert "nope.gguf: file not found" in capsys.readouterr().err
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "drift.json").write_text("{}")
    assert (
        main(
            [
                "drift",
                "--baseline",
                url,
                "--candidate",
                url,
                "--texts",
                texts,
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    assert "exists" in capsys.readouterr().err
    assert (tmp_path / "o" / "drift.json").read_text() == "{}"
    assert (
        main(["drift", "--baseline", url, "--candidate", url, "--out", str(tmp_path / "o2")]) == 2
    )
    assert "exactly one of --texts" in capsys.readouterr().err


def _seed(run_seed: int, text_id: str) -> int:
    """The documented per-prompt seed, computed independently: the low 31 bits of the
    first four bytes of sha256('<seed>\\0<id>\\00')."""
    digest = hashlib.sha256(f"{run_seed}\x00{text_id}\x000".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _drift_task(b, c, out, *extra):
    return main(
        [
            "drift",
            "--baseline",
            b.base_url,
            "--candidate",
            c.base_url,
            "--task",
            "arc_easy",
            "--limit",
            "3",
            "--out",
            str(out),
            "--format",
            "json",
            "--threshold",
            "0.0001",
            *extra,
        ]
    )


def test_task_texts_are_continued_by_the_baseline_with_recorded_seeds(tmp_path, capsys):
    from rolleval.drift import task_prompts

    prompts = dict(task_prompts("arc_easy", limit=3))
    with OpenAIServer() as b, OpenAIServer(logprob_fn=worse) as c:
        code = _drift_task(b, c, tmp_path / "out", "--seed", "7", "--max-tokens", "6")
        b_gen = [r for r in b.requests if not r.json.get("echo")]
        c_gen = [r for r in c.requests if not r.json.get("echo")]
    capsys.readouterr()
    data = json.loads((tmp_path / "out" / "drift.json").read_text())
    cont = data["method"]["continuation"]
    assert cont["kind"] == "sampled" and cont["by"] == "baseline" and cont["seed"] == 7
    # sampled from the model's own distribution; a server that is not rolleval's own gets
    # the standard fields only
    assert cont["sent"] == {"temperature": 1.0, "top_p": 1.0, "max_tokens": 6}
    # one generation request per prompt, on the baseline only, with the recorded seed
    assert not c_gen and len(b_gen) == 3
    by_prompt = {r.json["prompt"]: r.json for r in b_gen}
    assert set(by_prompt) == set(prompts.values())
    recorded = {x["id"]: x for x in data["continuations"]}
    assert set(recorded) == set(prompts)
    for text_id, prompt in prompts.items():
        body = by_prompt[prompt]
        assert body["seed"] == recorded[text_id]["seed"] == _seed(7, text_id)
        assert body["temperature"] == 1.0 and body["max_tokens"] == 6
        # the test server's answer: "echo seed=<seed>: <prompt>", cut to max_tokens words
        want = " ".join(f"echo seed={body['seed']}: {prompt}".split()[:6])
        assert recorded[text_id]["text"] == want
    # both sides scored prompt + continuation: the figures of those texts
    scored = [prompts[i] + recorded[i]["text"] for i in prompts]
    expect = [_expected(t) for t in scored]
    assert data["mean_kld"] == pytest.approx(np.mean([k for k, _ in expect]), rel=1e-9)
    assert data["delta_nll"] == pytest.approx(np.mean([d for _, d in expect]), rel=1e-9)
    assert code == 1 and data["planning"]["side"] == "above_threshold"


def test_reference_continuation_and_flags_that_do_not_apply(tmp_path, capsys):
    from rolleval.drift import task_texts

    with OpenAIServer() as b, OpenAIServer(logprob_fn=worse) as c:
        code = _drift_task(b, c, tmp_path / "ref", "--continuation", "reference")
        b_gen = [r for r in b.requests if not r.json.get("echo")]
    capsys.readouterr()
    data = json.loads((tmp_path / "ref" / "drift.json").read_text())
    assert code == 1 and not b_gen and data["continuations"] == []
    assert data["method"]["continuation"] == {"kind": "reference"}
    expect = [_expected(t) for _, t in task_texts("arc_easy", limit=3)]
    assert data["mean_kld"] == pytest.approx(np.mean([k for k, _ in expect]), rel=1e-9)
    texts = _write_texts(tmp_path / "t.jsonl")
    url = "http://127.0.0.1:9/v1"
    common = ["drift", "--baseline", url, "--candidate", url, "--out", str(tmp_path / "o")]
    res = rolleval(*common, "--texts", texts, "--continuation", "sampled")
    assert res.returncode == 2 and "--continuation applies to --task only" in res.stderr
    res = rolleval(
        *common, "--task", "arc_easy", "--continuation", "reference", "--max-tokens", "5"
    )
    assert res.returncode == 2 and "--max-tokens applies to --continuation sampled" in res.stderr
    assert res.stderr.count("\n") == 1 and not (tmp_path / "o").exists()
