"""The modules inside each package import one another one way only (no cycles).

A cycle between two private modules (even through an import inside a function) means
neither can be read, tested or changed alone; issue 9 broke ``tasks/_spec`` <-> ``_build``
and ``compare/_paired`` <-> ``_verdict``. Imports under ``if TYPE_CHECKING:`` are not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "rolleval"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path, module: str) -> set[str]:
    """Every rolleval module ``module`` imports, anywhere in the file (functions included)."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("rolleval"):
                found.add(target)
                for alias in node.names:  # ``from . import _x`` imports the module _x
                    found.add(f"{target}.{alias.name}")
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("rolleval"))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        graph[name] = {t for t in _imports(path, name) if t in files and t != name}
    return graph


def _cycles_within(package: str, graph: dict[str, set[str]]) -> list[list[str]]:
    """Cycles among the modules directly inside ``package`` (the package itself excluded)."""
    inside = {m for m in graph if m.rsplit(".", 1)[0] == package and m != package}
    edges = {m: graph[m] & inside for m in inside}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(edges[m]):
            if state.get(t) == 1:
                cycles.append([*stack[stack.index(t) :], t])
            elif t not in state:
                dfs(t)
        stack.pop()
        state[m] = 2

    for m in sorted(inside):
        if m not in state:
            dfs(m)
    return cycles


#: Cycles left on purpose, each with the reason; the test fails when one disappears, so the
#: entry is removed with the cycle. None is left.
ALLOWED: dict[str, list[list[str]]] = {}

GRAPH = _graph()
PACKAGES = sorted({m for m in GRAPH if (SRC.parent / m.replace(".", "/") / "__init__.py").exists()})


def test_the_graph_sees_the_packages_and_their_imports():
    assert {"rolleval.tasks", "rolleval.compare", "rolleval.records"} <= set(PACKAGES)
    assert "rolleval.tasks._problem" in GRAPH["rolleval.tasks._build"]
    # an import inside a function counts
    assert "rolleval.tasks._build" in GRAPH["rolleval.tasks._spec"]


def test_the_cycle_finder_finds_a_cycle():
    graph = {"p": set(), "p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.a"}}
    assert _cycles_within("p", graph) == [["p.a", "p.b", "p.c", "p.a"]]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_inside_a_package(package):
    assert _cycles_within(package, GRAPH) == ALLOWED.get(package, [])


def test_the_top_level_is_small_and_private_modules_say_so():
    """At most 10 modules sit directly in ``src/rolleval``; every one that is not public is
    ``_``-prefixed, as is every package that is not public (the tree shows what users import)."""
    from rolleval._public import PUBLIC_MODULES

    top = sorted(p.stem for p in SRC.glob("*.py"))
    assert len(top) <= 10, top
    for stem in top:
        if stem == "__init__":
            continue
        assert stem.startswith("_") or f"rolleval.{stem}" in PUBLIC_MODULES, stem
    for pkg in sorted(p.parent.name for p in SRC.glob("*/__init__.py")):
        assert pkg.startswith("_") or f"rolleval.{pkg}" in PUBLIC_MODULES, pkg
