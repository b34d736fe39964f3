"""Relational algebra on numpy columns: the vectorised joins that test candidate rules outside clingo.

A :class:`Table` is a set of bindings, one int64 column per variable (``"ex"`` is the example
index; ``3`` is variable 3). A rule body is a conjunctive query, so its bindings are a chain of
joins (positive literals), anti-joins (negated literals) and filters (``X != Y``, constants).
numpy keeps this in the core dependencies (no dataframe library) and is fast enough: sorting one
side and ``searchsorted`` on the other joins 10^5 rows in about a millisecond.

Multi-column keys are packed into one int64 by mixed radix; when the radix would overflow they are
first renumbered densely with ``np.unique``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from tasks import arrays

Column = Hashable  # "ex" or a variable index


class TooLarge(RuntimeError):
    """A join would exceed the row cap: the candidate rule is too general to test cheaply."""


@dataclass
class Table:
    """Bindings: equal-length int64 columns by name. ``n`` rows even with no columns."""

    cols: dict[Column, np.ndarray]
    n: int

    @classmethod
    def unit(cls) -> Table:
        """The table of the empty conjunction: one row, no columns."""
        return cls({}, 1)

    def take(self, idx: np.ndarray) -> Table:
        return Table({k: v[idx] for k, v in self.cols.items()}, len(idx))

    def select(self, names: Sequence[Column]) -> Table:
        return Table({k: self.cols[k] for k in names}, self.n)

    def rename(self, mapping: dict[Column, Column]) -> Table:
        return Table({mapping.get(k, k): v for k, v in self.cols.items()}, self.n)

    def distinct(self) -> Table:
        if not self.cols or self.n == 0:
            return Table(dict(self.cols), min(self.n, 1))
        names = list(self.cols)
        key = pack([self.cols[k] for k in names])
        _, first = np.unique(key, return_index=True)
        return self.take(first)


def pack(columns: Sequence[np.ndarray], others: Sequence[Sequence[np.ndarray]] = ()) -> np.ndarray | tuple:
    """One int64 key per row for several columns; with ``others``, keys comparable across tables.

    Returns the packed key of ``columns`` alone, or a tuple (key, *other_keys) when other tables'
    columns (same arity) must be packed with the same radix.
    """
    groups = [list(columns), *[list(o) for o in others]]
    if not groups[0]:
        keys = [np.zeros(len(g[0]) if g else 0, dtype=np.int64) for g in groups]
        return keys[0] if not others else tuple(keys)
    packed = [np.asarray(g[0], dtype=np.int64).copy() for g in groups]
    for j in range(1, len(groups[0])):
        cols = [np.asarray(g[j]) for g in groups]  # k * hi_col + c is int64 with k: no copy here
        hi_key = max((int(k.max()) if len(k) else 0) for k in packed) + 1
        hi_col = max((int(c.max()) if len(c) else 0) for c in cols) + 1
        if hi_key * hi_col >= 2**62:  # renumber densely to stay inside int64
            _, inv = np.unique(np.concatenate(packed), return_inverse=True)
            sizes = np.cumsum([0] + [len(k) for k in packed])
            packed = [inv[sizes[i] : sizes[i + 1]].astype(np.int64) for i in range(len(packed))]
            hi_key = int(inv.max()) + 1 if len(inv) else 1
        packed = [k * hi_col + c for k, c in zip(packed, cols, strict=True)]
    return packed[0] if not others else tuple(packed)


def join(left: Table, right: Table, on: Sequence[Column], max_rows: int) -> Table:
    """Inner join on the shared columns ``on`` (a cross product when ``on`` is empty)."""
    if not on:
        n = left.n * right.n
        if n > max_rows:
            raise TooLarge(f"cross product of {left.n} x {right.n} rows")
        li = np.repeat(np.arange(left.n), right.n)
        ri = np.tile(np.arange(right.n), left.n)
    else:
        lk, rk = pack([left.cols[c] for c in on], [[right.cols[c] for c in on]])
        order = np.argsort(rk, kind="stable")
        rs = rk[order]
        lo = np.searchsorted(rs, lk, side="left")
        hi = np.searchsorted(rs, lk, side="right")
        counts = hi - lo
        n = int(counts.sum())
        if n > max_rows:
            raise TooLarge(f"join of {left.n} and {right.n} rows gives {n}")
        li = np.repeat(np.arange(left.n), counts)
        # positions inside each matching run: lo[i], lo[i]+1, ..., hi[i]-1
        starts = np.repeat(lo - np.cumsum(counts) + counts, counts)
        ri = order[starts + np.arange(n)]
    cols = {k: v[li] for k, v in left.cols.items()}
    for k, v in right.cols.items():
        if k not in cols:
            cols[k] = v[ri]
    return Table(cols, len(li))


def semi(left: Table, right: Table, on: Sequence[Column], keep: bool) -> Table:
    """Rows of ``left`` with (``keep=True``) or without (anti-join) a match in ``right`` on ``on``."""
    if not on:
        return left if (right.n > 0) == keep else left.take(np.zeros(0, dtype=np.int64))
    hit = matched(left, right, on)
    return left.take(np.flatnonzero(hit if keep else ~hit))


def matched(left: Table, right: Table, on: Sequence[Column]) -> np.ndarray:
    """Which rows of ``left`` have a match in ``right`` on the (non-empty) columns ``on``: a mask."""
    lk, rk = pack([left.cols[c] for c in on], [[right.cols[c] for c in on]])
    return arrays.isin(lk, rk)
