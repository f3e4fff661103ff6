"""Tasks from user data files (task_from_config), including every error path."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import pytest

from rolleval.errors import DataError, MissingDependencyError, UsageError
from rolleval.tasks import (
    TaskSpec,
    default_grader,
    default_sampling,
    preset_config,
    task_from_config,
)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


MATH_ROWS = [
    {"id": "b", "problem": "What is 2+2?", "answer": 4, "subject": "arith"},
    {"id": "a", "problem": "What is 1/2 as a decimal?", "answer": ["0.5", ".5"], "subject": "frac"},
    {"id": "c", "problem": "Solve x+1=3.", "answer": "2", "subject": "arith"},
]


def math_config(path: Path, **extra) -> dict:
    return {
        "name": "my_math",
        "path": str(path),
        "type": "math",
        "id_field": "id",
        "question_field": "problem",
        "answer_field": "answer",
        **extra,
    }


# ----------------------------------------------------------------------------- happy paths


def test_jsonl_math_task(tmp_path):
    path = write_jsonl(tmp_path / "m.jsonl", MATH_ROWS)
    spec = task_from_config(
        math_config(
            path,
            cluster_field="subject",
            system="You are careful.",
            sampling={"temperature": 0.6, "max_tokens": 2048},
            grader={"extractors": ["boxed", "last_number"]},
            extras_fields=["subject"],
        )
    )
    assert isinstance(spec, TaskSpec)
    assert spec.name == "my_math" and spec.type == "math"
    assert spec.grader == {"type": "math", "extractors": ["boxed", "last_number"]}
    assert spec.sampling == {"temperature": 0.6, "top_p": 1.0, "max_tokens": 2048, "stop": None}
    assert spec.source["path"] == str(path)
    assert len(spec.source["sha256"]) == 64
    assert spec.licence == "see upstream dataset"
    assert spec.cluster_field == "subject"
    problems = spec.load()
    assert [p.problem_id for p in problems] == ["my_math/a", "my_math/b", "my_math/c"]
    a, b, c = problems
    assert a.reference == ["0.5", ".5"]
    assert b.reference == "4"
    assert c.reference == "2"
    assert a.cluster == "frac" and b.cluster == "arith"
    assert a.extras == {"subject": "frac"}
    assert a.prompt[0] == {"role": "system", "content": "You are careful."}
    assert a.prompt[1]["role"] == "user"
    assert "What is 1/2 as a decimal?" in a.prompt[1]["content"]
    assert r"\boxed{}" in a.prompt[1]["content"]
    assert spec.load() == problems
    assert spec.load(limit=2) == problems[:2]


def test_default_ids_are_row_numbers(tmp_path):
    rows = [{"problem": f"q{i}", "answer": str(i)} for i in range(1, 13)]
    path = write_jsonl(tmp_path / "m.jsonl", rows)
    cfg = math_config(path)
    del cfg["id_field"]
    problems = task_from_config(cfg).load()
    assert problems[0].problem_id == "my_math/row-000001"
    assert problems[11].problem_id == "my_math/row-000012"
    assert [p.reference for p in problems] == [str(i) for i in range(1, 13)]  # file order


def test_template_and_completion_prompt(tmp_path):
    path = write_jsonl(tmp_path / "m.jsonl", MATH_ROWS)
    spec = task_from_config(
        math_config(
            path,
            chat=False,
            system="SYS",
            template="[{{ subject }}] {{ question }} (id {{ id }}, task {{ task }})",
        )
    )
    a = spec.load()[0]
    assert a.prompt == "SYS\n\n[frac] What is 1/2 as a decimal? (id a, task my_math)"


def test_short_answer_with_fewshot_and_aliases(tmp_path):
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [{"q": "Snow is white. What color is snow?", "a": "white"}, {"q": "Ash?", "a": "Grey"}],
    )
    spec = task_from_config(
        {
            "name": "colours",
            "path": str(path),
            "type": "short_answer",
            "question_field": "q",
            "answer_field": "a",
            "aliases": {"grey": ["gray"]},
            "fewshot": [{"question": "Coal is black. What color is coal?", "answer": "black"}],
        }
    )
    assert spec.grader == default_grader("short_answer")
    assert spec.sampling == default_sampling("short_answer")
    first, second = spec.load()
    assert first.reference == "white"
    assert second.reference == ["Grey", "gray"]
    assert first.prompt[-1]["content"] == (
        "Answer with a short phrase.\nQ: Coal is black. What color is coal?\nA: black\n"
        "Q: Snow is white. What color is snow?\nA:"
    )


def test_csv_mcq_with_choice_columns_and_letters(tmp_path):
    path = write_csv(
        tmp_path / "q.csv",
        ["id", "question", "A", "B", "C", "D", "answer"],
        [
            ["q1", "Capital of France?", "Rome", "Paris", "Oslo", "Bern", "B"],
            ["q2", "2+2?", "3", "4", "5", "6", "b"],
        ],
    )
    spec = task_from_config(
        {
            "name": "csvmcq",
            "path": str(path),
            "type": "mcq",
            "id_field": "id",
            "choices_field": ["A", "B", "C", "D"],
            "answer_format": "letter",
        }
    )
    assert spec.grader == {"type": "mcq", "letters": "ABCD"}
    assert spec.sampling["max_tokens"] == 256
    q1, q2 = spec.load()
    assert q1.reference == "B" and q2.reference == "B"
    assert q1.extras == {"choices": ["Rome", "Paris", "Oslo", "Bern"], "permutation": [0, 1, 2, 3]}
    assert "A. Rome\nB. Paris\nC. Oslo\nD. Bern" in q1.prompt[-1]["content"]
    assert "X is A, B, C or D" in q1.prompt[-1]["content"]


def test_mcq_answer_forms_auto(tmp_path):
    rows = [
        {"id": "idx", "question": "q", "choices": ["w", "x", "y"], "answer": 2},
        {"id": "let", "question": "q", "choices": ["w", "x", "y"], "answer": "A"},
        {"id": "txt", "question": "q", "choices": ["w", "x", "y"], "answer": "x"},
        {"id": "num", "question": "q", "choices": ["10", "20", "30"], "answer": "20"},
    ]
    path = write_jsonl(tmp_path / "q.jsonl", rows)
    spec = task_from_config({"name": "t", "path": str(path), "type": "mcq", "id_field": "id"})
    refs = {p.problem_id: p.reference for p in spec.load()}
    assert refs == {"t/idx": "C", "t/let": "A", "t/txt": "B", "t/num": "B"}


def test_mcq_index1_and_json_choices_in_csv(tmp_path):
    path = write_csv(
        tmp_path / "q.csv",
        ["question", "choices", "answer"],
        [["q", json.dumps(["a", "b", "c"]), "1"], ["r", json.dumps(["a", "b"]), "2"]],
    )
    spec = task_from_config(
        {"name": "t", "path": str(path), "type": "mcq", "answer_format": "index1"}
    )
    assert [p.reference for p in spec.load()] == ["A", "B"]


def test_mcq_shuffle_is_seeded_and_consistent(tmp_path):
    rows = [
        {"id": str(i), "question": f"q{i}", "choices": ["right", "w1", "w2", "w3"], "answer": 0}
        for i in range(40)
    ]
    path = write_jsonl(tmp_path / "q.jsonl", rows)
    cfg = {"name": "t", "path": str(path), "type": "mcq", "id_field": "id", "shuffle_choices": True}
    problems = task_from_config(cfg).load()
    assert problems == task_from_config(cfg).load()
    for p in problems:
        assert p.extras["choices"][ord(p.reference) - ord("A")] == "right"
        assert p.extras["choices"] == [rows[0]["choices"][i] for i in p.extras["permutation"]]
    assert len({p.reference for p in problems}) == 4
    reseeded = task_from_config({**cfg, "seed": 1}).load()
    assert [p.reference for p in reseeded] != [p.reference for p in problems]


def test_json_list_file(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(MATH_ROWS), encoding="utf-8")
    assert len(task_from_config(math_config(path)).load()) == 3


def test_config_file_with_relative_path(tmp_path):
    (tmp_path / "data").mkdir()
    write_jsonl(tmp_path / "data" / "m.jsonl", MATH_ROWS)
    config = tmp_path / "task.yaml"
    config.write_text(
        "name: my_math\npath: data/m.jsonl\ntype: math\nid_field: id\n"
        "question_field: problem\nsampling: {temperature: 0.6}\n",
        encoding="utf-8",
    )
    spec = task_from_config(config)
    assert spec.source["path"] == str(tmp_path / "data" / "m.jsonl")
    assert spec.sampling["temperature"] == 0.6
    assert len(spec.load()) == 3


def test_preset_aime(tmp_path):
    path = write_jsonl(
        tmp_path / "aime.jsonl",
        [{"id": 60, "problem": "Find x.", "answer": "204", "solution": "..."}],
    )
    spec = task_from_config({"preset": "aime", "path": str(path), "sampling": {"max_tokens": 8192}})
    assert spec.name == "aime"
    assert spec.sampling == {"temperature": 0.6, "top_p": 0.95, "max_tokens": 8192, "stop": None}
    (p,) = spec.load()
    assert p.problem_id == "aime/60" and p.reference == "204"


def test_preset_gpqa_shuffles_the_correct_column(tmp_path):
    header = [
        "Record ID",
        "Question",
        "Correct Answer",
        "Incorrect Answer 1",
        "Incorrect Answer 2",
        "Incorrect Answer 3",
        "High-level domain",
    ]
    rows = [[f"rec{i}", f"Q{i}?", "yes", "no", "maybe", "never", "Physics"] for i in range(30)]
    path = write_csv(tmp_path / "gpqa.csv", header, rows)
    spec = task_from_config({"name": "gpqa_diamond", "preset": "gpqa", "path": str(path)})
    assert spec.shuffle_choices is True
    assert spec.licence.startswith("CC BY 4.0")
    problems = spec.load()
    assert {p.cluster for p in problems} == {"Physics"}
    for p in problems:
        assert p.extras["choices"]["ABCD".index(p.reference)] == "yes"
    assert len({p.reference for p in problems}) > 1


def test_preset_config_copy():
    cfg = preset_config("mmlu_pro")
    assert cfg["letters"] == "ABCDEFGHIJ" and "example" not in cfg
    cfg["letters"] = "AB"
    assert preset_config("mmlu_pro")["letters"] == "ABCDEFGHIJ"


# ----------------------------------------------------------------------------- error paths


def test_missing_field_names_row_fields_and_fix(tmp_path):
    path = write_jsonl(
        tmp_path / "m.jsonl",
        [
            {"id": "1", "problem": "p", "answer": "1"},
            {"id": "2", "problem": "p", "solution": "s"},
        ],
    )
    spec = task_from_config(math_config(path))
    with pytest.raises(DataError) as err:
        spec.load()
    assert str(err.value) == (
        f"{path}:2: row 2 has no field 'answer' (fields: id, problem, solution); set answer_field"
    )
    assert err.value.path == str(path) and err.value.line == 2


def test_missing_field_in_csv_reports_line(tmp_path):
    path = write_csv(tmp_path / "m.csv", ["id", "problem"], [["1", "p"]])
    with pytest.raises(
        DataError, match=r"m\.csv:2: row 1 has no field 'answer' \(fields: id, problem\)"
    ):
        task_from_config(math_config(path)).load()


def test_duplicate_ids_name_both_rows(tmp_path):
    rows = [
        {"id": "x", "problem": "p", "answer": "1"},
        {"id": "y", "problem": "p", "answer": "1"},
        {"id": "x", "problem": "p", "answer": "1"},
    ]
    path = write_jsonl(tmp_path / "m.jsonl", rows)
    with pytest.raises(DataError) as err:
        task_from_config(math_config(path)).load()
    message = str(err.value)
    assert message.startswith(f"{path}:3: row 3 has the same id 'x' as row 1 (line 1)")
    assert "ids must be unique" in message


def test_unknown_type(tmp_path):
    path = write_jsonl(tmp_path / "m.jsonl", MATH_ROWS)
    with pytest.raises(UsageError) as err:
        task_from_config(math_config(path, type="essay"))
    assert str(err.value) == (
        "task config 'my_math': type must be one of math, mcq, short_answer, qa, code, loglik, judge; got 'essay'"
    )


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(DataError) as err:
        task_from_config(math_config(missing))
    assert str(err.value).startswith(f"{missing}: data file not found")


def test_missing_config_file(tmp_path):
    with pytest.raises(DataError, match="task config file not found"):
        task_from_config(tmp_path / "task.yaml")


def test_unsupported_file_type(tmp_path):
    path = tmp_path / "m.txt"
    path.write_text("x", encoding="utf-8")
    with pytest.raises(
        DataError,
        match=r"unsupported file type '\.txt'; use one of \.jsonl, \.json, \.csv, \.parquet",
    ):
        task_from_config(math_config(path))


def test_missing_path_and_name(tmp_path):
    with pytest.raises(UsageError, match="path is required"):
        task_from_config({"name": "t", "type": "math"})
    path = write_jsonl(tmp_path / "m.jsonl", MATH_ROWS)
    with pytest.raises(UsageError, match="name must be a non-empty string"):
        task_from_config({"path": str(path), "type": "math"})


def test_unknown_config_key(tmp_path):
    path = write_jsonl(tmp_path / "m.jsonl", MATH_ROWS)
    with pytest.raises(UsageError, match=r"unknown key\(s\) question_feld \(known: "):
        task_from_config(math_config(path, question_feld="problem"))


def test_unknown_preset(tmp_path):
    path = write_jsonl(tmp_path / "m.jsonl", MATH_ROWS)
    with pytest.raises(UsageError, match="unknown preset 'hle'; presets: aime, gpqa, mmlu_pro"):
        task_from_config({"preset": "hle", "path": str(path)})


def test_builtin_only_keys_refused(tmp_path):
    path = write_jsonl(tmp_path / "m.jsonl", MATH_ROWS)
    with pytest.raises(UsageError, match="loader and data are for built-in tasks"):
        task_from_config(math_config(path, loader="olmo_gsm8k"))


def test_invalid_json_line(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps(MATH_ROWS[0]) + "\n\n{not json\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"m\.jsonl:3: row 2 is not valid JSON"):
        task_from_config(math_config(path)).load()


def test_row_not_an_object(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text("[1, 2]\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"m\.jsonl:1: row 1 is a list, not an object of fields"):
        task_from_config(math_config(path)).load()


def test_json_must_be_a_list(tmp_path):
    path = tmp_path / "m.json"
    path.write_text('{"rows": []}', encoding="utf-8")
    with pytest.raises(DataError, match="must hold a list of row objects"):
        task_from_config(math_config(path)).load()


def test_empty_file(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(DataError, match="task 'my_math' has no rows"):
        task_from_config(math_config(path)).load()


def test_csv_extra_cells(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("id,problem,answer\n1,p,2,extra\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"m\.csv:2: row 1 has more cells than the header"):
        task_from_config(math_config(path)).load()


def test_empty_answer(tmp_path):
    path = write_jsonl(tmp_path / "m.jsonl", [{"id": "1", "problem": "p", "answer": " "}])
    with pytest.raises(DataError, match=r"row 1 has no usable answer in field 'answer' \(' '\)"):
        task_from_config(math_config(path)).load()


def test_empty_question(tmp_path):
    path = write_jsonl(tmp_path / "m.jsonl", [{"id": "1", "problem": "", "answer": "1"}])
    with pytest.raises(DataError, match="row 1 field 'problem' must be non-empty text"):
        task_from_config(math_config(path)).load()


def test_template_errors(tmp_path):
    path = write_jsonl(tmp_path / "m.jsonl", MATH_ROWS)
    with pytest.raises(UsageError, match="template is not valid Jinja2"):
        task_from_config(math_config(path, template="{{ question "))
    spec = task_from_config(math_config(path, template="{{ question }} {{ level }}"))
    with pytest.raises(
        DataError,
        match=r"cannot fill the template: 'level' is undefined \(fields: id, problem, answer, subject\)",
    ):
        spec.load()


def test_mcq_errors(tmp_path):
    def spec_for(rows, **extra):
        path = write_jsonl(tmp_path / "q.jsonl", rows)
        return task_from_config({"name": "t", "path": str(path), "type": "mcq", **extra})

    five = [{"question": "q", "choices": list("vwxyz"), "answer": "A"}]
    with pytest.raises(
        DataError,
        match=r"row 1 has 5 choices but letters is 'ABCD'; set letters to at least 'ABCDE'",
    ):
        spec_for(five).load()
    assert spec_for(five, letters="ABCDE").load()[0].reference == "A"

    with pytest.raises(DataError, match=r"answer 'z' in field 'answer' is neither a letter ABC"):
        spec_for([{"question": "q", "choices": ["a", "b", "c"], "answer": "z"}]).load()
    with pytest.raises(DataError, match="could be a 0-based or a 1-based index; set answer_format"):
        spec_for([{"question": "q", "choices": ["a", "b", "c"], "answer": "1"}]).load()
    with pytest.raises(DataError, match="is ambiguous"):
        spec_for([{"question": "q", "choices": ["B", "A"], "answer": "A"}]).load()
    with pytest.raises(DataError, match="is not a 0-based index of the 3 choices"):
        spec_for([{"question": "q", "choices": ["a", "b", "c"], "answer": 3}]).load()
    with pytest.raises(DataError, match="needs at least 2"):
        spec_for([{"question": "q", "choices": ["a"], "answer": 0}]).load()
    with pytest.raises(DataError, match="field 'choices' is text, not a list of choices"):
        spec_for([{"question": "q", "choices": "a or b", "answer": 0}]).load()


def test_config_value_errors(tmp_path):
    path = write_jsonl(tmp_path / "m.jsonl", MATH_ROWS)
    cases = [
        ({"sampling": {"temprature": 1}}, "unknown sampling key(s) temprature"),
        ({"sampling": {"top_p": 0}}, "sampling.top_p must be in (0, 1]"),
        ({"sampling": {"max_tokens": 0}}, "sampling.max_tokens must be a positive integer"),
        ({"grader": {"type": "mcq"}}, "grader.type 'mcq' does not match the task type 'math'"),
        ({"letters": "ABCD"}, "letters only apply to type mcq (this task is math)"),
        ({"fewshot": [{"question": "q"}]}, "fewshot item 1 must have exactly the string keys"),
        ({"seed": "x"}, "seed must be an integer"),
    ]
    for extra, message in cases:
        with pytest.raises(UsageError) as err:
            task_from_config(math_config(path, **extra))
        assert message in str(err.value), (extra, str(err.value))
    with pytest.raises(UsageError, match="letters must be distinct capital letters"):
        task_from_config({"name": "t", "path": str(path), "type": "mcq", "letters": "AAB"})


def test_file_changed_after_configuring(tmp_path):
    path = write_jsonl(tmp_path / "m.jsonl", MATH_ROWS)
    spec = task_from_config(math_config(path))
    write_jsonl(path, MATH_ROWS[:1])
    with pytest.raises(DataError, match="the file changed since its task was configured"):
        spec.load()


def test_parquet(tmp_path):
    path = tmp_path / "m.parquet"
    if importlib.util.find_spec("pyarrow") is None:
        path.write_bytes(b"PAR1")
        with pytest.raises(MissingDependencyError) as err:
            task_from_config(math_config(path))
        assert str(err.value) == (
            "task 'my_math' reads a .parquet file, which needs pyarrow: pip install 'rolleval[parquet]'"
        )
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{**r, "answer": json.dumps(r["answer"])} for r in MATH_ROWS]
    pq.write_table(pa.Table.from_pylist(rows), path)
    problems = task_from_config(math_config(path)).load()
    assert [p.problem_id for p in problems] == ["my_math/a", "my_math/b", "my_math/c"]


def test_builtin_preset_over_own_file(tmp_path):
    path = write_jsonl(
        tmp_path / "g.jsonl", [{"id": "x1", "question": "Tom has 3 apples...", "answer": "7"}]
    )
    spec = task_from_config({"preset": "gsm8k", "name": "my_gsm", "path": str(path)})
    assert spec.grader["extractors"] == ["gsm8k", "answer_line", "boxed", "last_number"]
    assert spec.source == {"path": str(path), "sha256": spec.source["sha256"]}
    (p,) = spec.load()
    assert p.problem_id == "my_gsm/x1" and p.reference == "7"
    assert '"#### <number>"' in p.prompt[-1]["content"]
