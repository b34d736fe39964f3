"""Flattened ground atoms as text: ``true_cell(1, 2, x)``, ``legal(black, noop)``, ``terminal()``.

A module of its own, below both :mod:`tasks.task` and :mod:`tasks.signature`, so that either
can read atoms without importing the other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

__all__ = ["format_atom", "parse_atom", "parse_atoms", "predicate_of"]

_ATOM = re.compile(r"^\s*([^\s(),]+)\s*(?:\((.*)\))?\s*$")  # any KIF symbol (docs/gdl.md)


@lru_cache(maxsize=1 << 18)
def parse_atom(text: str) -> tuple[str, tuple[str, ...]]:
    """Split a flattened atom ``p(a, b)`` into ``("p", ("a", "b"))``; ``terminal()`` gives ``("terminal", ())``.

    Flattened IGGP atoms have only constant arguments, so a split on commas is exact. Memoised
    (a bounded cache, some 50 MB when full): a learner reads a task's background vocabulary in
    several stages (bias, coverage, seeds, concepts), and on a generated task of 200,000 atoms
    the parses alone took 6 s of a 10 s budget (checkers `goal`).
    """
    m = _ATOM.match(text)
    if not m:
        raise ValueError(f"not a flattened ground atom: {text!r}")
    name, args = m.group(1), m.group(2)
    if args is None or not args.strip():
        return name, ()
    return name, tuple(a.strip() for a in args.split(","))


def parse_atoms(texts: Sequence[str]) -> list[tuple[str, tuple[str, ...]]]:
    """:func:`parse_atom` of each of ``texts``; past the memo's size, without it.

    Why: a vocabulary larger than the memo, read in one pass, evicts every entry before any is
    read again, so each read pays the memo's upkeep, parses everything anew and leaves the memo
    without the entries other readers hit (a generated ``legal_jump`` of 352,947 atoms, read
    twice: 4.3-4.6 s memoised, 3.8-4.2 s not, measured beside other work on 2 cores).
    """
    maxsize = parse_atom.cache_parameters()["maxsize"] or 0
    parse = parse_atom if len(texts) <= maxsize else parse_atom.__wrapped__
    return [parse(t) for t in texts]


def format_atom(name: str, args: Sequence[str]) -> str:
    """Inverse of :func:`parse_atom`, in the dataset's spelling (``p(a, b)``, ``terminal()``)."""
    return f"{name}({', '.join(args)})"


def predicate_of(atom: str) -> str:
    """The flattened predicate name of an atom: ``next_cell(1, 2, x)`` -> ``next_cell``."""
    i = atom.find("(")
    return atom if i < 0 else atom[:i].strip()
