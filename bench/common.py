"""Helpers shared by the bench scripts: locating the published data, timing, and printing tables."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ORCH_SHARED", ROOT.parent / "shared"))


def iggp_dir() -> Path:
    """Unpack ../shared/iggp into the cache (idempotent) and return it. Never inside the project."""
    unpack = SHARED / "iggp" / "unpack"
    if not unpack.exists():
        sys.exit(f"the published IGGP data is not at {SHARED / 'iggp'} (set ORCH_SHARED)")
    dest = Path(os.environ.get("ORCH_CACHE", Path.home() / ".cache" / "orch")) / "iggp"
    subprocess.run([str(unpack), str(dest)], check=True)
    return dest


def games_args(games: str) -> list[str]:
    """``orch run``'s game selection from a bench's ``--games``: ``all`` is every task with data
    (``--all-games`` leaves out a task without a train file, such as ttcc4 ``legal``, where naming
    its game is an error), anything else a comma-separated list."""
    return ["--all-games"] if games == "all" else ["--games", games]


def peak_rss_mb() -> float:
    """Peak resident memory of this process (and waited-for children) in MiB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 1024


def print_table(rows: list[dict], as_json: bool = False, title: str | None = None) -> None:
    """Print rows as an aligned text table (or JSON lines with ``as_json``)."""
    if as_json:
        print(json.dumps({"title": title, "rows": rows}, default=str))
        return
    if title:
        print(f"\n{title}")
    if not rows:
        print("(no rows)")
        return
    cols = list(rows[0])
    text = [
        [f"{r.get(c, ''):.3f}" if isinstance(r.get(c), float) else str(r.get(c, "")) for c in cols]
        for r in rows
    ]
    widths = [max(len(c), *(len(t[i]) for t in text)) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for t in text:
        print("  ".join(v.ljust(w) for v, w in zip(t, widths, strict=True)))


# The published tasks the gnn-iggp benches default to: a big board, a small one, a grid, a tiny game.
GNN_DEFAULT_TASKS = ["tiger_vs_dogs:legal", "rainbow:goal", "sokoban:next", "minimal_decay:next"]


def gnn_task_args(description: str | None) -> argparse.Namespace:
    """The options of the gnn-iggp benches: the tasks (GAME:TARGET in an IGGP layout), the batch
    size, repetitions and --json."""
    ap = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--dataset", type=Path, help="IGGP layout (default: the published games, unpacked)")
    ap.add_argument("--tasks", nargs="+", default=GNN_DEFAULT_TASKS, help="GAME:TARGET ...")
    ap.add_argument("--batch", type=int, default=64, help="examples per batch (gnn-iggp predicts 64 at once)")
    ap.add_argument("--reps", type=int, default=3, help="timings are the best of this many runs")
    ap.add_argument("--json", action="store_true")
    return ap.parse_args()


def best_of(reps: int, run, *args) -> tuple[float, Any]:
    """(the shortest of ``reps`` timed calls of ``run(*args)``, the last call's result)."""
    times, out = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = run(*args)
        times.append(time.perf_counter() - t0)
    return min(times), out
