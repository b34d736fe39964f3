"""Bench: time and peak memory to load the largest shared task (farming_next), and the whole dataset.

Reference, side by side: the obvious loader (each example as Python sets of atom strings), so the
table shows what interning into sparse matrices buys in memory.

    python bench/bench_load.py [--json] [--all]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import iggp_dir, print_table  # noqa: E402
from tasks.iggp import Dataset, read_dat  # noqa: E402
from tasks.task import SPLITS  # noqa: E402


def load_as_sets(ds: Dataset, game: str, target: str) -> list:
    """The reference: every split's examples as (set of background atoms, set of positives)."""
    out = []
    for split in SPLITS:
        dat = ds.read(game, target, split)
        out.append([(set(b), set(p)) for b, p in dat.examples])
    return out


def measure(label: str, fn) -> dict:
    gc.collect()
    tracemalloc.start()
    t0 = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return {"loader": label, "seconds": seconds, "peak_MiB": peak / 2**20, "kept_MiB": current / 2**20}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--all", action="store_true", help="also load all 160 tasks one after another")
    args = ap.parse_args()
    ds = Dataset(iggp_dir())
    rows = [
        measure("orch Task (interned, CSR)", lambda: ds.load_task("farming", "next")),
        measure("reference: sets of strings", lambda: load_as_sets(ds, "farming", "next")),
        measure(
            "parse only (read_dat x3)", lambda: [read_dat(p) for p in ds.files("farming", "next").values()]
        ),
    ]
    task = ds.load_task("farming", "next")
    print_table(rows, args.json, title=f"farming_next: {task.describe()}")
    if args.all:
        t0 = time.perf_counter()
        n = sum(1 for g in ds.games() for t in ds.targets(g) if ds.load_task(g, t))
        print_table([{"tasks": n, "seconds": time.perf_counter() - t0}], args.json, title="every shared task")


if __name__ == "__main__":
    main()
