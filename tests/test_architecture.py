"""The layers hold: no import cycle among our modules, and no import points up a layer.

The rule (docs/architecture.md, "Layers"): ``orchestrator`` → ``learners`` → ``tasks``; inside
``orchestrator``: ``cli`` → ``analysis`` → ``graphlog`` → ``scheduling`` → ``storage`` → the
package root (``orchestrator/__init__.py``, ``durations.py``). A module may import its own layer
or any layer below it, never one above. Every import statement counts, including those inside
functions (a lazy import is still a dependency, and a lazy cycle is still a cycle) and those under
``if TYPE_CHECKING:`` (a type-only import still ties two modules together: one cannot be read,
moved or checked without the other).

Names shared across layers by convention rather than by import count too: an environment variable
(``"ORCH_..."``) spelt as a string literal in two layers is a hidden dependency, so such names live
in one bottom-layer module and everybody imports them from there.

The graph is read from the source with :mod:`ast`, so the test is fast and imports nothing.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("procs", "tasks", "learners", "orchestrator")

# Lowest first. A module's layer is the first entry that is a prefix of its dotted name (the most
# specific entries come first within a package, so "orchestrator.cli" wins over "orchestrator").
LAYERS: list[tuple[str, ...]] = [
    ("procs",),  # processes: the one place that forks or spawns (imports none of the others)
    ("tasks",),
    ("learners",),
    ("orchestrator",),  # the package root: __version__, durations
    ("orchestrator.storage",),
    ("orchestrator.scheduling",),
    ("orchestrator.graphlog",),
    ("orchestrator.analysis",),
    ("orchestrator.cli",),
]

# Cycles that other lanes of issue 14 remove; each entry must still be a cycle (the test below fails
# once it is gone, so that the entry is deleted with it). Nothing may be added here.
KNOWN_CYCLES: dict[frozenset[str], str] = {}


def _modules() -> dict[str, Path]:
    """Every module of our three packages by dotted name (a package is its ``__init__``)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """The modules of ours that ``module`` imports, with the line of each import."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # "from a.b import c": c is the module a.b.c when there is one, else a name in a.b.
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:  # "import a.b.c" of a name inside a module
                name = name.rpartition(".")[0]
            if name and name != module:
                out.append((name, node.lineno))
    return out


def _graph() -> tuple[dict[str, Path], dict[str, list[tuple[str, int]]]]:
    modules = _modules()
    return modules, {m: _imports(m, p, modules) for m, p in modules.items()}


def _layer(module: str) -> int:
    best, best_len = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    assert best >= 0, f"{module} is in no layer: add it to LAYERS and to docs/architecture.md"
    return best


def _cycles(graph: dict[str, list[tuple[str, int]]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted({t for t, _ in graph[start]})))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted({t for t, _ in graph[child]}))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def test_the_graph_sees_known_edges() -> None:
    """A guard against a test that cannot fail: the parser finds imports we know are there."""
    _, graph = _graph()
    targets = {t for t, _ in graph["orchestrator.scheduling.scheduler"]}
    assert {"orchestrator.storage.store", "orchestrator.scheduling.worker"} <= targets
    assert "tasks.task" in {t for t, _ in graph["learners.base"]}


def test_no_import_cycles() -> None:
    _, graph = _graph()
    cycles = [c for c in _cycles(graph) if frozenset(c) not in KNOWN_CYCLES]
    detail = []
    for component in cycles:
        members = set(component)
        edges = sorted(
            {f"{m} -> {t} (line {line})" for m in component for t, line in graph[m] if t in members}
        )
        detail.append("; ".join(edges))
    assert not cycles, "import cycles:\n" + "\n".join(detail)


def test_known_cycles_are_still_there() -> None:
    """An entry of KNOWN_CYCLES whose cycle is gone must be deleted (the list only shrinks)."""
    _, graph = _graph()
    present = {frozenset(c) for c in _cycles(graph)}
    gone = [f"{sorted(c)} ({why})" for c, why in KNOWN_CYCLES.items() if c not in present]
    assert not gone, "no longer cycles, delete from KNOWN_CYCLES: " + "; ".join(gone)


def test_no_upward_imports() -> None:
    modules, graph = _graph()
    upward = [
        f"{modules[m].relative_to(ROOT)}:{line}: {m} imports {t}"
        for m, targets in graph.items()
        for t, line in targets
        if _layer(t) > _layer(m)
    ]
    assert not upward, "imports that point up a layer:\n" + "\n".join(upward)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import a.b\n", {"a.b"}),
        ("from a import b\n", {"a.b"}),
        ("from a.b import name\n", {"a.b"}),
        ("from . import b\n", {"a.b"}),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a.b\n", {"a.b"}),
        ("def f():\n    from a.b import name\n", {"a.b"}),
    ],
)
def test_import_reading(tmp_path: Path, source: str, expected: set[str]) -> None:
    """The import reader on small sources (module ``a.c`` in a package ``a`` with a module ``a.b``)."""
    path = tmp_path / "c.py"
    path.write_text(source)
    modules = {"a": tmp_path / "__init__.py", "a.b": tmp_path / "b.py", "a.c": path}
    assert {t for t, _ in _imports("a.c", path, modules)} == expected


def test_cycle_finder() -> None:
    graph = {"a": [("b", 1)], "b": [("c", 1)], "c": [("a", 1)], "d": [("a", 1)]}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": [("b", 1)], "b": []}) == []


_ENV_NAME = re.compile(r"ORCH_[A-Z0-9_]+")


def _env_literals(path: Path) -> set[str]:
    """The ``ORCH_*`` environment names a module spells as string literals (docstrings included:
    a name quoted in prose is fine only where the name is defined)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return {
        name
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        for name in _ENV_NAME.findall(node.value)
        if node.value.strip() == name  # the literal is the name itself, not prose mentioning it
    }


