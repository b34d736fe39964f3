"""Sorted distinct values of an integer array, by sorting (not numpy's hashing).

Why: from numpy 2.3 a plain ``np.unique`` (and with it ``union1d``, ``setdiff1d`` and
``intersect1d`` unless told the inputs are unique) is computed with a hash table. With numpy 2.4
here that took 9.3 s for 5 million int64 keys, where a sort and a comparison of neighbours take
0.3 s (``python bench/bench_unique.py``). The ILP learner's coverage is such key arrays (example
times target atom), often concatenations of sorted runs, which a stable sort merges in near-linear
time: on a generated GGP ``next`` task the hashing alone took 12.7 s of a 10 s budget.

``np.isin`` is replaced for the same reason where its values are spread out: there it sorts both
arrays together after a hashed ``np.unique`` of the second. :func:`isin` keeps numpy's lookup table
for a pool of narrow range and otherwise sorts only the shorter array and finds the other's values
in it by binary search: the ILP learner's membership tests (which body bindings a literal keeps,
which derived keys are positives) are most of the work of testing a candidate rule.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["isin", "union", "unique"]


def unique(values: np.ndarray | Sequence[int]) -> np.ndarray:
    """``np.unique(values)`` for a 1-D integer array: the sorted distinct values, same dtype."""
    a = np.sort(np.asarray(values).ravel(), kind="stable")  # timsort: merges sorted runs
    if len(a) < 2:
        return a
    keep = np.empty(len(a), dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def union(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """The sorted union of integer key arrays (an empty int64 array for none)."""
    if not arrays:
        return np.zeros(0, dtype=np.int64)
    return unique(np.concatenate(arrays))


TABLE_RANGE = 6
"""Where the pool's values span at most this many times the two arrays' length, :func:`isin` marks
them in a boolean table of that span (numpy's ``kind="table"``, its own default bound)."""


def isin(values: np.ndarray | Sequence[int], pool: np.ndarray | Sequence[int]) -> np.ndarray:
    """``np.isin(values, pool)`` for 1-D integer arrays: a boolean mask over ``values``.

    A pool of a narrow range is a lookup table (as numpy does it); otherwise the shorter of the two
    is sorted (:func:`unique`) and the longer looked up in it with ``searchsorted``: n log m for the
    longer n, with no hashing and no sort of the longer side.
    """
    values = np.asarray(values).ravel()
    pool = np.asarray(pool).ravel()
    if len(values) == 0 or len(pool) == 0:
        return np.zeros(len(values), dtype=bool)
    if int(pool.max()) - int(pool.min()) <= TABLE_RANGE * (len(values) + len(pool)):
        return np.isin(values, pool, kind="table")  # a lookup table of the pool's range: no sort
    if len(pool) <= len(values):
        return _found(unique(pool), values)
    distinct = unique(values)
    at = np.searchsorted(distinct, pool)
    inside = at < len(distinct)
    at = at[inside]
    present = np.zeros(len(distinct), dtype=bool)
    present[at[distinct[at] == pool[inside]]] = True
    return present[np.searchsorted(distinct, values)]


def _found(sorted_distinct: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Which of ``values`` occur in the sorted, duplicate-free ``sorted_distinct`` (not empty)."""
    at = np.minimum(np.searchsorted(sorted_distinct, values), len(sorted_distinct) - 1)
    return sorted_distinct[at] == values
