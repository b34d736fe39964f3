"""Sorted distinct values of integer key arrays: numpy's ``np.unique`` beside ``tasks.arrays.unique``.

    python bench/bench_unique.py

Prints one row per input shape (seconds, best of 3): random keys, and the concatenation of
sorted runs that the ILP learner's coverage unions are made of.
"""

from __future__ import annotations

import time

import numpy as np

from tasks import arrays


def _best(f, x, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f(x)
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    rng = np.random.default_rng(0)
    cases = {}
    for n in (100_000, 1_000_000, 5_000_000):
        cases[f"{n:,} random int64"] = rng.integers(0, 10 * n, n)
        runs = [np.sort(rng.integers(0, 10 * n, n // 10)) for _ in range(10)]
        cases[f"{n:,} as 10 sorted runs"] = np.concatenate(runs)
    print(f"numpy {np.__version__}")
    print(f"{'input':<28} {'np.unique s':>12} {'arrays.unique s':>16} {'speed-up':>9}")
    for name, x in cases.items():
        ref, ours = _best(np.unique, x), _best(arrays.unique, x)
        assert np.array_equal(np.unique(x), arrays.unique(x))
        print(f"{name:<28} {ref:>12.3f} {ours:>16.3f} {ref / ours:>8.1f}x")


if __name__ == "__main__":
    main()
