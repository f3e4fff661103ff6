"""Reports recomputed from stored judgements, checked against an independent plain-Python count."""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction
from math import comb

import numpy as np
import orjson
import pytest

from rolleval import report_run
from rolleval._report._build import task_report
from rolleval.errors import DataError
from rolleval.rundir._store import JsonlColumns, RunDir, TornLineWarning, atomic_write_json
from rolleval.rundir._table import build_task_table, load_task_table
from rolleval.testing._synthetic import write_synthetic_run

FAULTS = dict(
    p_infra_error=0.05,
    p_grader_error=0.03,
    p_unextracted=0.1,
    p_truncated=0.05,
    torn_tail=True,
    duplicates=5,
)


def _expected(run: RunDir, task: str, n_req: int):
    """Independent recomputation: first judgement per (problem, index) wins; torn tail ignored."""
    tf = run.task(task)
    prompts = [orjson.loads(x) for x in tf.prompts.read_bytes().splitlines() if x.strip()]
    lines = tf.judgements.read_bytes().split(b"\n")
    recs = []
    for ln in lines:
        try:
            recs.append(orjson.loads(ln))
        except orjson.JSONDecodeError:
            continue  # blank or torn
    first: dict[tuple[str, int], dict] = {}
    for r in recs:
        first.setdefault((r["problem_id"], r["index"]), r)
    per = {}
    for p in prompts:
        pid = p["problem_id"]
        rs = [first[(pid, j)] for j in range(n_req) if (pid, j) in first]
        grad = [r for r in rs if r["status"] == "ok" and "grader_error" not in r]
        per[pid] = dict(
            n=len(grad),
            c=sum(r["correct"] for r in grad),
            unext=sum("extracted" not in r for r in grad),
            clusters=[(r.get("cluster"), r["correct"], r["index"]) for r in grad],
            infra=sum(r["status"] in ("infra_error", "timeout") for r in rs),
            gerr=sum(r["status"] == "ok" and "grader_error" in r for r in rs),
            trunc=sum(r["status"] == "ok" and r.get("finish_reason") == "length" for r in rs),
            ok=sum(r["status"] == "ok" for r in rs),
        )
    return per, len(recs) - len(first)


def _mean(xs):
    xs = list(xs)
    return sum(xs, Fraction(0)) / len(xs)


@pytest.fixture
def faulty_run(tmp_path):
    return write_synthetic_run(
        tmp_path / "run", n_problems=60, n_rollouts=8, rng=3, clusters=4, **FAULTS
    )


