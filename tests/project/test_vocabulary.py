"""One word per concept (``docs/architecture.md``, "One word per concept"), kept by the tree.

Each check reads the source, so a name that comes back fails here: "verdict" for a
comparison only (a grader's result is a ``Judgement``), ``tau`` for G-Pass@k only (the
compare threshold is ``threshold``), no ``k`` for rollouts per problem, never ``a``/``b``
for the two sides, "judged" the one word for the rollouts in a denominator.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from types import ModuleType

import rolleval.compare
import rolleval.stats

SRC = Path(__file__).resolve().parents[2] / "src" / "rolleval"

#: Where ``tau`` is G-Pass@k's fraction (and only there may a name be ``tau``).
GPASS_HOMES = {"metrics", "_report/_build.py", "compare/_evidence.py"}


def _files() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(SRC).as_posix()


def _names(tree: ast.AST) -> set[str]:
    """Every name a module binds or declares: arguments, variables, functions, classes and
    attributes of classes (strings and comments are not names)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
        elif isinstance(node, ast.keyword) and node.arg:
            out.add(node.arg)
    return out


def _offenders(pattern: str, *, skip: set[str] = frozenset()) -> list[str]:
    rx = re.compile(pattern)
    found = []
    for path in _files():
        rel = _rel(path)
        if any(rel == s or rel.startswith(s + "/") for s in skip):
            continue
        names = _names(ast.parse(path.read_text(encoding="utf-8")))
        found += [f"{rel}: {n}" for n in sorted(names) if rx.fullmatch(n)]
    return found


def test_a_graders_result_is_a_judgement_not_a_verdict():
    """No name in ``rolleval.grading`` (nor the record stream the judgement becomes) says
    verdict: a grader judges one rollout, a comparison gives a verdict."""
    bad = []
    for path in _files():
        rel = _rel(path)
        if rel.startswith("grading/") or rel in ("records/_streams.py", "metrics/_vote.py"):
            names = _names(ast.parse(path.read_text(encoding="utf-8")))
            bad += [f"{rel}: {n}" for n in sorted(names) if "verdict" in n.lower()]
    assert bad == []


def test_tau_names_g_pass_only():
    """A name ``tau`` (or ``*_tau``) outside the G-Pass@k code is the compare threshold
    called by G-Pass@k's letter."""
    assert _offenders(r"(.*_)?tau", skip=GPASS_HOMES) == []


def test_no_k_for_rollouts_per_problem_or_runs_per_side():
    """``k`` is pass@k's draws: a side's rollouts per problem is ``n_rollouts_<side>``, its
    replicate runs ``n_runs``."""
    assert _offenders(r"k_(baseline|candidate)|sigma2_[ab]|k_[ab]_?|n_rollouts_[ab]") == []


def test_never_a_or_b_for_the_two_sides():
    """The two sides are ``baseline`` and ``candidate``: no ``run_a``, ``side_b``,
    ``frame_a``... (``a``/``b`` stay legal where they are a generic pair, e.g. Fisher's
    table or a Beta law)."""
    sides = r"(run|side|frame|pair|counts|task|settings|manifest)_[ab]"
    assert _offenders(sides) == []
    side_types = re.compile(r"\b(ProblemFrame|_Counts|Mapping\[str, Any\])")
    bad = []
    for path in _files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.arg) and node.arg in ("a", "b") and node.annotation:
                typed = ast.unparse(node.annotation)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                typed = ast.unparse(node.annotation) if node.target.id in ("a", "b") else ""
            else:
                continue
            if side_types.search(typed):
                bad.append(f"{_rel(path)}:{node.lineno}")
    assert bad == [], "a side (a frame, counts or settings) named a/b"


def _public_functions(module: ModuleType) -> list[str]:
    return [name for name in module.__all__ if inspect.isfunction(getattr(module, name))]


def test_the_public_statistics_name_their_sides_baseline_and_candidate():
    """No public function of ``rolleval.stats`` or ``rolleval.compare`` takes a parameter
    ``a`` or ``b`` (scipy's names for two samples): the sides of a paired comparison are
    ``candidate`` and ``baseline`` (``sign_flip_test``, ``cluster_sign_flip_test``,
    ``paired_se``)."""
    bad = []
    for module in (rolleval.stats, rolleval.compare):
        for name in _public_functions(module):
            params = inspect.signature(getattr(module, name)).parameters
            bad += [f"{module.__name__}.{name}({p})" for p in params if p in ("a", "b")]
    assert bad == []
    assert _public_functions(rolleval.stats), "the check must see the public functions"


def test_one_word_for_the_rollouts_in_a_denominator():
    """``judged`` (with ``gradable`` and ``unjudged`` beside it, ``docs/contract.md``,
    "Notation and counts"): no name says the same set is "scored" (a token or an option
    scored by a model, in drift and log-likelihood code, is another thing)."""
    assert _offenders(r"n_scored|scored_mask|\w*scored_rollouts?") == []
