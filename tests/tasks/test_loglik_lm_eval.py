"""rolleval's log-likelihood acc equals lm-evaluation-harness's ``local-completions`` acc on
the same endpoint, prompts and subset.

``tests/data/lm_eval_loglik/`` holds the samples file of a real lm-eval 0.4.13 run
(``bench/bench_loglik_peer.py``; the exact command is in the folder's README): 0-shot
ARC-Easy, ``Question: {question}`` / ``Answer:``, each choice scored as ``" " + choice``,
against the embedded model served by ``rolleval._local._serve``. CI has no lm-eval; this
test runs rolleval's ``type: loglik`` task on the same documents against the same embedded
server and compares problem by problem.

Why this is deterministic: nothing is sampled. Each option's score is a sum of prompt
log-probs, a function of the model file, the tokens and the llama.cpp build only (one
request at a time, the model reset before each prompt, the prompt evaluated in one batch);
the same text tokenizes the same, so a rerun gives the same numbers (in the recorded run
rolleval's and lm-eval's option log-likelihoods were equal to the last bit). Float noise of
another CPU or build could still move a sum slightly, so log-probs are compared with
``TOL`` and a problem whose two best options lie within ``2 * TOL`` in lm-eval's record (a
near-tie that such noise could flip) is left out of the chosen-option comparison
explicitly; the recorded subset has none, which the test also checks. ``TOL`` is set
well above a same-build rerun's difference (0.0) so that another CPU's kernels may differ
in the last digits without failing the test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli

FIXTURE = Path(__file__).parents[1] / "data" / "lm_eval_loglik" / "samples_arc_easy_0shot.jsonl"
TOL = 1e-2  # nats, on one option's summed log-prob: far above a same-build rerun (0.0),
# far below what a broken scorer moves (a shifted endpoint: 15.6 nats median); the smallest
# gap between a recorded problem's two best options is 0.034 > 2 * TOL


def _samples() -> list[dict]:
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]
    return sorted(rows, key=lambda s: s["doc_id"])


def _argmax(values: list[float]) -> int:
    """First index of the maximum (numpy's ``argmax``, lm-eval's and rolleval's tie rule)."""
    return max(range(len(values)), key=lambda i: (values[i], -i))


def _read(path: Path) -> dict[str, dict]:
    rows = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {r["problem_id"].split("/", 1)[1]: r for r in rows}


def test_the_fixture_is_a_whole_lm_eval_record():
    samples = _samples()
    assert [s["doc_id"] for s in samples] == list(range(len(samples))) and len(samples) >= 50
    for s in samples:
        choices = s["doc"]["choices"]
        args = [s["arguments"][f"gen_args_{i}"] for i in range(len(choices))]
        assert [a["arg_1"] for a in args] == [" " + c for c in choices]
        lls = [float(r[0]) for r in s["filtered_resps"]]
        # lm-eval's own per-problem acc is the argmax rule on its own log-likelihoods
        assert s["acc"] == float(_argmax(lls) == s["doc"]["answer"])


@pytest.mark.local_model
def test_rolleval_loglik_acc_equals_lm_eval_local_completions(tmp_path):
    samples = _samples()
    data = tmp_path / "arc_easy_0shot.jsonl"
    data.write_text("".join(json.dumps(s["doc"]) + "\n" for s in samples))
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        "model: local\nseed: 1\nserver_options: {n_threads: 2}\n"
        f"tasks:\n  - {{name: arc_easy_0shot, path: {data}, type: loglik, id_field: id, "
        "answer_format: index}\n"
    )
    out = tmp_path / "r"
    res = run_cli("run", "--config", cfg, "--out", out, "--no-progress", timeout=1800)
    assert res.returncode == 0, res.stderr
    folder = out / "tasks" / "arc_easy_0shot"
    prompts = _read(folder / "prompts.jsonl")
    rollouts = _read(folder / "rollouts.jsonl")
    judgements = _read(folder / "judgements.jsonl")
    assert len(judgements) == len(samples)

    near_ties, compared, agree = [], 0, 0
    for s in samples:
        doc = s["doc"]
        pid = doc["id"]
        # the same texts: lm-eval's context is rolleval's prompt, its continuations " " + choice
        assert {a["arg_0"] for a in s["arguments"].values()} == {prompts[pid]["prompt"]}
        theirs = [float(r[0]) for r in s["filtered_resps"]]
        options = rollouts[pid]["options"]
        assert [o["text"] for o in options] == doc["choices"]
        ours = [o["logprob"] for o in options]
        assert ours == pytest.approx(theirs, abs=TOL), pid
        top = sorted(theirs, reverse=True)
        if top[0] - top[1] <= 2 * TOL:
            near_ties.append(pid)
            continue
        compared += 1
        chosen = judgements[pid]["extracted"]
        assert chosen == doc["choices"][_argmax(theirs)], pid
        acc = float(bool(judgements[pid]["correct"]))
        agree += acc == s["acc"]
        # lm-eval's acc_norm divides by the choice's characters (no leading space); the
        # same rule on rolleval's log-probs gives lm-eval's per-problem acc_norm
        per_char = [lp / len(c) for lp, c in zip(theirs, doc["choices"], strict=True)]
        top = sorted(per_char, reverse=True)
        if top[0] - top[1] > 2 * TOL:
            norm = _argmax([lp / len(c) for lp, c in zip(ours, doc["choices"], strict=True)])
            assert float(norm == doc["answer"]) == s["acc_norm"], pid
    assert near_ties == []  # the recorded subset has no near-tie (see the module docstring)
    assert agree == compared == len(samples)
    acc_rolleval = sum(bool(j["correct"]) for j in judgements.values())
    acc_lm_eval = sum(s["acc"] for s in samples)
    assert acc_rolleval == acc_lm_eval
