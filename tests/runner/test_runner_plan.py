"""The runner's plan stage: a pure function of stored records (no server, no disk)."""

from __future__ import annotations

from rolleval._runner import Request, plan_task
from rolleval.records import JudgementRecord, JudgementSet, RolloutRecord, RolloutSet


def R(pid: str, j: int, status: str = "ok", attempt: int = 1) -> RolloutRecord:
    return RolloutRecord(
        problem_id=pid,
        index=j,
        status=status,
        text="x" if status == "ok" else None,
        attempt=attempt,
    )


def J(pid: str, j: int, status: str = "ok", correct: bool | None = True) -> JudgementRecord:
    return JudgementRecord(
        problem_id=pid, index=j, status=status, correct=correct if status == "ok" else None
    )


def plan(rollouts, judgements, ids=("a", "b"), n=2):
    return plan_task(0, list(ids), n, RolloutSet.build(rollouts), JudgementSet.build(judgements))


def test_a_fresh_task_requests_everything_in_canonical_order():
    p = plan([], [], ids=("b", "a"), n=2)
    assert p.requests == [
        Request(0, "a", 0, 1),
        Request(0, "a", 1, 1),
        Request(0, "b", 0, 1),
        Request(0, "b", 1, 1),
    ]
    assert p.pending() == {"a": 2, "b": 2}
    assert p.keep_judgements == [] and p.to_grade == [] and not p.rewrite_judgements


def test_failed_rollouts_are_requested_again_as_the_next_attempt():
    rolls = [R("a", 0), R("a", 1, "infra_error"), R("b", 0, "timeout", attempt=2), R("b", 1)]
    p = plan(rolls, [])
    assert p.requests == [Request(0, "a", 1, 2), Request(0, "b", 0, 3)]
    assert set(p.final["a"]) == {0} and set(p.final["b"]) == {1}
    assert p.to_grade == []  # both problems still wait for a rollout


def test_a_complete_fully_judged_problem_keeps_its_judgements():
    rolls = [R("a", 0), R("a", 1), R("b", 0), R("b", 1)]
    judg = [J("a", 0), J("a", 1), J("b", 1, correct=False), J("b", 0)]
    p = plan(rolls, judg)
    assert p.requests == [] and p.to_grade == []
    assert [(j.problem_id, j.index) for j in p.keep_judgements] == [
        ("a", 0),
        ("a", 1),
        ("b", 0),
        ("b", 1),
    ]
    assert not p.rewrite_judgements  # the file holds exactly what stays


def test_partly_judged_or_mismatched_problems_are_regraded_and_the_file_rewritten():
    rolls = [R("a", 0), R("a", 1), R("b", 0), R("b", 1)]
    # a: one judgement missing (killed while grading); b: a judgement with another status
    judg = [J("a", 0), J("b", 0), J("b", 1, status="infra_error")]
    p = plan(rolls, judg)
    assert p.to_grade == ["a", "b"] and p.keep_judgements == []
    assert p.rewrite_judgements


def test_judgements_of_a_problem_that_gets_new_rollouts_are_dropped():
    rolls = [R("a", 0), R("a", 1, "infra_error"), R("b", 0), R("b", 1)]
    judg = [J("a", 0), J("a", 1, status="infra_error"), J("b", 0), J("b", 1)]
    p = plan(rolls, judg)
    assert p.requests == [Request(0, "a", 1, 2)]
    assert [j.problem_id for j in p.keep_judgements] == ["b", "b"]
    assert p.to_grade == [] and p.rewrite_judgements


def test_duplicate_judgements_count_once_and_are_cleaned_out():
    rolls = [R("a", 0), R("a", 1)]
    judg = [J("a", 0), J("a", 1), J("a", 0, correct=False)]
    p = plan(rolls, judg, ids=("a",))
    assert [j.correct for j in p.keep_judgements] == [True, True]  # first one wins
    assert p.rewrite_judgements


def test_a_second_ok_attempt_never_replaces_the_first():
    rolls = [R("a", 0, "infra_error"), R("a", 0, attempt=2), R("a", 0, attempt=3), R("a", 1)]
    p = plan(rolls, [], ids=("a",))
    assert p.requests == [] and p.final["a"][0].attempt == 2
    assert p.to_grade == ["a"]