def test_report_matches_independent_count(faulty_run):
    run = faulty_run
    with pytest.warns(TornLineWarning):
        table = load_task_table(run.task("synthetic_math"))
    rep = task_report(table, run.task("synthetic_math").read_task())
    per, dups = _expected(run, "synthetic_math", 8)
    m = rep["metrics"]

    elig = [v for v in per.values() if v["n"] > 0]
    assert m["pass@1"]["value"] == pytest.approx(
        float(_mean(Fraction(v["c"], v["n"]) for v in elig)), abs=1e-12
    )
    assert m["pass@1"]["denominator"] == len(elig) and m["pass@1"]["n_total"] == 60
    for k in (2, 4, 8):
        ek = [v for v in per.values() if v["n"] >= k]
        want = _mean(1 - Fraction(comb(v["n"] - v["c"], k), comb(v["n"], k)) for v in ek)
        assert m[f"pass@{k}"]["value"] == pytest.approx(float(want), abs=1e-12)
        assert m[f"pass@{k}"]["denominator"] == len(ek)
        want_hat = _mean(Fraction(comb(v["c"], k), comb(v["n"], k)) for v in ek)
        assert m[f"pass^{k}"]["value"] == pytest.approx(float(want_hat), abs=1e-12)

    # maj@n: modal cluster, ties to the lowest label; unextracted never votes
    maj = []
    sc = []
    for v in elig:
        counts = Counter(c for c, _, _ in v["clusters"] if c is not None)
        if not counts:
            maj.append(0)
            sc.append(Fraction(0))
            continue
        top = max(counts.values())
        win = min(c for c, k in counts.items() if k == top)
        maj.append(
            int(next(ok for c, ok, _ in sorted(v["clusters"], key=lambda t: t[2]) if c == win))
        )
        sc.append(Fraction(top, v["n"]))
    assert m["maj@n"]["value"] == pytest.approx(sum(maj) / len(maj), abs=1e-12)
    assert m["self_consistency"]["value"] == pytest.approx(float(_mean(sc)), abs=1e-12)

    h = rep["health"]
    assert h["n_unextracted"]["count"] == sum(v["unext"] for v in per.values())
    assert h["n_unextracted"]["of"] == sum(v["n"] for v in per.values())
    assert h["infra_errors"]["count"] == sum(v["infra"] for v in per.values())
    assert h["infra_errors"]["of"] == 60 * 8
    assert h["grader_errors"]["count"] == sum(v["gerr"] for v in per.values())
    assert h["n_truncated"]["count"] == sum(v["trunc"] for v in per.values())
    assert h["n_short"]["count"] == sum(v["n"] < 8 for v in per.values())
    assert h["duplicate_judgements"] == dups == 5
    assert h["torn_lines"] == {"judgements.jsonl": 60 * 8 + 5 + 1}
    assert rep["rollouts"]["gradable"] == sum(v["n"] for v in per.values())
    # harness failures never count as wrong answers under the default policy
    assert rep["denominator_policy"] == "judged"
    # every available metric has an interval that contains it
    for name, entry in m.items():
        if entry["status"] == "ok":
            assert entry["ci"]["low"] <= entry["value"] + 1e-12 <= entry["ci"]["high"] + 2e-12, name


def test_requested_policy_counts_failures_as_wrong(faulty_run):
    run = faulty_run
    settings = run.task("synthetic_math").read_task()
    settings["denominator_policy"] = "requested"
    with pytest.warns(TornLineWarning):
        table = load_task_table(run.task("synthetic_math"))
    rep = task_report(table, settings)
    per, _ = _expected(run, "synthetic_math", 8)
    want = _mean(Fraction(v["c"], 8) for v in per.values())
    assert rep["metrics"]["pass@1"]["value"] == pytest.approx(float(want), abs=1e-12)
    assert rep["metrics"]["pass@1"]["denominator"] == 60


def test_k_beyond_n_is_unavailable_never_zero(tmp_path):
    run = write_synthetic_run(tmp_path / "r", n_problems=5, n_rollouts=2)
    settings = run.task("synthetic_math").read_task()
    settings["ks"] = [1, 2, 4]
    rep = task_report(load_task_table(run.task("synthetic_math")), settings)
    m = rep["metrics"]["pass@4"]
    assert m["status"] == "unavailable" and m["value"] is None and m["reason"]
    assert "ci" not in m
    assert rep["metrics"]["pass@2"]["status"] == "ok"


def test_report_is_independent_of_record_order_and_byte_stable(tmp_path):
    run = write_synthetic_run(
        tmp_path / "r", n_problems=40, n_rollouts=4, rng=5, p_infra_error=0.05, p_unextracted=0.1
    )
    first = report_run(run.path)
    a = run.report_path.read_bytes()
    tf = run.task("synthetic_math")
    lines = tf.judgements.read_bytes().splitlines(keepends=True)
    random.Random(0).shuffle(lines)
    tf.judgements.write_bytes(b"".join(lines))
    plines = tf.prompts.read_bytes().splitlines(keepends=True)
    plines.reverse()
    tf.prompts.write_bytes(b"".join(plines))
    report_run(run.path)
    assert run.report_path.read_bytes() == a
    assert first.report["tasks"]["synthetic_math"]["metrics"]["pass@1"]["status"] == "ok"