def test_environment_names_live_in_one_layer() -> None:
    """An ``ORCH_*`` name read or set in two top-level packages is imported from one module."""
    modules = _modules()
    where: dict[str, set[str]] = {}
    for module, path in modules.items():
        for name in _env_literals(path):
            where.setdefault(name, set()).add(module)
    shared = {
        name: sorted(users) for name, users in where.items() if len({u.split(".")[0] for u in users}) > 1
    }
    assert not shared, "environment names spelt as literals in several packages (define each once):\n" + (
        "\n".join(f"{n}: {', '.join(u)}" for n, u in sorted(shared.items()))
    )


def test_environment_literal_reading(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text('"""Reads ORCH_X from the environment."""\nA = "ORCH_MEMORY_CAP"\nB = f"{A}"\n')
    assert _env_literals(path) == {"ORCH_MEMORY_CAP"}


# --- sizes: units a reader holds in their head ------------------------------------------------------

MAX_FUNCTION_LINES = 100
MAX_CLASS_LINES = 250


def _oversized(path: Path) -> list[str]:
    """Functions over ``MAX_FUNCTION_LINES`` and classes over ``MAX_CLASS_LINES`` lines in ``path``
    (decorators and docstrings count: they are read too)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            lines = (node.end_lineno or node.lineno) - first + 1
            limit = MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else MAX_FUNCTION_LINES
            if lines > limit:
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                out.append(f"{where}:{node.lineno} {node.name}: {lines} lines (at most {limit})")
    return out


def test_no_function_or_class_is_too_long() -> None:
    """No function in the packages is longer than 100 lines, and no class longer than 250: a unit
    longer than that mixes concerns (the split scheduler and ILASP* loop are the model)."""
    long_units = [u for path in _modules().values() for u in _oversized(path)]
    assert not long_units, "split these:\n" + "\n".join(long_units)


def test_size_reading(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    path.write_text(f"def long():\n{body}\n\n\ndef short():\n    return 1\n")
    assert [u.split()[1] for u in _oversized(path)] == ["long:"]
