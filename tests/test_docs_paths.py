"""Docs that cannot go stale: every repository path the docs name exists.

A path is a token that starts with one of the repository's top-level folders (``tasks/``,
``learners/``, ``docs/``, ``tests/`` ...) in README.md, docs/*.md, or a docstring of our code. A
file moved without its mentions fails here, with the file that still names the old place.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP = ("tasks", "learners", "orchestrator", "procs", "tests", "bench", "docs", ".ci")
PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(re.escape(t) for t in TOP) + r")/[\w./-]*[\w/])")

PLACEHOLDERS = {
    "learners/mylearner.py": "the file docs/adding-a-learner.md has the reader create",
}
"""Paths named on purpose although they do not exist, each with why."""


def _placeholder(path: str) -> bool:
    """A pattern such as ``docs/results/iggp/LEARNER_BUDGETs.csv`` (an upper-case part names a slot)."""
    return path in PLACEHOLDERS or any(re.search(r"[A-Z]{4,}", part) for part in path.split("/")[1:])


def _texts() -> list[tuple[Path, str]]:
    """README.md, docs/*.md and every docstring (module, class, function) of our code and benches."""
    texts = [(p, p.read_text()) for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]]
    for package in ("tasks", "learners", "orchestrator", "procs", "bench"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    doc = ast.get_docstring(node, clean=False)
                    if doc:
                        texts.append((path, doc))
    return texts


def mentioned_paths(text: str) -> list[str]:
    return [m.group(1).rstrip(".") for m in PATH.finditer(text)]


def test_every_path_in_the_docs_exists() -> None:
    missing = sorted(
        {
            f"{source.relative_to(ROOT)}: {path}"
            for source, text in _texts()
            for path in mentioned_paths(text)
            if not _placeholder(path) and not (ROOT / path).exists()
        }
    )
    assert not missing, "docs name paths that do not exist:\n" + "\n".join(missing)


def test_the_path_reader() -> None:
    """A guard against a test that cannot fail: the reader finds paths in prose and code spans."""
    text = "See `tests/test_old.py`, docs/store.md. Not tasks.gdl.game nor xtasks/y.py; (bench/run.sh)"
    assert mentioned_paths(text) == ["tests/test_old.py", "docs/store.md", "bench/run.sh"]
    assert not (ROOT / "tests/test_old.py").exists()
    assert _placeholder("docs/results/iggp/LEARNER_BUDGETs.csv") and not _placeholder("docs/store.md")
