"""Per-text drift from parsed responses (pure): parsing every response form, matching by
id or text, the tokenizer check, and the summary over texts with its verdict."""

from __future__ import annotations

import base64
import math

import numpy as np
import pytest
from scipy.stats import entropy

from rolleval.drift import (
    DriftMethod,
    TokenizerMismatch,
    compare_text,
    parse_side,
    summarize,
)

LOG = math.log


def _plain(tokens, values, tops, extra=None, prompt_tokens=None):
    lp = {"tokens": tokens, "token_logprobs": values, "top_logprobs": tops, **(extra or {})}
    body = {"choices": [{"text": "".join(tokens), "logprobs": lp}]}
    if prompt_tokens is not None:
        body["usage"] = {"prompt_tokens": prompt_tokens}
    return body


def _full_block(rows: np.ndarray) -> dict:
    return {
        "encoding": "base64-float32-le",
        "shape": list(rows.shape),
        "data": base64.b64encode(rows.astype("<f4").tobytes()).decode(),
    }


def _rolleval(ids, texts, rows):
    """A response of rolleval's server with token ids and full rows (row i predicts i)."""
    values = [None] + [float(rows[i][ids[i]]) for i in range(1, len(ids))]
    top_ids = [None] + [
        [[int(t), f"<{t}>", float(rows[i][t])] for t in np.argsort(-rows[i])[:2]]
        for i in range(1, len(ids))
    ]
    extra = {"token_ids": ids, "top_logprob_ids": top_ids, "full_logprobs": _full_block(rows)}
    tops = [None] + [{texts[i]: values[i]} for i in range(1, len(ids))]
    return _plain(texts, values, tops, extra, prompt_tokens=len(ids))


P = np.log(np.array([[0.25, 0.25, 0.25, 0.25], [0.5, 0.25, 0.125, 0.125], [0.1, 0.2, 0.3, 0.4]]))
Q = np.log(np.array([[0.25, 0.25, 0.25, 0.25], [0.25, 0.25, 0.25, 0.25], [0.4, 0.3, 0.2, 0.1]]))


def test_full_rows_on_both_sides_give_the_exact_figures():
    ids, texts = [3, 0, 2], ["<s>", "a", "c"]
    b = parse_side(_rolleval(ids, texts, P), "ac")
    c = parse_side(_rolleval(ids, texts, Q), "ac")
    assert b.keyed_by == "id" and b.full is not None and b.full.shape == (3, 4)
    f = compare_text(b, c, "t")
    assert f.exact and f.positions.tolist() == [1, 2]
    p, q = np.exp(P), np.exp(Q)
    np.testing.assert_allclose(f.kld, [entropy(p[1], q[1]), entropy(p[2], q[2])], rtol=1e-6)
    # row 1: argmax 0 on the baseline; candidate uniform (first index 0): agree.
    # row 2: argmax 3 vs 0: disagree
    assert f.agree.tolist() == [True, False]
    # delta NLL: token 0 at row 1 (ln(1/2) vs ln(1/4)), token 2 at row 2 (ln .3 vs ln .2)
    np.testing.assert_allclose(f.delta_nll, [LOG(0.5) - LOG(0.25), LOG(0.3) - LOG(0.2)], rtol=1e-6)


def test_one_full_side_uses_the_other_sides_listed_tokens():
    ids, texts = [3, 0, 2], ["<s>", "a", "c"]
    b = parse_side(_rolleval(ids, texts, P), "ac")
    # the candidate lists its top 2 (row 1: ids 0 and 1; row 2: ids 0 and 1), and the
    # actual token is added (row 2: id 2)
    c_top = [
        None,
        [[0, "a", LOG(0.25)], [1, "b", LOG(0.25)]],
        [[0, "a", LOG(0.4)], [1, "b", LOG(0.3)]],
    ]
    c = parse_side(
        _plain(
            texts,
            [None, LOG(0.25), LOG(0.2)],
            [None, {}, {}],
            {"token_ids": ids, "top_logprob_ids": c_top},
            prompt_tokens=3,
        ),
        "ac",
    )
    assert c.full is None and c.keyed_by == "id"
    f = compare_text(b, c, "t")
    assert not f.exact
    p, q = np.exp(P), np.exp(Q)
    # row 1 on {0, 1} + tail: the baseline-only ids 2 and 3 (1/8 each) would get candidate
    # mass 1/4 each at the unconstrained minimum, not above the cap (the candidate's
    # smallest listed, 1/4): the merged-tail value
    want1 = entropy([p[1][0], p[1][1], p[1][2] + p[1][3]], [q[1][0], q[1][1], q[1][2] + q[1][3]])
    # row 2 on {0, 1, 2}: the one token left, id 3, holds the candidate's remaining 0.1
    # (at most its cap 0.3): the bound is the exact KL (the merged tail gives less)
    want2 = entropy(p[2], q[2])
    merged2 = entropy([p[2][0], p[2][1], p[2][2], p[2][3]], [q[2][0], q[2][1], q[2][2], q[2][3]])
    assert merged2 == pytest.approx(want2)  # one tail token: merging loses nothing here
    np.testing.assert_allclose(f.kld, [want1, want2], rtol=1e-6)
    np.testing.assert_allclose(f.baseline_tail, [0.25, 0.4], rtol=1e-6)
    assert f.agree.tolist() == [True, False]