def test_empty_judgements_give_unavailable_metrics(tmp_path):
    run = write_synthetic_run(tmp_path / "r", n_problems=3, n_rollouts=2, judgements=False)
    rep = report_run(run.path).report["tasks"]["synthetic_math"]
    assert rep["metrics"]["pass@1"]["status"] == "unavailable"
    assert rep["health"]["missing"]["count"] == 6
    assert rep["health"]["n_unextracted"]["rate"] is None


def test_single_problem_interval_is_degenerate(tmp_path):
    run = write_synthetic_run(tmp_path / "r", n_problems=1, n_rollouts=4)
    rep = report_run(run.path).report["tasks"]["synthetic_math"]
    ci = rep["metrics"]["pass@1"]["ci"]
    assert ci["status"] == "degenerate" and "no uncertainty" in ci["reason"]
    assert rep["metrics"]["pass@1"]["se"]["clt"] is None


def test_clustered_se_reported_when_clusters_declared(tmp_path):
    """The report's clustered SE of pass@1 is the CR1 formula computed here from the run's
    files alone, in exact rationals: per-problem pass@1 = correct / judged rollouts, clusters
    from prompts.jsonl, SE**2 = C / (C - 1) * sum_c (sum_{i in c} (s_i - mean))**2 / T**2."""
    run = write_synthetic_run(tmp_path / "r", n_problems=30, n_rollouts=4, clusters=3)
    task_dir = run.path / "tasks" / "synthetic_math"
    clusters = {
        p["problem_id"]: p["cluster"]
        for p in map(orjson.loads, (task_dir / "prompts.jsonl").read_bytes().splitlines())
    }
    judged: Counter[str] = Counter()
    correct: Counter[str] = Counter()
    for j in map(orjson.loads, (task_dir / "judgements.jsonl").read_bytes().splitlines()):
        if j["status"] == "ok" and j.get("correct") is not None:
            judged[j["problem_id"]] += 1
            correct[j["problem_id"]] += bool(j["correct"])
    scores = {pid: Fraction(correct[pid], judged[pid]) for pid in clusters if judged[pid]}
    T = len(scores)
    mean = sum(scores.values()) / T
    sums: dict[str, Fraction] = {}
    for pid, s in scores.items():
        sums[clusters[pid]] = sums.get(clusters[pid], Fraction(0)) + (s - mean)
    C = len(sums)
    assert T == 30 and C == 3
    var = Fraction(C, C - 1) * sum(v * v for v in sums.values()) / T**2
    clt_var = sum((s - mean) ** 2 for s in scores.values()) / (T * (T - 1))

    se = report_run(run.path).report["tasks"]["synthetic_math"]["metrics"]["pass@1"]["se"]
    assert se["cluster_method"] == "CR1 sandwich over declared clusters"
    assert se["clustered"] == pytest.approx(float(var) ** 0.5, rel=1e-12)
    assert se["clt"] == pytest.approx(float(clt_var) ** 0.5, rel=1e-12)
    assert se["clustered"] != pytest.approx(se["clt"], rel=1e-3)  # the clusters matter here


def _prompts(*pids):
    return [{"problem_id": p, "prompt": "q", "reference": "1", "content_hash": p} for p in pids]


