"""Where tasks come from: one small protocol for every task family, and a registry by URI scheme.

A *task source* lists games (IGGP games, GraphLog worlds), their targets and flattened predicates,
loads tasks lazily, and fingerprints a game's data so that job ids change when the data does.

* ``DIR`` (a directory in the published IGGP layout)        -> :class:`tasks.iggp.Dataset`
* ``None`` / ``bundled`` (our own GDL games, generated once) -> :func:`tasks.bundled.dataset`
* ``graphlog:DIR`` (GraphLog worlds stored as Parquet)       -> :class:`tasks.graphlog.GraphLogSource`

A new task family is one module with an opener (a callable taking the rest of the URI) and one
entry ``scheme -> "module:opener"`` in :data:`PLUGINS`. The table names modules instead of
importing them, so that this registry imports no family up front and a family never imports the
registry back (no import cycle); the module is imported the first time its scheme is opened.
Code outside ``tasks`` can also add a scheme at run time with :func:`register_source`.
"""

from __future__ import annotations

import importlib
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


# The task families in this package, by URI scheme: "module:attribute" of the opener.
PLUGINS: dict[str, str] = {"graphlog": "tasks.graphlog:GraphLogSource"}

_SCHEMES: dict[str, Callable[[str], TaskSource]] = {}


def register_source(scheme: str, opener: Callable[[str], TaskSource]) -> None:
    """Make ``scheme:REST`` URIs open with ``opener(REST)`` (for families outside :data:`PLUGINS`)."""
    _SCHEMES[scheme] = opener


def _opener(scheme: str) -> Callable[[str], TaskSource] | None:
    """The opener of ``scheme``, importing its module on first use; None for an unknown scheme."""
    if scheme not in _SCHEMES and scheme in PLUGINS:
        module, _, attribute = PLUGINS[scheme].partition(":")
        _SCHEMES[scheme] = getattr(importlib.import_module(module), attribute)
    return _SCHEMES.get(scheme)


class UnknownSource(ValueError):
    pass


def open_source(spec: str | Path | None = None) -> TaskSource:
    """Open a task source from a CLI-style spec (see the module docstring)."""
    if spec is None or str(spec) == "bundled":
        from tasks.bundled import dataset

        return dataset()
    text = str(spec)
    scheme, sep, rest = text.partition(":")
    opener = _opener(scheme) if sep and not Path(text).exists() else None
    if opener is not None:
        return opener(rest)
    from tasks.iggp import Dataset

    path = Path(text)
    if not path.is_dir():
        known = ", ".join(f"{s}:..." for s in sorted({*PLUGINS, *_SCHEMES})) or "none"
        raise UnknownSource(f"dataset {text!r} is not a directory (other sources: bundled, {known})")
    return Dataset(path)
