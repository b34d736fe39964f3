"""Output that survives a pipe: full-width tables off a terminal, ``--format tsv``, one-line warnings.

Why: rich sizes a console to the terminal, and to 80 columns when stdout is a pipe or a file, so
``orch games list | cat`` cut cells to ``battle_of…`` and headers to ``train…``. Off a terminal
the console here is as wide as the widest table needs (:data:`PIPE_WIDTH`), so nothing is cut,
and no colour codes are written. ``--format tsv`` gives plain tab-separated rows for scripts.

Warnings (``GDLWarning`` and the others raised through :mod:`warnings`) print as one line each,
``file:line: warning: message`` (:func:`install_warning_format`), not Python's two-line form that repeats
the source line of orch that raised it.
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Sequence
from typing import Any, TextIO

from rich.console import Console, ConsoleDimensions

PIPE_WIDTH = 10_000
"""Columns of a console that does not write to a terminal: wide enough that no table is cut."""

ROW_FORMATS = ("table", "tsv", "md", "csv", "json")

_LOCATED = re.compile(r"^(\S+?:\d+(?::\d+)?): (.*)$")
"""A message that starts with its own ``file:line[:col]:`` (a ``GDLWarning`` about an input file)."""


class PipeConsole(Console):
    """A rich console that is as wide as its content needs when it does not write to a terminal."""

    @property
    def size(self) -> ConsoleDimensions:
        dims = Console.size.fget(self)  # type: ignore[attr-defined]
        if self._width is None and not self.is_terminal:
            return ConsoleDimensions(PIPE_WIDTH, dims.height)
        return dims

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]


def console(stderr: bool = False, **kwargs: Any) -> Console:
    """The console every ``orch`` command prints tables with (see :class:`PipeConsole`)."""
    return PipeConsole(stderr=stderr, **kwargs)


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def print_rows(
    rows: Sequence[dict], fmt: str = "table", title: str | None = None, out: TextIO | None = None
) -> None:
    """``rows`` (dicts with the same keys) as a rich table, TSV, Markdown, CSV or JSON on stdout."""
    import csv
    import json

    stream = out or sys.stdout
    if fmt not in ROW_FORMATS:
        from orchestrator.cli.errors import OrchError

        raise OrchError(f"unknown format {fmt!r}; choose from {', '.join(ROW_FORMATS)}")
    columns = list(rows[0]) if rows else []
    if fmt == "json":
        print(json.dumps(list(rows), indent=2, default=str), file=stream)
    elif fmt == "tsv":
        print("\t".join(columns), file=stream)
        for r in rows:
            print("\t".join(_text(r[c]).replace("\t", " ") for c in columns), file=stream)
    elif fmt == "csv":
        writer = csv.DictWriter(stream, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows({c: _text(r[c]) for c in columns} for r in rows)
    elif fmt == "md":
        print("| " + " | ".join(columns) + " |", file=stream)
        print("|" + "|".join("---" for _ in columns) + "|", file=stream)
        for r in rows:
            print("| " + " | ".join(_text(r[c]) for c in columns) + " |", file=stream)
    else:
        from rich.table import Table

        table = Table(title=title)
        for c in columns:
            numeric = all(isinstance(r[c], int | float) for r in rows)
            table.add_column(c.replace("_", " "), justify="right" if numeric else "left")
        for r in rows:
            table.add_row(*(_text(r[c]) for c in columns))
        console(file=out).print(table) if out else console().print(table)


def one_line_warning(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, file: TextIO | None = None,
    line: str | None = None,
) -> None:  # fmt: skip
    """:func:`warnings.showwarning` as one line: ``file:line: warning: message`` (as compilers do).

    A warning about an input file (a ``GDLWarning`` carries its own ``file:line:`` prefix) keeps
    that location; otherwise the location is where the warning was raised. The source line of orch
    that raised it is never printed: it tells a user nothing.
    """
    text = " ".join(str(message).split())
    stream = file if file is not None else sys.stderr
    located = _LOCATED.match(text)
    where, what = (located[1], located[2]) if located else (f"{filename}:{lineno}", text)
    try:
        stream.write(f"{where}: warning: {what}\n")
    except OSError:  # a closed stderr (a pipe whose reader left): nothing to say it to
        pass


def install_warning_format() -> None:
    """Make every warning of this process print as one line (see :func:`one_line_warning`)."""
    warnings.showwarning = one_line_warning
