"""Sorted distinct values of an integer array, by sorting (not numpy's hashing).

Why: from numpy 2.3 a plain ``np.unique`` (and with it ``union1d``, ``setdiff1d`` and
``intersect1d`` unless told the inputs are unique) is computed with a hash table. With numpy 2.4
here that took 9.3 s for 5 million int64 keys, where a sort and a comparison of neighbours take
0.3 s (``python bench/bench_unique.py``). The ILP learner's coverage is such key arrays (example
times target atom), often concatenations of sorted runs, which a stable sort merges in near-linear
time: on a generated GGP ``next`` task the hashing alone took 12.7 s of a 10 s budget.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["unique", "union"]


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
