"""The baseline file (``rolleval baseline save``) is read back through ``records.BaselineFile``:
everything round-trips, and a wrong file is one error naming the file and the field."""

from __future__ import annotations

import re

import numpy as np
import orjson
import pytest

from conftest import run_cli
from rolleval.compare import save_baseline
from rolleval.compare._frame import frames_from_baseline, frames_from_run, read_baseline
from rolleval.errors import DataError, SchemaVersionError
from rolleval.testing._synthetic import write_synthetic_run

TASK = "synthetic_math"


@pytest.fixture
def saved(tmp_path):
    """A synthetic run (with infra errors, so health counts differ from zero) and its baseline."""
    run = write_synthetic_run(
        tmp_path / "run", n_problems=9, n_rollouts=4, p_infra_error=0.2, rng=5
    )
    path = tmp_path / "baseline.json"
    save_baseline(run.path, path)
    return run.path, path


def _rewrite(path, change):
    doc = orjson.loads(path.read_bytes())
    change(doc)
    path.write_bytes(orjson.dumps(doc))


def test_every_field_reads_back_as_the_run_gave_it(saved):
    run, path = saved
    a, b = frames_from_run(run)[TASK], frames_from_baseline(path)[TASK]
    assert b.kind == "baseline" and b.source == str(path)
    assert (b.ids, b.hashes, b.clusters) == (a.ids, a.hashes, a.clusters)
    for name in ("n", "c", "requested", "gradable", "unjudged", "missing"):
        np.testing.assert_array_equal(getattr(b, name), getattr(a, name), err_msg=name)
    assert sorted(b.values) == sorted(a.values)
    for name in a.values:
        np.testing.assert_array_equal(b.values[name], a.values[name], err_msg=name)
    assert sorted(b.health) == sorted(a.health)
    for name, (num, den) in a.health.items():
        np.testing.assert_array_equal(b.health[name][0], num)
        np.testing.assert_array_equal(b.health[name][1], den)
    assert b.votes == a.votes and len(b.votes) == 9
    assert b.settings == a.settings and b.run_status == "completed"


def test_unknown_keys_are_ignored(saved):
    _, path = saved
    before = frames_from_baseline(path)[TASK]

    def add(doc):
        doc["future_field"] = 1
        doc["tasks"][TASK]["future_column"] = [0] * 9

    _rewrite(path, add)
    after = frames_from_baseline(path)[TASK]
    np.testing.assert_array_equal(after.c, before.c)
    assert after.votes == before.votes


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d["tasks"][TASK].update(n=d["tasks"][TASK]["n"][:-1]),
            r"'tasks\.synthetic_math': .*'n' has 8 entries for 9 problems \('ids'\)",
        ),
        (
            lambda d: d["tasks"][TASK]["values"]["pass@1"].append(0.5),
            r"'values\.pass@1' has 10 entries for 9 problems",
        ),
        (
            lambda d: d["tasks"][TASK]["ids"].__setitem__(1, d["tasks"][TASK]["ids"][0]),
            r"a problem id is listed twice in 'ids'",
        ),
        (
            lambda d: d["tasks"][TASK]["health"]["infra_error_rate"].pop("denominator"),
            r"'health\.infra_error_rate' has no 'denominator' list",
        ),
        (
            lambda d: d["tasks"][TASK].pop("gradable"),
            r"'tasks\.synthetic_math\.gradable': Field required",
        ),
        (
            lambda d: d["tasks"][TASK].update(c="many"),
            r"'tasks\.synthetic_math\.c': Input should be a valid list",
        ),
        (lambda d: d.update(tasks=[]), r"'tasks': Input should be a valid dictionary"),
    ],
)
def test_a_malformed_file_names_the_file_and_the_field(saved, change, message):
    _, path = saved
    _rewrite(path, change)
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}: baseline file: .*{message}"):
        read_baseline(path)
    with pytest.raises(DataError, match=r"write the baseline again with `rolleval baseline save`$"):
        frames_from_baseline(path)


def test_versions_it_cannot_read_say_what_to_do(saved):
    _, path = saved
    _rewrite(path, lambda d: d.update(schema_version=1))
    with pytest.raises(SchemaVersionError, match=r"baseline schema version 1 .*too old") as err:
        read_baseline(path)
    assert str(err.value).startswith(f"{path}: ")
    assert "rolleval baseline save RUN --out FILE --force" in str(err.value)
    _rewrite(path, lambda d: d.update(schema_version=3))
    with pytest.raises(SchemaVersionError, match=r"version 3 .*not readable .*reads version 2"):
        read_baseline(path)


def test_the_cli_error_is_one_line_with_exit_2(saved, tmp_path):
    run, path = saved
    _rewrite(path, lambda d: d["tasks"][TASK].update(c=d["tasks"][TASK]["c"] * 2))
    res = run_cli("compare", str(path), str(run))
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and res.stderr.startswith(f"rolleval: error: {path}: ")
    assert "'c' has 18 entries for 9 problems" in res.stderr and "Traceback" not in res.stderr


def test_a_baseline_saved_from_a_schema_1_run_reads_n_as_n_rollouts(saved):
    _, path = saved
    _rewrite(path, lambda d: d.update(measurement={"model": "m", "n": 4}))
    assert read_baseline(path).measurement == {"model": "m", "n_rollouts": 4}