def test_text_keys_and_vllm_token_id_strings():
    texts = ["<s>", " a", " b"]
    b = parse_side(
        _plain(
            [*texts, " ."],
            [None, LOG(0.5), LOG(0.25), -1.0],
            [None, {" a": LOG(0.5), " b": LOG(0.3)}, {" a": LOG(0.6), " b": LOG(0.25)}, {}],
        ),
        "<s> a b",
    )
    assert b.keyed_by == "text" and len(b) == 3  # the generated token is cut by the offsets
    vllm = parse_side(
        _plain(
            ["token_id:1", "token_id:7"],
            [None, -0.5],
            [None, {"token_id:7": -0.5, "token_id:9": -2.0}],
            prompt_tokens=2,
        ),
        "xy",
    )
    assert vllm.keyed_by == "id" and vllm.keys == (1, 7) and vllm.top[1] == {7: -0.5, 9: -2.0}


def test_a_side_without_ids_meets_an_id_side_by_text():
    ids, texts = [3, 0, 2], ["<s>", "a", "c"]
    b = parse_side(_rolleval(ids, texts, P), "ac")
    c = parse_side(
        _plain(
            texts,
            [None, LOG(0.25), LOG(0.2)],
            [None, {"a": LOG(0.25)}, {"c": LOG(0.2), "a": LOG(0.4)}],
            prompt_tokens=3,
        ),
        "ac",
    )
    f = compare_text(b, c, "t")
    assert f.keyed_by == "text" and not f.exact and f.kld.size == 2


def test_different_tokenizers_are_refused_naming_the_first_differing_token():
    b = parse_side(_plain(["<s>", " cat", "s"], [None, -1.0, -1.0], [None, {}, {}]), "<s> cats")
    c = parse_side(_plain(["<s>", " ca", "ts"], [None, -1.0, -1.0], [None, {}, {}]), "<s> cats")
    with pytest.raises(TokenizerMismatch, match=r"text 'x'.*token 1 is ' cat'.*' ca'") as info:
        compare_text(b, c, "x")
    assert info.value.exit_code == 2
    short = parse_side(_plain(["<s>", " cat"], [None, -1.0], [None, {}]), "<s> cat")
    with pytest.raises(TokenizerMismatch, match="the candidate has 2 tokens"):
        compare_text(b, short, "x")


def test_a_response_without_logprobs_is_a_value_error():
    with pytest.raises(ValueError, match="no echoed log-probs"):
        parse_side({"choices": [{"text": "x"}]}, "x")


def _method(threshold=0.1):
    return DriftMethod(
        top_logprobs=20,
        baseline_scoring="full vocabulary",
        candidate_scoring="full vocabulary",
        keyed_by="id",
        tail_rule="none (exact)",
        interval="percentile bootstrap",
        confidence_level=0.95,
        n_resamples=2000,
        seed=0,
        threshold=threshold,
    )


def _figures(klds):
    from rolleval.drift import TextFigures

    k = np.asarray(klds, dtype=np.float64)
    n = k.size
    return TextFigures(
        positions=np.arange(1, n + 1),
        kld=k,
        agree=np.ones(n, bool),
        delta_nll=k / 2,
        baseline_tail=np.zeros(n),
        keyed_by="id",
        exact=True,
        tokens=tuple(f"t{i}" for i in range(n + 1)),
        baseline_alternatives=tuple(() for _ in range(n)),
        candidate_alternatives=tuple(() for _ in range(n)),
    )


def test_summary_means_per_text_first_and_decides_on_the_interval():
    ids = ["a", "b", "c"]
    figs = [_figures([0.0, 0.2]), _figures([0.5]), _figures([0.3, 0.3, 0.3])]
    res = summarize(ids, figs, _method(0.01))
    # per-text means 0.1, 0.5, 0.3 -> 0.3; pooled tokens (0 + .2 + .5 + .9) / 6
    assert res.mean_kld.value == pytest.approx(0.3)
    assert res.token_level.mean_kld == pytest.approx(1.6 / 6)
    assert res.n_tokens == 6 and res.n_texts == 3
    assert res.verdict == "above_threshold" and res.exit_code == 1  # every resample >= 0.1
    assert res.token_level.kld_percentiles["p50"] == pytest.approx(
        np.percentile([0, 0.2, 0.5, 0.3, 0.3, 0.3], 50)
    )
    assert res.worst_tokens[0].kld == 0.5 and res.worst_tokens[0].text_id == "b"
    d = res.to_dict()
    for key in ("mean_kld", "top1_agreement", "delta_nll", "n_tokens", "verdict", "exit_code"):
        assert key in d
    assert d["delta_nll"] == pytest.approx(0.15)
    within = summarize(ids, figs, _method(0.6))
    assert within.verdict == "within_threshold" and within.exit_code == 0
    undecided = summarize(ids, figs, _method(0.3))
    assert undecided.verdict == "inconclusive" and undecided.exit_code == 3
    one = summarize(["a"], [_figures([0.5])], _method(0.01))
    assert one.verdict == "insufficient_evidence" and one.exit_code == 3


