"""Log-likelihood choice (``type: loglik``): the pure scoring, the option log-probs read from
echoed responses, and whole runs against the real test server through the real CLI
(``run``, ``show``, ``report``, ``regrade``, ``compare``, ``gate``), with the probe refusing
endpoints whose prompt log-probs are missing or shifted."""

from __future__ import annotations

import json
import math

import pytest

from conftest import run_cli, write_builtin_yaml
from rolleval.client._loglik import continuation_logprob, option_texts
from rolleval.grading import LoglikGrader, make_grader, score_options
from rolleval.records import PromptRecord
from rolleval.tasks import get_task
from rolleval.testing import OpenAIServer, toy_logprob
from rolleval.testing._server import echo_logprobs, word_tokens


def _opt(text: str, logprob: float, tokens: int, chars: int) -> dict:
    return {"text": text, "logprob": logprob, "tokens": tokens, "chars": chars}


# --------------------------------------------------------------------------- pure scoring


def test_score_options_exact_values():
    options = [_opt("a", -4.0, 2, 4), _opt("bb", -5.0, 5, 20), _opt("c", -6.0, 1, 3)]
    # raw: a (-4) wins; per char: a -1.0, bb -0.25, c -2.0 -> bb; per token: -2, -1, -6 -> bb
    assert score_options(options, "bb", "chars") == (0, 1, False, True, -1.0)
    assert score_options(options, "bb", "tokens") == (0, 1, False, True, -1.0)
    assert score_options(options, "a", "chars") == (0, 1, True, False, 1.0)
    # margin over the best distractor, not the mean
    assert score_options(options, "c", "chars")[4] == -2.0


def test_score_options_ties_go_to_the_earlier_option_and_gold_duplicates_count_once():
    tied = [_opt("x", -1.0, 1, 2), _opt("y", -1.0, 1, 2)]
    assert score_options(tied, "y")[:4] == (0, 0, False, False)
    dup = [_opt("x", -2.0, 1, 2), _opt("y", -1.0, 1, 2), _opt("x", -3.0, 1, 2)]
    assert score_options(dup, "x")[2:] == (False, False, -1.0)


def test_grader_verdicts_and_failures():
    g = make_grader({"type": "loglik"})
    assert g == LoglikGrader("chars") and g.spec == {"type": "loglik", "normalisation": "chars"}
    payload = json.dumps([_opt("no", -3.0, 1, 3), _opt("yes", -1.5, 1, 4)])
    v = g.grade_problem("yes", [(0, payload)])[0]
    assert (v.extracted, v.correct, v.cluster) == ("yes", True, 0)
    assert v.metrics == {"acc_norm": 1.0, "logprob_margin": 1.5}
    # a reference that is none of the options, or unreadable scores: grader errors
    assert g.grade_problem("maybe", [(0, payload)])[0].grader_error is not None
    bad = g.grade_problem("yes", [(0, "not json")])[0]
    assert bad.correct is None and bad.grader_error
    nan = json.dumps([_opt("no", math.nan, 1, 3), _opt("yes", -1.5, 1, 4)])
    assert g.grade_problem("yes", [(0, nan)])[0].grader_error is not None
    with pytest.raises(Exception, match="normalisation"):
        make_grader({"type": "loglik", "normalisation": "bytes"})


# --------------------------------------------------------------------------- echoed log-probs


def test_continuation_logprob_sums_the_continuation_tokens_only():
    context, cont = "Question: what? Answer:", " blue sky"

    def fn(prefix: str, token: str) -> float:
        return -float(len(token))  # a distinct value per token

    data = {"choices": [{"logprobs": echo_logprobs(context + cont, fn)}]}
    assert continuation_logprob(data, context, cont) == (-len(" blue") - len(" sky"), 2)
    # without text_offset the token texts spell the prompt
    del data["choices"][0]["logprobs"]["text_offset"]
    assert continuation_logprob(data, context, cont) == (-9.0, 2)
    # a token straddling the boundary counts as continuation
    data = {"choices": [{"logprobs": echo_logprobs("ab cd ef", fn)}]}
    assert continuation_logprob(data, "ab c", "d ef") == (-6.0, 2)
    with pytest.raises(ValueError, match="no echoed log-probs"):
        continuation_logprob({"choices": [{"logprobs": None}]}, context, cont)


def test_option_texts_default_and_per_option_contexts():
    rec = PromptRecord.build("t/1", "Q: x\nA:", "b", extras={"choices": ["a", "b"]})
    assert option_texts(rec) == [("a", "Q: x\nA:", " a"), ("b", "Q: x\nA:", " b")]
    wino = get_task("winogrande_rc").load(limit=1)[0]
    parts = option_texts(wino.to_record())
    assert [p[0] for p in parts] == wino.extras["choices"]
    assert parts[0][1] != parts[1][1] and parts[0][2] == parts[1][2]  # own contexts, one ending


@pytest.mark.parametrize(
    "name",
    [
        "hellaswag_rc",
        "arc_easy_rc",
        "arc_challenge_rc",
        "piqa_rc",
        "winogrande_rc",
        "boolq_rc",
        "mmlu_rc",
    ],
)
def test_builtin_rc_tasks_load(name):
    spec = get_task(name)
    assert spec.type == "loglik" and spec.grader["type"] == "loglik"
    (p,) = spec.load(limit=1)
    assert isinstance(p.prompt, str) and p.reference in p.extras["choices"]
    assert len(option_texts(p.to_record())) == len(p.extras["choices"]) >= 2


# --------------------------------------------------------------------------- whole runs