def test_table_errors_name_file_and_line():
    ok = {"problem_id": "a", "index": 0, "status": "ok", "correct": True}
    with pytest.raises(
        DataError, match=r"j.jsonl:2: judgement for problem 'zz', which has no prompt record"
    ):
        build_task_table(
            _prompts("a"), [ok, {**ok, "problem_id": "zz"}], requested=1, judgements_path="j.jsonl"
        )
    with pytest.raises(DataError, match=r"j.jsonl:1: 'status' must be one of"):
        build_task_table(
            _prompts("a"), [{**ok, "status": "fine"}], requested=1, judgements_path="j.jsonl"
        )
    with pytest.raises(
        DataError, match=r"j.jsonl:1: judgement of an 'ok' rollout has no 'correct'"
    ):
        build_task_table(
            _prompts("a"),
            [{"problem_id": "a", "index": 0, "status": "ok"}],
            requested=1,
            judgements_path="j.jsonl",
        )
    with pytest.raises(DataError, match=r"j.jsonl:1: 'index' must be int, got '0'"):
        build_task_table(
            _prompts("a"), [{**ok, "index": "0"}], requested=1, judgements_path="j.jsonl"
        )
    with pytest.raises(DataError, match=r"'correct' must be bool"):
        build_task_table(
            _prompts("a"), [{**ok, "correct": 1}], requested=1, judgements_path="j.jsonl"
        )
    with pytest.raises(
        DataError, match=r"p.jsonl:2: problem 'a' appears twice with different content"
    ):
        build_task_table(
            [*_prompts("a"), {**_prompts("a")[0], "content_hash": "other"}],
            [],
            requested=1,
            prompts_path="p.jsonl",
        )


@pytest.mark.parametrize("constant", [True, False])
def test_table_shortcuts_give_the_general_tables(constant):
    """One judgement per prompt in the same order (positions from the sort order, rows from
    the inverse permutation) and columns of one value (arrays without converting each
    entry) give exactly the table the general path builds from the same records shuffled."""
    import random

    rng = random.Random(5)
    pids = [str(i) for i in range(300)]  # not in string order: "10" < "2"
    judgements = []
    for k, pid in enumerate(pids):
        j = {"problem_id": pid, "index": 0, "status": "ok", "correct": rng.random() < 0.5}
        if constant:
            j.update(extracted="x", cluster=0)
        else:
            j.update(
                extracted=None if k % 7 == 0 else "x",
                cluster=None if k % 7 == 0 else k % 3,
                finish_reason="length" if k % 5 == 0 else "stop",
                output_tokens=k,
                grader_error="boom" if k % 11 == 0 else None,
                status="ok" if k % 13 else "infra_error",
            )
            if j["grader_error"] is not None or j["status"] != "ok":
                j.pop("correct")
        judgements.append(j)
    fast = build_task_table(_prompts(*pids), judgements, requested=None)
    shuffled = judgements[:]
    rng.shuffle(shuffled)
    general = build_task_table(_prompts(*pids), shuffled, requested=None)
    for name in fast.__dataclass_fields__:
        a, b = getattr(fast, name), getattr(general, name)
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=name)
        else:
            assert a == b, name


def test_table_problem_ids_checked_on_every_path():
    """Distinct string ids take a shortcut; any other shape the per-record check, which
    names the line (from the columns' own line numbers where they have them)."""
    ok = {"problem_id": "b", "index": 0, "status": "ok", "correct": True}
    for bad in ("", 3, ["a"], None):
        with pytest.raises(DataError, match=r"p.jsonl:2: prompt record has no 'problem_id'"):
            build_task_table(
                [*_prompts("a"), {**_prompts("a")[0], "problem_id": bad}],
                [],
                requested=1,
                prompts_path="p.jsonl",
            )
    cols = JsonlColumns(
        {"problem_id": ["a", ""], "content_hash": ["h", "h"], "cluster": [None, None]},
        2,
        lines=[3, 7],
        validated=True,
    )
    with pytest.raises(DataError, match=r"p.jsonl:7: prompt record has no 'problem_id'"):
        build_task_table(cols, [], requested=1, prompts_path="p.jsonl")
    # the same record twice counts once, and the order is by problem id either way
    for prompts in (_prompts("b", "a"), [*_prompts("b", "a"), _prompts("b")[0]]):
        t = build_task_table(prompts, [ok], requested=1)
        assert t.problem_ids == ["a", "b"]
        assert t.content_hashes == ["a", "b"]
        assert t.n_duplicate_prompts == len(prompts) - 2


