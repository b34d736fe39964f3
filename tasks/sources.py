"""Where tasks come from: one small protocol for every task family, and a registry by URI scheme.

A *task source* lists games (IGGP games, GraphLog worlds), their targets and flattened predicates,
loads tasks lazily, and fingerprints a game's data so that job ids change when the data does.

* ``DIR`` (a directory in the published IGGP layout)        -> :class:`tasks.iggp.Dataset`
* ``None`` / ``bundled`` (our own GDL games, generated once) -> :func:`tasks.bundled.dataset`
* ``graphlog:DIR`` (GraphLog worlds stored as Parquet)       -> registered by ``tasks.graphlog``

A new task family is one module that calls :func:`register_source`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol, runtime_checkable

from tasks.task import Task


@runtime_checkable
class TaskSource(Protocol):
    """A collection of games, each with targets, each a :class:`Task`."""

    root: str

    def games(self) -> list[str]: ...

    def targets(self, game: str) -> list[str]: ...

    def predicates(self, game: str, target: str) -> list[str]:
        """The flattened target predicates of (game, target), cheaply (no examples parsed)."""
        ...

    def load_task(self, game: str, target: str) -> Task: ...

    def fingerprint(self, game: str) -> str:
        """A content hash of the game's data (all targets and splits)."""
        ...


_SCHEMES: dict[str, Callable[[str], TaskSource]] = {}


def register_source(scheme: str, opener: Callable[[str], TaskSource]) -> None:
    """Make ``scheme:REST`` URIs open with ``opener(REST)``."""
    _SCHEMES[scheme] = opener


class UnknownSource(ValueError):
    pass


def open_source(spec: str | Path | None = None) -> TaskSource:
    """Open a task source from a CLI-style spec (see the module docstring)."""
    import tasks.graphlog  # noqa: F401  (registers the graphlog: scheme)

    if spec is None or str(spec) == "bundled":
        from tasks.bundled import dataset

        return dataset()
    text = str(spec)
    scheme, sep, rest = text.partition(":")
    if sep and scheme in _SCHEMES and not Path(text).exists():
        return _SCHEMES[scheme](rest)
    from tasks.iggp import Dataset

    path = Path(text)
    if not path.is_dir():
        known = ", ".join(f"{s}:..." for s in _SCHEMES) or "none"
        raise UnknownSource(f"dataset {text!r} is not a directory (other sources: bundled, {known})")
    return Dataset(path)
