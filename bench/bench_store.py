"""How the results store behaves as a sweep fills it: one small file per job, then compaction.

Measures, in one process on a fresh temporary store: writing N one-row files (as the scheduler
does), ``job_status()`` and ``read()`` over the N files, the same read by DuckDB as a reference,
``compact()``, and the reads again over the single compacted file.

    python bench/bench_store.py --jobs 1000 [--json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.storage.store import ResultStore  # noqa: E402


def job_row(i: int) -> dict:
    now = dt.datetime.now(dt.UTC)
    return {
        "sweep": "bench",
        "job_id": f"{i:016x}",
        "game": f"game{i % 40}",
        "target": ("goal", "legal", "next", "terminal")[i % 4],
        "predicate": f"pred{i % 7}",
        "learner": "knn5",
        "params": {"k": 5},
        "seed": 0,
        "budget_s": 60.0,
        "status": "ok",
        "attempt": 1,
        **{f"{s}_{c}": i % 13 for s in ("test", "validate") for c in ("tp", "fp", "tn", "fn")},
        "learn_s": 1.0,
        "eval_s": 0.1,
        "peak_rss": 2**28,
        "node": "10.0.0.1",
        "started": now,
        "finished": now,
        "program": "next_cell(X, Y, b) :- true_cell(X, Y, b), not does(P, mark(X, Y)).\n" * 5,
    }


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1000, help="jobs written, one file each (default 1000)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()

    results: list[dict] = []

    def record(step: str, seconds: float, files: int, note: str = "") -> None:
        results.append({"step": step, "files": files, "seconds": round(seconds, 4), "note": note})

    with tempfile.TemporaryDirectory(prefix="orch-bench-store-") as tmp:
        store = ResultStore(tmp)
        n = args.jobs
        t, _ = timed(lambda: [store.write([job_row(i)]) for i in range(n)])
        record("write (one row per call)", t, n, f"{n / t:.0f} writes/s")

        for label, files in (("before compaction", n), ("after compaction", 1)):
            if label == "after compaction":
                t, (before, after) = timed(store.compact)
                record("compact", t, before, f"{before} -> {after} files")
            fresh = ResultStore(tmp)  # a new process has no cache of checked files
            t, status = timed(fresh.job_status)
            record(f"job_status, {label}", t, files, f"{len(status)} jobs")
            t, table = timed(fresh.read)
            record(f"read all, {label}", t, files, f"{table.num_rows} rows")
            try:
                import duckdb

                glob = str(Path(tmp) / "results" / "*.parquet")
                t, rows = timed(
                    lambda g=glob: duckdb.sql(f"select count(*) from read_parquet('{g}')").fetchall()[0]
                )
                record(f"duckdb count(*), {label}", t, files, f"{rows[0]} rows (reference)")
            except ImportError:
                pass

    if args.json:
        print(json.dumps(results, indent=2))
        return
    width = max(len(r["step"]) for r in results)
    print(f"{'step':<{width}}  {'files':>6}  {'seconds':>8}  note")
    for r in results:
        print(f"{r['step']:<{width}}  {r['files']:>6}  {r['seconds']:>8.3f}  {r['note']}")


if __name__ == "__main__":
    main()