def test_table_same_whatever_the_order_of_prompts_and_judgements():
    """One judgement per prompt in the prompts' order (positions from the sort order), in any
    other order (positions looked up by id), prompts already sorted or not: the same table."""
    ids = ["b", "c", "a", "d"]
    judgements = [
        {
            "problem_id": p,
            "index": 0,
            "status": "ok",
            "correct": p in "ab",
            "extracted": p,
            "cluster": k,
        }
        for k, p in enumerate(ids)
    ]
    tables = [
        build_task_table(_prompts(*ps), js, requested=None)
        for ps, js in (
            (ids, judgements),
            (ids, judgements[::-1]),
            (sorted(ids), sorted(judgements, key=lambda j: j["problem_id"])),
            (sorted(ids), judgements),
        )
    ]
    for t in tables:
        assert t.problem_ids == ["a", "b", "c", "d"] == t.content_hashes
        assert t.r_problem.tolist() == [0, 1, 2, 3]
        assert t.r_correct.tolist() == [True, True, False, False]
        assert t.r_cluster.tolist() == [2, 0, 1, 3]


def test_indices_beyond_requested_are_counted_and_ignored():
    recs = [{"problem_id": "a", "index": j, "status": "ok", "correct": j == 0} for j in range(3)]
    t = build_task_table(_prompts("a"), recs, requested=2)
    assert t.n_unexpected == 1 and len(t.r_index) == 2


def test_graded_score_key_reports_mean_score_and_marks_pass_at_k_unavailable(tmp_path):
    run = write_synthetic_run(tmp_path / "r", n_problems=4, n_rollouts=2)
    tf = run.task("synthetic_math")
    recs = [orjson.loads(x) for x in tf.judgements.read_bytes().splitlines()]
    for r in recs:
        r["score"] = 0.25
    tf.judgements.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    settings = tf.read_task()
    settings["score_key"] = "score"
    atomic_write_json(tf.task_json, settings)
    rep = report_run(run.path).report["tasks"]["synthetic_math"]
    assert rep["metrics"]["pass@1"]["value"] == pytest.approx(0.25)
    assert rep["metrics"]["pass@2"]["status"] == "unavailable"
    assert "pass/fail" in rep["metrics"]["pass@2"]["reason"]


def test_consecutive_window_matches_scalar_estimator(tmp_path):
    from rolleval._report._build import per_problem_values
    from rolleval.metrics import window_pass_hat_k

    run = write_synthetic_run(
        tmp_path / "r", n_problems=40, n_rollouts=8, rng=9, p_infra_error=0.15, p_grader_error=0.05
    )
    table = load_task_table(run.task("synthetic_math"))
    vals = per_problem_values(table, ks=[2, 3, 4, 8])
    for k in (2, 3, 4, 8):
        got = vals[f"consecutive-pass^{k}"][0]
        for i in range(table.n_problems):
            sel = table.r_problem == i
            trials = [
                {"run_index": int(j), "passed": bool(c), "excluded": not bool(g)}
                for j, c, g in zip(table.r_index[sel], table.r_correct[sel], table.r_gradable[sel])
            ]
            want = window_pass_hat_k(trials, k)
            if want is None:
                assert np.isnan(got[i])
            else:
                assert got[i] == pytest.approx(want, abs=1e-15)


def test_requested_policy_self_consistency_divides_by_requested(tmp_path):
    run = write_synthetic_run(tmp_path / "r", n_problems=30, n_rollouts=4, rng=2, p_infra_error=0.3)
    from rolleval._report._build import per_problem_values
    from rolleval.metrics import majority_vote

    table = load_task_table(run.task("synthetic_math"))
    sc = per_problem_values(table, ks=[2], denominator_policy="requested")["self_consistency"][0]
    for i in range(table.n_problems):
        sel = (table.r_problem == i) & table.r_gradable
        if not sel.any():
            assert sc[i] == 0.0
            continue
        clusters = [None if c < 0 else int(c) for c in table.r_cluster[sel]]
        vote = majority_vote(clusters, [bool(x) for x in table.r_correct[sel]])
        assert sc[i] == pytest.approx(vote.modal_size / 4)