def test_identical_sides_give_zero_and_a_degenerate_interval_within_any_threshold():
    res = summarize(["a", "b"], [_figures([0.0, 0.0]), _figures([0.0])], _method(0.0))
    assert res.mean_kld.value == 0.0 and res.mean_kld.status == "degenerate"
    assert res.verdict == "within_threshold"


def test_texts_from_a_file_and_from_a_task(tmp_path):
    from rolleval.drift import load_texts, task_texts
    from rolleval.errors import DataError
    from rolleval.tasks import get_task

    p = tmp_path / "t.jsonl"
    p.write_text('{"id": "a", "text": "x"}\n\n{"text": "y"}\n{"id": "a", "text": "z"}\n')
    with pytest.raises(DataError, match=r"t.jsonl:4: duplicate id 'a'"):
        load_texts(p)
    assert load_texts(p, limit=2) == [("a", "x"), ("3", "y")]
    problems = get_task("arc_easy").load(limit=2)
    got = task_texts("arc_easy", limit=2)
    assert [i for i, _ in got] == [q.problem_id for q in problems]
    first = problems[0]
    assert got[0][1] == first.prompt[0]["content"] + "\n" + first.reference


def test_the_floor_of_a_list_leaves_the_actual_token_out():
    # a server lists its top 2 and adds the actual token (id 5, less likely than both):
    # tokens it left out are at most as likely as its 2nd, not as the actual token
    ids, texts = [1, 5], ["<s>", "x"]
    top_ids = [None, [[7, "a", LOG(0.5)], [8, "b", LOG(0.2)], [5, "x", LOG(0.01)]]]
    side = parse_side(
        _plain(
            texts,
            [None, LOG(0.01)],
            [None, {}],
            {"token_ids": ids, "top_logprob_ids": top_ids},
            prompt_tokens=2,
        ),
        "x",
    )
    assert side.floors is not None and side.floors[1] == pytest.approx(LOG(0.2))
    # the same by text (plain OpenAI form)
    tops = [None, {"a": LOG(0.5), "b": LOG(0.2), "x": LOG(0.01)}]
    side = parse_side(_plain(texts, [None, LOG(0.01)], tops, prompt_tokens=2), "x")
    assert side.keyed_by == "text" and side.floors[1] == pytest.approx(LOG(0.2))


def test_texts_needed_to_decide_from_the_per_text_means():
    from scipy.stats import norm

    from rolleval.drift._result import plan_texts

    means = np.array([0.30, 0.50, 0.40, 0.20, 0.60])  # mean 0.4, sd sqrt(0.025)
    z = norm.ppf(0.975) + norm.ppf(0.8)
    got = plan_texts(means, 0.3, 0.95, 0.8)
    want = math.ceil((z * math.sqrt(0.025) / 0.1) ** 2)  # 19.6... -> 20
    assert (got.texts_needed, got.side) == (want, "above_threshold") and want == 20
    below = plan_texts(means, 0.6, 0.95, 0.8)
    assert below.side == "within_threshold"
    assert below.texts_needed == math.ceil((z * math.sqrt(0.025) / 0.2) ** 2) == 5
    assert plan_texts(np.array([0.4]), 0.3, 0.95, 0.8).texts_needed is None
    assert plan_texts(means, 0.4, 0.95, 0.8).texts_needed is None  # the mean is the threshold
    assert plan_texts(np.array([0.5, 0.5]), 0.3, 0.95, 0.8).texts_needed == 2


def test_a_top_k_side_is_warned_when_k_is_small_for_the_model():
    from rolleval.drift import DriftSide
    from rolleval.drift._measure import _Live, _tail_warnings
    from rolleval.drift._tokens import TextFigures

    def figures(tail):
        z = np.zeros(2)
        return [
            TextFigures(
                np.arange(1, 3), z, z.astype(bool), z, np.full(2, tail), "id", False, (), (), ()
            )
        ]

    top = _Live("candidate", DriftSide("http://x/v1"), "http://x/v1", "m", False, {})
    full = _Live("baseline", DriftSide("a.gguf"), "http://y/v1", "m", True, {})
    # K = 200 but the baseline leaves 5% of its mass outside the compared tokens: warned,
    # with that mass quoted
    (w,) = _tail_warnings((full, top), 200, figures(0.05))
    assert "the candidate sends top-200" in w and "0.050 of its probability" in w
    # K = 200 and 0.5% outside: no warning; a full side is never warned
    assert _tail_warnings((full, top), 200, figures(0.005)) == []
    # K = 20: warned whatever the mass
    assert len(_tail_warnings((full, top), 20, figures(0.0))) == 1
