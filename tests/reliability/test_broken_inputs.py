"""Property-based broken inputs: every input file type, mutated by truncation, wrong types,
wrong encodings, unknown keys, duplicates and absurd values.

The property, for every mutation that makes the input wrong: exit 2, one line on stderr that
names the mutated file, no traceback, and not one byte changed on disk (inputs, run
directories, no new files). Mutations a format accepts by design (an unknown column in a task
data file, an unknown field in a record: forward compatibility) must instead give a normal
result. The CLI runs in-process (``rolleval._cli.main``) against a real test server.

Truncation of a YAML or CSV file can leave a valid file (a cut at a line end drops an
optional key); such examples are discarded with ``assume`` after asking the same loaders
whether the input is still valid, so every kept example is a wrong input.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rolleval._cli import main
from rolleval.errors import RollevalError
from rolleval.testing import OpenAIServer
from rolleval.testing._synthetic import write_synthetic_run

from .conftest import record_figure, run_settings, sum_responder, write_math_task

EXAMPLES = 40
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

# ----------------------------------------------------------------------------- the workspace

N_PROBLEMS = 4
_COUNTS: dict[str, Counter[str]] = {}


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(responder=sum_responder) as srv:
        yield srv


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory, server: OpenAIServer) -> Path:
    """Valid inputs of every type, built once; each example works on a copy."""
    root = tmp_path_factory.mktemp("pristine")
    write_math_task(root / "data.jsonl", N_PROBLEMS)
    rows = [json.loads(x) for x in (root / "data.jsonl").read_text().splitlines()]
    (root / "data.csv").write_text(
        "id,question,answer\n"
        + "".join(f"{r['id']},{r['question']},{r['answer']}\n" for r in rows),
        encoding="utf-8",
    )
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), root / "data.parquet")
    for fmt in ("jsonl", "csv", "parquet"):
        doc = run_settings(server, f"data.{fmt}", RUN_SETTINGS)
        (root / f"config_{fmt}.yaml").write_text(yaml.safe_dump(doc))
    base = write_synthetic_run(root / "base", n_problems=6, n_rollouts=2, rng=1)
    write_synthetic_run(root / "cand", n_problems=6, n_rollouts=2, rng=1, shift=-0.1)
    assert main(["report", str(base.path)]) == 0
    assert main(["report", str(root / "cand")]) == 0
    assert main(["baseline", "save", str(base.path), "--out", str(root / "baseline.json")]) == 0
    (root / "policy.yaml").write_text(
        yaml.safe_dump(
            {
                "alpha": 0.05,
                "tasks": ["synthetic_math"],
                "metrics": {"pass@1": {"threshold": 0.5}},
                "health": {"infra_error_rate": {"max": 0.5}},
            }
        )
    )
    return root


#: The run settings of the valid configs (over :func:`conftest.run_settings`).
RUN_SETTINGS = {
    "n_rollouts": 2,
    "seed": 0,
    "ks": [1, 2],
    "sampling": {"temperature": 0.5, "max_tokens": 64},
    "concurrency": 2,
    "timeout_s": 5,
    "max_retries": 0,
    "grading_workers": 0,
    "denominator_policy": "judged",
}


@contextlib.contextmanager
def _copy(pristine: Path) -> Iterator[Path]:
    work = Path(tempfile.mkdtemp(prefix="rolleval-broken-"))
    try:
        shutil.copytree(pristine, work, dirs_exist_ok=True)
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _invoke(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def _check_refused(
    case: str, kind: str, work: Path, target: Path, args: list[str], *, name: str | None = None
) -> None:
    """The property for a wrong input: exit 2, one line naming the file, nothing changed."""
    before = _snapshot(work)
    code, _, err = _invoke(args)
    _COUNTS.setdefault(case, Counter())[f"{kind}: exit {code}"] += 1
    assert code == 2, (kind, code, err)
    assert err.count("\n") == 1 and err.startswith("rolleval: error: "), err
    assert "Traceback" not in err
    assert (name or target.name) in err, err
    assert _snapshot(work) == before, "an exit 2 changed files on disk"


def _check_accepted(case: str, kind: str, args: list[str]) -> None:
    code, _, err = _invoke(args)
    _COUNTS.setdefault(case, Counter())[f"{kind}: exit {code} (accepted by design)"] += 1
    assert code == 0, (kind, err)


@pytest.fixture(scope="module", autouse=True)
def _figures() -> Iterator[None]:
    yield
    for case, counts in sorted(_COUNTS.items()):
        record_figure("broken_inputs", case, dict(sorted(counts.items())))


# ----------------------------------------------------------------------------- mutations


def _wrong(kinds: str) -> st.SearchStrategy[Any]:
    """Values of the wrong type: l(ist) d(ict) t(ext, not a number) i(nt) f(ractional float)
    n(ull)."""
    options = {
        "l": st.lists(st.integers(-3, 3), min_size=1, max_size=3),
        "d": st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 3), min_size=1),
        "t": st.text(alphabet="xyzq", min_size=1, max_size=6),
        "i": st.integers(-5, 50),
        "f": st.sampled_from([1.5, -0.25, 2.75]),
        "n": st.none(),
    }
    return st.one_of(*(options[k] for k in kinds))


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def _encodings(data: bytes) -> st.SearchStrategy[bytes]:
    """The same text in a wrong encoding, or with bytes that are not UTF-8 spliced in."""

    @st.composite
    def spliced(draw: st.DrawFn) -> bytes:
        at = draw(st.integers(0, len(data)))
        junk = draw(st.sampled_from([b"\xff", b"\xfe\xff", b"\xc3", b"\xe9t\xe9", b"\x80\x80"]))
        return data[:at] + junk + data[at:]

    return st.one_of(
        st.just(data.decode("utf-8").encode("utf-16")),
        st.just(data.decode("utf-8").encode("utf-32")),
        st.just(("# caf\u00e9\n" + data.decode("utf-8")).encode("latin-1")),
        spliced(),
    )


def _cut_middle_line(draw: st.DrawFn, data: bytes) -> bytes:
    """Truncate one line that is not the last (the rest of the file kept): a torn record in
    the middle of a JSONL file, which no reader may take for a torn tail."""
    lines = data.splitlines(keepends=True)
    i = draw(st.integers(0, len(lines) - 2))
    line = lines[i].rstrip(b"\n")
    cut = draw(st.integers(1, len(line) - 1))
    lines[i] = line[:cut] + b"\n"
    return b"".join(lines)


# ----------------------------------------------------------------------------- run config

CONFIG_WRONG_TYPES: dict[tuple[Any, ...], str] = {
    ("model",): "ldi",
    ("n_rollouts",): "tldf",
    ("seed",): "tldf",
    ("concurrency",): "tlf",
    ("timeout_s",): "tld",
    ("max_retries",): "tlf",
    ("endpoints",): "di",
    ("tasks",): "di",
    ("ks",): "tdi",
    ("sampling",): "lti",
    ("sampling", "temperature"): "tl",
    ("sampling", "max_tokens"): "tlf",
    ("denominator_policy",): "lit",
    ("tasks", 0, "path"): "ldi",
    ("tasks", 0, "question_field"): "ldi",
    ("tasks", 0, "type"): "lit",
    ("tasks", 0, "name"): "ldi",
}
CONFIG_ABSURD: dict[tuple[Any, ...], list[Any]] = {
    ("n_rollouts",): [0, -1, 10**9],
    ("concurrency",): [0, -2],
    ("timeout_s",): [0, -1.0, float("nan")],
    ("max_retries",): [-1],
    ("limit",): [0, -4],
    ("ks",): [[0], [3], [-1, 1]],
    ("grading_workers",): [-1],
    ("sampling", "temperature"): [-1.0, float("nan")],
    ("sampling", "top_p"): [0, 1.5],
    ("sampling", "max_tokens"): [0, -8],
}


def _config_is_valid(path: Path) -> bool:
    from rolleval._runner import resolve_tasks
    from rolleval._runner._config import build_config, load_config_file

    try:
        resolve_tasks(build_config(load_config_file(path)))
    except RollevalError:
        return False
    return True


def _run_args(work: Path, config: str) -> list[str]:
    return ["run", "--config", str(work / config), "--out", str(work / "out"), "--no-progress"]


@st.composite
def config_mutations(draw: st.DrawFn, text: str) -> tuple[str, bytes]:
    kind = draw(
        st.sampled_from(
            ["truncation", "wrong_type", "encoding", "unknown_key", "duplicate", "absurd_value"]
        )
    )
    doc = yaml.safe_load(text)
    if kind == "truncation":
        return kind, text.encode()[: draw(st.integers(0, len(text) - 2))]
    if kind == "wrong_type":
        path = draw(st.sampled_from(sorted(CONFIG_WRONG_TYPES, key=str)))
        _set(doc, path, draw(_wrong(CONFIG_WRONG_TYPES[path])))
    elif kind == "encoding":
        return kind, draw(_encodings(text.encode()))
    elif kind == "unknown_key":
        where = draw(st.sampled_from([(), ("sampling",), ("tasks", 0)]))
        target = doc
        for key in where:
            target = target[key]
        target["bogus_" + draw(st.text(alphabet="abc", min_size=1, max_size=4))] = 1
    elif kind == "duplicate":
        if draw(st.booleans()):
            doc["tasks"].append(dict(doc["tasks"][0]))
        else:  # the same key twice in one mapping
            key = draw(st.sampled_from(["model", "n_rollouts", "seed", "tasks"]))
            return kind, (text + yaml.safe_dump({key: doc[key]})).encode()
    else:
        path = draw(st.sampled_from(sorted(CONFIG_ABSURD, key=str)))
        _set(doc, path, draw(st.sampled_from(CONFIG_ABSURD[path])))
    return kind, yaml.safe_dump(doc).encode()


@SETTINGS
@given(data=st.data())
def test_run_config(pristine: Path, data: st.DataObject) -> None:
    fmt = data.draw(st.sampled_from(["jsonl", "csv", "parquet"]))
    name = f"config_{fmt}.yaml"
    with _copy(pristine) as work:
        kind, mutated = data.draw(config_mutations((work / name).read_text()))
        (work / name).write_bytes(mutated)
        if kind == "truncation":
            assume(not _config_is_valid(work / name))
        _check_refused("run config (YAML)", kind, work, work / name, _run_args(work, name))


# ----------------------------------------------------------------------------- task data


def _rows(work: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (work / "data.jsonl").read_text().splitlines()]


def _write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)


def _write_csv(path: Path, rows: list[dict[str, Any]], header: list[str]) -> None:
    import csv

    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for row in rows:
            writer.writerow([row.get(h, "") for h in header])


@st.composite
def data_mutations(draw: st.DrawFn, work: Path, fmt: str) -> tuple[str, bool]:
    """Mutate ``work/data.<fmt>``; returns (kind, must be refused)."""
    path = work / f"data.{fmt}"
    rows = _rows(work)
    kinds = ["truncation", "wrong_type", "encoding", "unknown_key", "duplicate", "absurd_value"]
    if fmt == "csv":
        kinds.remove("wrong_type")  # every CSV field is text
    if fmt == "parquet":
        kinds.remove("encoding")  # binary; byte damage is the truncation case
    kind = draw(st.sampled_from(kinds))
    i = draw(st.integers(0, len(rows) - 1))
    field = "id"
    if kind == "truncation":
        data = path.read_bytes()
        if fmt == "jsonl":
            path.write_bytes(_cut_middle_line(draw, data))
        else:
            path.write_bytes(data[: draw(st.integers(0, len(data) - 2))])
        return kind, True
    if kind == "encoding":
        path.write_bytes(draw(_encodings(path.read_bytes())))
        return kind, True
    if kind == "wrong_type":
        field = draw(st.sampled_from(["id", "question", "answer"]))
        rows[i][field] = draw(_wrong("ldn"))
    elif kind == "unknown_key":
        for row in rows:
            row["extra_" + draw(st.text(alphabet="abc", min_size=1, max_size=3))] = "x"
    elif kind == "duplicate":
        rows.insert(draw(st.integers(0, len(rows))), dict(rows[i]))
    else:
        field = draw(st.sampled_from(["id", "question"]))
        rows[i][field] = ""
    if fmt == "jsonl":
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    elif fmt == "csv":
        header = list(dict.fromkeys(k for r in rows for k in r))
        _write_csv(path, rows, header)
    else:
        if kind == "wrong_type":  # one column, one type: the whole column takes it
            for row in rows:
                row[field] = rows[i][field]
        _write_parquet(path, rows)
    return kind, kind != "unknown_key"


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
@SETTINGS
@given(data=st.data())
def test_task_data(pristine: Path, fmt: str, data: st.DataObject) -> None:
    name = f"config_{fmt}.yaml"
    with _copy(pristine) as work:
        kind, refused = data.draw(data_mutations(work, fmt))
        args = _run_args(work, name)
        case = f"task data ({fmt.upper()})"
        if kind == "truncation" and fmt == "csv":
            assume(not _config_is_valid(work / name))
        if refused:
            _check_refused(case, kind, work, work / f"data.{fmt}", args)
        else:
            _check_accepted(case, kind, args)


# ----------------------------------------------------------------------------- run directory

RECORD_WRONG_TYPES: dict[str, dict[str, str]] = {
    "judgements.jsonl": {
        "problem_id": "ldi",
        "index": "tldf",
        "status": "ldi",
        "correct": "tldi",
        "extracted": "ld",
        "output_tokens": "tld",
    },
    "rollouts.jsonl": {"problem_id": "ldi", "index": "tldf"},
    "prompts.jsonl": {"problem_id": "ldin"},
}
JSON_WRONG_TYPES: dict[str, dict[tuple[str, ...], str]] = {
    "manifest.json": {
        ("format",): "ldi",
        ("schema_version",): "tld",
        ("tasks",): "dit",
        ("run_id",): "ld",
    },
    "task.json": {
        ("n_rollouts",): "tld",
        ("ks",): "tdi",
        ("denominator_policy",): "ldi",
        ("grader",): "lit",
        ("problem_hashes",): "lit",
    },
}
ABSURD: dict[str, list[tuple[tuple[str, ...], Any]]] = {
    "manifest.json": [(("schema_version",), 999), (("schema_version",), -1), (("format",), "")],
    "task.json": [(("n_rollouts",), 0), (("n_rollouts",), -3), (("ks",), [0]), (("ks",), [999])],
    "judgements.jsonl": [(("index",), -1), (("output_tokens",), -5), (("status",), "")],
    "rollouts.jsonl": [(("index",), -1), (("index",), -(10**6))],
    "prompts.jsonl": [(("problem_id",), "")],
}
#: Mutations a run-directory file accepts by design (docs/run-format.md): unknown fields
#: (forward compatibility); in JSONL records a repeated record (the first one counts, the
#: rest are counted as duplicates) and an index at or beyond n (counted, ignored).
ACCEPTED: dict[str, tuple[str, ...]] = {
    # the typed readers refuse unknown fields (a typo, or a file from another tool); the
    # report's columnar judgement reader skips the fields it does not use
    "judgements.jsonl": ("unknown_key", "duplicate"),
    # repeated records: the run format counts them and the first one wins
    "rollouts.jsonl": ("duplicate",),
    "prompts.jsonl": ("duplicate",),
}
#: file -> the command that reads it (the run directory is ``base``).
READERS: dict[str, list[str]] = {
    "manifest.json": ["report", "{run}"],
    "task.json": ["report", "{run}"],
    "judgements.jsonl": ["report", "{run}"],
    "prompts.jsonl": ["show", "{run}"],
    "rollouts.jsonl": ["regrade", "{run}", "--workers", "0"],
}


def _run_file(work: Path, name: str) -> Path:
    return (
        work / "base" / name
        if name == "manifest.json"
        else work / "base/tasks/synthetic_math" / name
    )


@st.composite
def run_file_mutations(draw: st.DrawFn, path: Path) -> tuple[str, bool]:
    name = path.name
    jsonl = name.endswith(".jsonl")
    kind = draw(
        st.sampled_from(
            ["truncation", "wrong_type", "encoding", "unknown_key", "duplicate", "absurd_value"]
        )
    )
    data = path.read_bytes()
    if kind == "truncation":
        path.write_bytes(
            _cut_middle_line(draw, data) if jsonl else data[: draw(st.integers(0, len(data) - 2))]
        )
        return kind, True
    if kind == "encoding":
        path.write_bytes(draw(_encodings(data)))
        return kind, True
    if jsonl:
        records = [orjson.loads(x) for x in data.splitlines()]
        i = draw(st.integers(0, len(records) - 1))
        if kind == "wrong_type":
            fields = RECORD_WRONG_TYPES[name]
            field = draw(st.sampled_from(sorted(fields)))
            records[i][field] = draw(_wrong(fields[field]))
        elif kind == "unknown_key":
            records[i]["future_field_" + draw(st.text(alphabet="ab", min_size=1, max_size=3))] = 1
        elif kind == "duplicate":
            records.insert(draw(st.integers(0, len(records))), dict(records[i]))
        else:
            field_path, value = draw(st.sampled_from(ABSURD[name]))
            records[i][field_path[0]] = value
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    else:
        doc = orjson.loads(data)
        if kind == "wrong_type":
            fields = JSON_WRONG_TYPES[name]
            field_path = draw(st.sampled_from(sorted(fields)))
            _set(doc, field_path, draw(_wrong(fields[field_path])))
        elif kind == "unknown_key":
            doc["future_field_" + draw(st.text(alphabet="ab", min_size=1, max_size=3))] = 1
        elif kind == "duplicate":  # the same key twice in one JSON object
            key = draw(st.sampled_from(sorted(doc)))
            text = data.decode().rstrip().rstrip("}")
            path.write_bytes(f'{text}, "{key}": {json.dumps(doc[key])}}}\n'.encode())
            return kind, True
        else:
            field_path, value = draw(st.sampled_from(ABSURD[name]))
            _set(doc, field_path, value)
        path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    return kind, kind not in ACCEPTED.get(name, ())


@pytest.mark.parametrize("name", sorted(READERS))
@SETTINGS
@given(data=st.data())
def test_run_directory_file(pristine: Path, name: str, data: st.DataObject) -> None:
    with _copy(pristine) as work:
        path = _run_file(work, name)
        kind, refused = data.draw(run_file_mutations(path))
        args = [a.format(run=work / "base") for a in READERS[name]]
        if refused:
            _check_refused(f"run directory: {name}", kind, work, path, args)
        else:
            _check_accepted(f"run directory: {name}", kind, args)


# ----------------------------------------------------------------------------- baseline, policy

POLICY_WRONG_TYPES: dict[tuple[Any, ...], str] = {
    ("alpha",): "tld",
    ("tasks",): "di",
    ("metrics",): "lit",
    ("metrics", "pass@1"): "lit",
    ("metrics", "pass@1", "threshold"): "tld",
    ("health",): "lit",
    ("health", "infra_error_rate", "max"): "tld",
}
POLICY_ABSURD: dict[tuple[Any, ...], list[Any]] = {
    ("alpha",): [0, 1, 1.5, -0.1, float("nan")],
    ("metrics", "pass@1", "threshold"): [-0.5, float("nan")],
    ("health", "infra_error_rate", "max"): [-1, float("nan")],
    ("tasks",): [["no_such_task"], []],
}


def _policy_is_valid(path: Path) -> bool:
    from rolleval.compare import load_policy

    try:
        load_policy(path)
    except RollevalError:
        return False
    return True


@st.composite
def policy_mutations(draw: st.DrawFn, path: Path) -> str:
    text = path.read_text()
    doc = yaml.safe_load(text)
    kind = draw(
        st.sampled_from(
            ["truncation", "wrong_type", "encoding", "unknown_key", "duplicate", "absurd_value"]
        )
    )
    if kind == "truncation":
        path.write_bytes(text.encode()[: draw(st.integers(0, len(text) - 2))])
        return kind
    if kind == "encoding":
        path.write_bytes(draw(_encodings(text.encode())))
        return kind
    if kind == "wrong_type":
        field_path = draw(st.sampled_from(sorted(POLICY_WRONG_TYPES, key=str)))
        _set(doc, field_path, draw(_wrong(POLICY_WRONG_TYPES[field_path])))
    elif kind == "unknown_key":
        where = draw(st.sampled_from([(), ("metrics", "pass@1"), ("health", "infra_error_rate")]))
        target = doc
        for key in where:
            target = target[key]
        target["bogus_" + draw(st.text(alphabet="ab", min_size=1, max_size=3))] = 1
    elif kind == "duplicate":
        key = draw(st.sampled_from(sorted(doc)))
        path.write_text(text + yaml.safe_dump({key: doc[key]}))
        return kind
    else:
        field_path = draw(st.sampled_from(sorted(POLICY_ABSURD, key=str)))
        _set(doc, field_path, draw(st.sampled_from(POLICY_ABSURD[field_path])))
    path.write_text(yaml.safe_dump(doc))
    return kind


@SETTINGS
@given(data=st.data())
def test_policy_file(pristine: Path, data: st.DataObject) -> None:
    with _copy(pristine) as work:
        path = work / "policy.yaml"
        kind = data.draw(policy_mutations(path))
        if kind == "truncation":
            assume(not _policy_is_valid(path))
        args = ["gate", str(work / "cand"), "--baseline", str(work / "baseline.json")]
        _check_refused("policy (YAML)", kind, work, path, [*args, "--policy", str(path)])


BASELINE_WRONG_TYPES: dict[tuple[Any, ...], str] = {
    ("format",): "ldi",
    ("tasks",): "lit",
    ("tasks", "synthetic_math"): "lit",
    ("tasks", "synthetic_math", "ids"): "dit",
}


@st.composite
def baseline_mutations(draw: st.DrawFn, path: Path) -> tuple[str, bool]:
    data = path.read_bytes()
    doc = orjson.loads(data)
    kind = draw(
        st.sampled_from(
            ["truncation", "wrong_type", "encoding", "unknown_key", "duplicate", "absurd_value"]
        )
    )
    if kind == "truncation":
        path.write_bytes(data[: draw(st.integers(0, len(data.rstrip()) - 1))])
        return kind, True
    if kind == "encoding":
        path.write_bytes(draw(_encodings(data)))
        return kind, True
    task = doc["tasks"]["synthetic_math"]
    if kind == "wrong_type":
        field_path = draw(st.sampled_from(sorted(BASELINE_WRONG_TYPES, key=str)))
        _set(doc, field_path, draw(_wrong(BASELINE_WRONG_TYPES[field_path])))
    elif kind == "unknown_key":
        doc["future_field"] = 1
    elif kind == "duplicate":
        task["ids"].append(task["ids"][draw(st.integers(0, len(task["ids"]) - 1))])
    else:
        field = draw(st.sampled_from(sorted(k for k, v in task.items() if isinstance(v, list))))
        task[field] = task[field][:-1] if draw(st.booleans()) else task[field] * 2
    path.write_bytes(orjson.dumps(doc))
    return kind, kind != "unknown_key"


@SETTINGS
@given(data=st.data())
def test_baseline_file(pristine: Path, data: st.DataObject) -> None:
    with _copy(pristine) as work:
        path = work / "baseline.json"
        kind, refused = data.draw(baseline_mutations(path))
        args = ["gate", str(work / "cand"), "--baseline", str(path), "--observe"]
        if refused:
            _check_refused("baseline file (JSON)", kind, work, path, args)
        else:
            _check_accepted("baseline file (JSON)", kind, args)
