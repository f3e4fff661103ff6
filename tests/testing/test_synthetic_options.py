"""``write_synthetic_run`` takes one frozen options object, or its fields as keywords (issue 23)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
from pathlib import Path

import numpy as np
import pytest

from rolleval.errors import UsageError
from rolleval.testing._synthetic import SyntheticOptions, true_rates, write_synthetic_run


def _record_files(run_path: Path) -> dict[str, bytes]:
    task = run_path / "tasks" / "t"
    return {
        name: (task / name).read_bytes()
        for name in ("task.json", "prompts.jsonl", "rollouts.jsonl", "judgements.jsonl")
    }


def test_every_keyword_is_the_options_field_of_that_name_with_its_default():
    params = inspect.signature(write_synthetic_run).parameters
    keywords = {
        name: p.default for name, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    fields = {f.name: f.default for f in dataclasses.fields(SyntheticOptions)}
    assert keywords == fields


def test_every_options_field_is_documented():
    source = inspect.getsource(SyntheticOptions)
    body = ast.parse(source).body[0].body  # type: ignore[attr-defined]
    documented = {
        stmt.target.id
        for stmt, after in itertools.pairwise(body)
        if isinstance(stmt, ast.AnnAssign)
        and isinstance(after, ast.Expr)
        and isinstance(after.value, ast.Constant)
        and isinstance(after.value.value, str)
    }
    assert documented == {f.name for f in dataclasses.fields(SyntheticOptions)}


def test_the_options_form_writes_what_the_keyword_form_writes(tmp_path):
    faults = dict(
        n_problems=12,
        n_rollouts=3,
        task="t",
        rng=4,
        outcome_rng=2,
        shift=-0.1,
        p_infra_error=0.1,
        p_grader_error=0.1,
        p_unextracted=0.2,
        p_truncated=0.1,
        duplicates=2,
        clusters=3,
    )
    a = write_synthetic_run(tmp_path / "a", **faults)
    b = write_synthetic_run(tmp_path / "b", SyntheticOptions(**faults))
    assert a.info.run_id == b.info.run_id == "synthetic-4-sampling-2-shift-0.1"
    assert _record_files(a.path) == _record_files(b.path)


def test_options_are_frozen_and_compare_by_value_with_true_rates():
    rates = true_rates(5, rng=3)
    options = SyntheticOptions(n_problems=5, true_rates=rates)
    assert options.true_rates == tuple(rates.tolist())
    assert options == SyntheticOptions(n_problems=5, true_rates=list(rates))
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.n_problems = 6  # type: ignore[misc]


def test_true_rates_given_as_options_or_keyword_write_the_same_run(tmp_path):
    rates = np.linspace(0.0, 1.0, 8)
    a = write_synthetic_run(tmp_path / "a", n_problems=8, n_rollouts=2, task="t", true_rates=rates)
    b = write_synthetic_run(
        tmp_path / "b", SyntheticOptions(n_problems=8, n_rollouts=2, task="t", true_rates=rates)
    )
    assert _record_files(a.path) == _record_files(b.path)


def test_options_and_keywords_together_are_refused(tmp_path):
    with pytest.raises(UsageError, match="not both"):
        write_synthetic_run(tmp_path / "a", SyntheticOptions(n_problems=3), n_rollouts=2)
    assert not (tmp_path / "a").exists()
