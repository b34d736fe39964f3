"""Issue 26's bar, read off the stores of a GPU check's runs (bench/gpu_check.sh).

    python bench/gpu_bar.py sweep STORE [--rerun STORE2]   # a GraphLog sweep (and its seeded rerun)
    python bench/gpu_bar.py run STORE                       # per-predicate GNN jobs of ``orch run``

Prints one line per job (status, device, peak GPU memory, seconds, test accuracy), then the checks:
every job ``ok`` or ``timeout``, the device recorded in every row (``cuda (NAME)`` where a GPU was
used), how many jobs ran on the GPU at once (the most overlapping [started, finished] intervals), and
for ``--rerun`` whether each seeded job's test accuracies are identical in both stores. Exit 1 when
a check fails, so the calling script can tell.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.storage.store import ResultStore  # noqa: E402


def _rows(store: str) -> list[dict]:
    rows = ResultStore(store).latest().to_pylist()
    for r in rows:
        r["extra"] = json.loads(r["extra"] or "{}")
    return rows


def _most_at_once(rows: list[dict]) -> int:
    """The most jobs whose [started, finished] intervals overlap at one instant."""
    events = sorted([(r["started"], 1) for r in rows] + [(r["finished"], -1) for r in rows])
    at_once = most = 0
    for _, step in events:
        at_once += step
        most = max(most, at_once)
    return most


def _accuracies(rows: list[dict]) -> dict[tuple, tuple]:
    """(learner, seed, world...) -> the test accuracies a GraphLog job stored, in order."""
    out = {}
    for r in rows:
        detail = r["extra"].get("graphlog") or []
        key = (r["learner"], r["seed"], tuple(d.get("world") for d in detail))
        out[key] = tuple(d.get("test_acc") for d in detail)
    return out


def _report(rows: list[dict], what: str) -> bool:
    print(f"{'job':<34} {'status':<8} {'device':<24} {'peak GPU MiB':>12} {'seconds':>8}  test")
    for r in sorted(rows, key=lambda r: (r["learner"], r["predicate"] or "", r["seed"] or 0, r["started"])):
        worlds = ",".join(str(d.get("world")) for d in r["extra"].get("graphlog") or [])
        name = f"{r['learner']}/{worlds or r['predicate']}/s{r['seed']}"
        peak = f"{r['peak_gpu'] / 2**20:.0f}" if r["peak_gpu"] else "-"
        seconds = (r["finished"] - r["started"]).total_seconds()
        tests = [d.get("test_acc") for d in r["extra"].get("graphlog") or []]
        if not tests and r["test_tp"] is not None:
            tp, fp, tn, fn = (r[f"test_{c}"] for c in ("tp", "fp", "tn", "fn"))
            tests = [f"tp {tp} fp {fp} tn {tn} fn {fn}"]
        device = str(r["extra"].get("device"))
        print(f"{name:<34} {r['status']:<8} {device:<24} {peak:>12} {seconds:>8.1f}  {tests}")
    bad = [r for r in rows if r["status"] not in ("ok", "timeout")]
    no_device = [r for r in rows if not r["extra"].get("device")]
    on_gpu = [r for r in rows if str(r["extra"].get("device", "")).startswith("cuda")]
    peaks = [r for r in on_gpu if r["peak_gpu"]]
    print(
        f"\n{what}: {len(rows)} jobs, {len(bad)} not ok/timeout, {len(no_device)} without a device, "
        f"{len(on_gpu)} on a GPU ({len(peaks)} with a peak GPU memory), at most {_most_at_once(rows)} at once"
    )
    for r in bad:
        print(f"  {r['job_id']} {r['status']}: {(r['error'] or '').strip().splitlines()[-1:]}")
    return not bad and not no_device and len(peaks) == len(on_gpu)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=["sweep", "run"])
    ap.add_argument("store")
    ap.add_argument("--rerun", help="the store of a seeded rerun of the same sweep: accuracies must match")
    args = ap.parse_args()
    rows = _rows(args.store)
    ok = _report(rows, f"{args.kind} ({args.store})")
    if args.rerun:
        first, again = _accuracies(rows), _accuracies(_rows(args.rerun))
        same = [k for k in first if k in again and first[k] == again[k]]
        print(f"seeded rerun ({args.rerun}): {len(same)} of {len(first)} jobs with identical test accuracies")
        for k in first:
            if first[k] != again.get(k):
                print(f"  differs: {k}: {first[k]} vs {again.get(k)}")
        ok = ok and len(same) == len(first) > 0
    print(f"bar: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