def _gold_fn(problems, bonus: float):
    """Word log-probs: a word of a gold option's continuation gets ``-1 + bonus``, any other
    continuation word -1.5; context words the toy model (so the probe passes)."""
    golds = {}
    for p in problems:
        for text, ctx, cont in option_texts(p.to_record()):
            golds.setdefault(ctx, []).append((cont, text == p.reference))

    def fn(prefix: str, token: str) -> float:
        for ctx, conts in golds.items():
            if prefix.startswith(ctx):
                rest = prefix[len(ctx) :] + token
                gold = any(g and cont.startswith(rest) for cont, g in conts)
                return -1.0 + bonus if gold else -1.5
        return toy_logprob(prefix, token)

    return fn


def _expected(problems, fn):
    """acc, acc_norm and margin per problem computed directly from word tokens and ``fn``."""
    out = {}
    for p in problems:
        opts = []
        for text, ctx, cont in option_texts(p.to_record()):
            toks = word_tokens(cont)
            lp, at = 0.0, ctx
            for t in toks:
                lp += fn(at, t)
                at += t
            opts.append(_opt(text, lp, len(toks), len(cont)))
        _c, _n, acc, acc_norm, margin = score_options(opts, p.reference)
        out[p.problem_id] = (acc, acc_norm, margin)
    return out


TASKS = ["arc_easy_rc", "winogrande_rc"]


def test_loglik_run_show_report_regrade_compare_gate(tmp_path):
    problems = get_task("arc_easy_rc").load(limit=3) + get_task("winogrande_rc").load(limit=3)
    base_fn, cand_fn = _gold_fn(problems, 0.8), _gold_fn(problems, 0.2)
    with OpenAIServer(logprob_fn=base_fn) as srv:
        # n_rollouts is ignored: one scored attempt per problem
        cfg = write_builtin_yaml(tmp_path / "run.yaml", srv, TASKS, n_rollouts=4, limit=3, seed=3)
        res = run_cli("run", "--config", cfg, "--out", str(tmp_path / "base"), "--no-progress")
        assert res.returncode == 0, res.stderr
        assert "probing the prompt log-probs" in res.stderr
        srv.logprob_fn = cand_fn
        res = run_cli("run", "--config", cfg, "--out", str(tmp_path / "cand"), "--no-progress")
        assert res.returncode == 0, res.stderr
        requests = [r.json for r in srv.requests if r.json.get("echo")]
    assert all(r["logprobs"] is not None and r["max_tokens"] == 1 for r in requests)

    for run, fn in (("base", base_fn), ("cand", cand_fn)):
        expected = _expected(problems, fn)
        for task in ("arc_easy_rc", "winogrande_rc"):
            folder = tmp_path / run / "tasks" / task
            rollouts = [json.loads(x) for x in (folder / "rollouts.jsonl").read_text().splitlines()]
            assert len(rollouts) == 3 and {r["index"] for r in rollouts} == {0}
            for r in rollouts:
                best = max(r["options"], key=lambda o: o["logprob"])
                assert r["text"] == best["text"]
            for line in (folder / "judgements.jsonl").read_text().splitlines():
                j = json.loads(line)
                acc, acc_norm, margin = expected[j["problem_id"]]
                assert j["correct"] is acc and j["metrics"]["acc_norm"] == float(acc_norm)
                assert j["metrics"]["logprob_margin"] == pytest.approx(margin)

    res = run_cli("report", str(tmp_path / "cand"), "--format", "json", "--no-write")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)["tasks"]["arc_easy_rc"]["metrics"]
    assert {"pass@1", "metrics.acc_norm", "metrics.logprob_margin"} <= set(report)

    res = run_cli("show", str(tmp_path / "cand"), "--limit", "1")
    assert res.returncode == 0 and "logprob_margin=" in res.stdout

    res = run_cli("regrade", str(tmp_path / "cand"))
    assert res.returncode == 0, res.stderr
    assert "arc_easy_rc: 3 of 3 rollouts graded, 0 judgements changed" in res.stdout

    for metric in ("metrics.logprob_margin", "logprob_margin"):
        res = run_cli(
            "compare",
            str(tmp_path / "base"),
            str(tmp_path / "cand"),
            "--metric",
            metric,
            "--threshold",
            "0.5",
            "--format",
            "json",
        )
        assert res.returncode != 2, res.stderr
        tasks = {t["task"]: t for t in json.loads(res.stdout)["tasks"]}
        # the gold continuation lost 0.6 nats per word on every problem
        assert tasks["arc_easy_rc"]["metric"] == "metrics.logprob_margin"
        assert tasks["arc_easy_rc"]["effect"] < 0 and tasks["winogrande_rc"]["effect"] < 0

    policy = tmp_path / "policy.yaml"
    policy.write_text("metrics:\n  metrics.logprob_margin: {threshold: 0.5}\n")
    res = run_cli(
        "gate",
        str(tmp_path / "cand"),
        "--baseline",
        str(tmp_path / "base"),
        "--policy",
        str(policy),
        "--output",
        str(tmp_path / "gate.json"),
    )
    assert res.returncode in (0, 1, 3), res.stderr
    assert "metrics.logprob_margin" in res.stdout


@pytest.mark.parametrize("mode,fault", [("none", "missing"), ("shifted", "shifted")])
def test_a_loglik_run_is_refused_when_prompt_logprobs_are_unusable(tmp_path, mode, fault):
    with OpenAIServer(prompt_logprobs=mode) as srv:
        cfg = write_builtin_yaml(tmp_path / "run.yaml", srv, TASKS, n_rollouts=1, limit=3, seed=3)
        res = run_cli("run", "--config", cfg, "--out", str(tmp_path / "out"), "--no-progress")
    assert res.returncode == 2
    assert srv.base_url in res.stderr and f"({fault})" in res.stderr
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "out").exists()
