"""The docs state what the code does (issue 25 item 19): task types, the gate policy format,
the rollout seed."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_docs_tasks_lists_every_task_type():
    from rolleval.tasks import TASK_TYPES

    text = (DOCS / "tasks.md").read_text()
    key_row = next(line for line in text.splitlines() if line.startswith("| `type` |"))
    defaults = {m for m in re.findall(r"^\| `(\w+)` \| `\{\"type\"", text, flags=re.M)}
    for t in TASK_TYPES:
        assert f"`{t}`" in key_row, t
        assert t in defaults, t
    assert f"the {len(TASK_TYPES)} task types" in key_row


def test_docs_cli_documents_every_gate_policy_key(tmp_path):
    from rolleval.compare import load_policy
    from rolleval.errors import DataError

    bad = tmp_path / "p.yaml"
    bad.write_text("bogus: 1\n")
    with pytest.raises(DataError) as exc:
        load_policy(bad)
    allowed = re.search(r"allowed: ([\w, ]+)\)", str(exc.value)).group(1).split(", ")
    text = (DOCS / "cli.md").read_text()
    section = text.split("## Gate policy files", 1)[1].split("\n## ", 1)[0]
    for key in allowed:
        assert f"| `{key}` |" in section, key
    for limit in ("threshold", "max_increase", "max"):
        assert f"{limit}: NUMBER" in section, limit


def test_docs_run_format_states_the_seed_derive_seed_computes():
    from rolleval import derive_seed

    for run_seed, pid, index in [(0, "gsm8k/1", 0), (11, "sums/s03", 7), (2**40, "x", 99)]:
        digest = hashlib.sha256(f"{run_seed}\x00{pid}\x00{index}".encode()).digest()
        assert derive_seed(run_seed, pid, index) == int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
    text = (DOCS / "run-format.md").read_text()
    assert 'int.from_bytes(digest[:4], "big") & 0x7FFFFFFF' in text
    assert "first 31 bits" not in text and "first 31 bits" not in (DOCS / "cli.md").read_text()


#: A Python file under tests/ that a text names (``tests/compare/test_compare_core.py``, or a
#: glob such as ``tests/compare/test_compare_core*.py``). Folders are not checked: the docs
#: also name other projects' (``tests/fixtures/compare/`` of TraceLens's sdist).
_TEST_PATH = re.compile(r"(?<![\w/.])tests/[\w*./-]*\.py\b")


def _texts_naming_tests() -> list[Path]:
    """The docs, README, bench, scripts, sources, tests and pyproject (not the CHANGELOG,
    whose entries name the paths of their day)."""
    root = DOCS.parent
    found = [root / "README.md", root / "pyproject.toml", *DOCS.glob("*.md")]
    for folder in ("bench", "scripts", "src", "tests"):
        for path in sorted((root / folder).rglob("*")):
            hidden = any(part.startswith(".") for part in path.relative_to(root).parts)
            if path.suffix in (".py", ".md", ".sh") and not hidden:  # not bench/.venv-peers
                found.append(path)
    return found


def test_every_test_path_the_texts_name_exists():
    root = DOCS.parent
    missing = []
    for path in _texts_naming_tests():
        for name in _TEST_PATH.findall(path.read_text(encoding="utf-8", errors="replace")):
            if not any(root.glob(name)):
                missing.append(f"{path.relative_to(root)}: {name}")
    assert missing == []
