"""Bench: the five IGGP baselines over every published task that has training data.

What it measures, in one process tree:

1. **accuracy**: True, Inertia, Mean, KNN1, KNN5 fit on train and scored on test over the 159
   tasks with a train file (``ttcc4_legal`` has none and is skipped, reported as such); mean
   balanced accuracy and perfectly solved tasks (sub-predicate counts pooled per task), printed
   beside the committed results files (docs/results/iggp, from ``orch bench iggp``) and the
   paper's Table 3;
2. **speed**: wall time and peak RSS of all five (a process pool over tasks), of knn1 + knn5 alone
   (loading included; the goal is < 60 s and < 4 GiB on 2 cores), time per game and the worst task;
3. **reference**: a straightforward single-process scipy KNN (one query row at a time: sparse
   mat-vec distances, a stable argsort, a sum of neighbour rows) run side by side on the same
   tasks, to show the speed-up and to check that both give identical counts.

    python bench/bench_baselines.py                 # everything (about 2 minutes on 2 cores)
    python bench/bench_baselines.py --games 5       # a short run on the first 5 games
    python bench/bench_baselines.py --only ttcc4,minimal_decay
    python bench/bench_baselines.py --no-reference --json
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import iggp_dir, peak_rss_mb, print_table  # noqa: E402
from learners.base import Budget, make_learner  # noqa: E402
from learners.knn import fit_knn, knn_predictions  # noqa: E402
from learners.metrics import Counts, count, pool  # noqa: E402
from tasks.iggp import Dataset  # noqa: E402
from tasks.task import Split, Task  # noqa: E402

LEARNERS = ("true", "inertia", "mean", "knn1", "knn5")

# The paper's Table 3 lost its cells in the text conversion (../shared/papers/...): the prose only
# quotes ILASP* 86% / 40% perfectly solved and Metagol 69% / 34%, none of the baselines.
PAPER_TABLE3 = {name: "not in the paper text" for name in LEARNERS}


def committed(name: str) -> tuple[float, int] | None:
    """Mean BA (%) and perfect count of the committed results file (docs/results/iggp), if any.

    The committed per-task figures (``orch bench iggp``) are the reference this in-process bench
    must reproduce; they replace figures once typed into this file.
    """
    from orchestrator.analysis.results import RESULTS_DIR, read_rows, summarise

    path = RESULTS_DIR / f"{name}_60s.csv"
    if not path.exists():
        return None
    s = summarise(read_rows(path))
    return 100 * s["balanced_accuracy"], s["perfect"]


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_task(root: str, game: str, target: str, learners: tuple[str, ...]) -> dict:
    """Load one task, fit each learner on train, count on test; KNN neighbours ranked once for all k."""
    t0 = time.perf_counter()
    task = Dataset(root).load_task(game, target)
    out: dict = {"game": game, "target": target, "load_s": time.perf_counter() - t0, "counts": {}, "secs": {}}
    if "train" not in task.splits:
        out["skipped"] = task.missing.get("train", "no train split")
        out["rss_mb"] = _rss_mb()
        return out
    test = task.split("test")
    for name in learners:
        if not name.startswith("knn"):
            t = time.perf_counter()
            model = make_learner(name).fit(task.learning_view(), Budget())
            out["counts"][name] = pool(count(task, test, model.predict(task, test)).values())
            out["secs"][name] = time.perf_counter() - t
    ks = [int(n[3:]) for n in learners if n.startswith("knn")]
    if ks:
        t = time.perf_counter()
        model = fit_knn(task, max(ks))
        preds = knn_predictions(model.index, model.train_positives, test.background, ks)
        for k in ks:
            out["counts"][f"knn{k}"] = pool(count(task, test, preds[k]).values())
        out["secs"]["knn"] = time.perf_counter() - t
    out["task_s"] = time.perf_counter() - t0
    out["rss_mb"] = _rss_mb()
    return out


def run_all(
    root: str, tasks: list[tuple[str, str]], learners: tuple[str, ...], workers: int
) -> tuple[list, float]:
    t0 = time.perf_counter()
    if workers <= 1:
        results = [run_task(root, g, t, learners) for g, t in tasks]
    else:
        # Largest first so that the big tasks do not end up alone at the tail of the pool.
        sizes = {(g, t): _train_size(root, g, t) for g, t in tasks}
        order = sorted(tasks, key=lambda gt: -sizes[gt])
        with ProcessPoolExecutor(workers) as pool_:
            futures = [pool_.submit(run_task, root, g, t, learners) for g, t in order]
            results = [f.result() for f in futures]
    return results, time.perf_counter() - t0


def _train_size(root: str, game: str, target: str) -> int:
    p = Path(root) / "data" / "train" / f"{game}_{target}_train.dat"
    return p.stat().st_size if p.exists() else 0


# --- the reference: a straightforward single-process scipy KNN ----------------------------------


def naive_knn(task: Task, test: Split, k: int) -> np.ndarray:
    """One query row at a time: distances by sparse mat-vec, a stable argsort, a sum of k rows."""
    train = task.split("train")
    tb = sp.csr_matrix(train.background, dtype=np.int64)
    tp = sp.csr_matrix(train.positives, dtype=np.int64)
    sizes = np.asarray(tb.sum(axis=1)).ravel()
    pred = np.zeros((test.n_examples, len(task.target_atoms)), dtype=bool)
    for i in range(test.n_examples):
        q = sp.csr_matrix(test.background[i], dtype=np.int64)
        inter = np.asarray((tb @ q.T).todense()).ravel()
        dist = sizes + q.nnz - 2 * inter
        nearest = np.argsort(dist, kind="stable")[:k]
        votes = np.asarray(tp[nearest].sum(axis=0)).ravel()
        pred[i] = 2 * votes >= k
    return pred


def run_reference(root: str, tasks: list[tuple[str, str]], ks: tuple[int, ...]) -> tuple[dict, float, float]:
    """Counts by the naive KNN, its wall time (loading included) and its KNN compute time."""
    t0 = time.perf_counter()
    dataset = Dataset(root)
    out, compute = {}, 0.0
    for game, target in tasks:
        task = dataset.load_task(game, target)
        if "train" not in task.splits:
            continue
        test = task.split("test")
        for k in ks:
            t = time.perf_counter()
            pred = naive_knn(task, test, k)
            compute += time.perf_counter() - t
            out[game, target, f"knn{k}"] = pool(count(task, test, pred).values())
    return out, time.perf_counter() - t0, compute


# --- reporting ----------------------------------------------------------------------------------


def summary(results: list[dict], learners: tuple[str, ...]) -> dict[str, tuple[float, int, int]]:
    out = {}
    for name in learners:
        cs: list[Counts] = [r["counts"][name] for r in results if name in r["counts"]]
        out[name] = (
            100 * float(np.mean([c.balanced_accuracy for c in cs])),
            sum(c.perfect for c in cs),
            len(cs),
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="JSON lines instead of tables")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="processes (default 2)")
    ap.add_argument("--games", type=int, default=0, help="only the first N games (0 = all)")
    ap.add_argument("--only", default="", help="comma-separated game names (e.g. ttcc4,minimal_decay)")
    ap.add_argument("--no-reference", action="store_true", help="skip the slow naive scipy KNN")
    ap.add_argument(
        "--per-game", action="store_true", help="print the time of every game, not just the top 10"
    )
    args = ap.parse_args()

    root = str(iggp_dir())
    dataset = Dataset(root)
    games = args.only.split(",") if args.only else dataset.games()[: args.games or None]
    tasks = [(g, t) for g in games for t in dataset.targets(g)]
    load_avg = os.getloadavg()

    results, wall_all = run_all(root, tasks, LEARNERS, args.workers)
    knn_only, wall_knn = run_all(root, tasks, ("knn1", "knn5"), args.workers)
    knn_serial, wall_knn_serial = run_all(root, tasks, ("knn1", "knn5"), 1)
    knn_compute = sum(r["secs"].get("knn", 0.0) for r in knn_serial)
    skipped = [(f"{r['game']}_{r['target']}", r["skipped"]) for r in results if "skipped" in r]
    scored = [r for r in results if "skipped" not in r]
    stats = summary(scored, LEARNERS)

    reference = None
    if not args.no_reference:
        ref_counts, wall_ref, compute_ref = run_reference(root, tasks, (1, 5))
        same = all(
            ref_counts[r["game"], r["target"], n] == r["counts"][n] for r in scored for n in ("knn1", "knn5")
        )
        reference = (wall_ref, compute_ref, same)

    full = len(tasks) == 160
    reference_figures = {name: committed(name) for name in LEARNERS}
    rows = [
        {
            "learner": name,
            "ours: bal. acc.": f"{stats[name][0]:.1f}%",
            "perfect": stats[name][1],
            "tasks": stats[name][2],
            "results file": f"{ref[0]:.1f}% / {ref[1]}" if full and ref else "(full run only)",
            "same": (f"{stats[name][0]:.1f}", stats[name][1]) == (f"{ref[0]:.1f}", ref[1])
            if full and ref
            else "-",
            "paper Table 3": PAPER_TABLE3[name],
        }
        for name in LEARNERS
        for ref in [reference_figures[name]]
    ]
    print_table(
        rows, args.json, title=f"test split, trained on train; {len(scored)} tasks scored, skipped: {skipped}"
    )

    by_game: dict[str, list[dict]] = {}
    for r in scored:
        by_game.setdefault(r["game"], []).append(r)
    game_rows = sorted(
        (
            {
                "game": g,
                "tasks": len(rs),
                "seconds (all five, incl. load)": sum(r["task_s"] for r in rs),
                "load s": sum(r["load_s"] for r in rs),
                "knn1+knn5 s": sum(r["secs"]["knn"] for r in rs),
                "slowest task": max(rs, key=lambda r: r["task_s"])["target"],
            }
            for g, rs in by_game.items()
        ),
        key=lambda row: -row["seconds (all five, incl. load)"],
    )
    print_table(game_rows, args.json, title="time per game (slowest first)")

    worst = max(scored, key=lambda r: r["task_s"])
    rss = max([r["rss_mb"] for r in results + knn_only + knn_serial] + [peak_rss_mb()])
    rss_sum = args.workers * max(r["rss_mb"] for r in results) + _rss_mb()
    speed = [
        {"run": f"all five baselines, {args.workers} workers", "wall s": wall_all},
        {"run": f"knn1 + knn5 (loading included), {args.workers} workers", "wall s": wall_knn},
        {"run": "knn1 + knn5 (loading included), 1 process", "wall s": wall_knn_serial},
        {"run": "  of which KNN compute (neighbours once, both votes)", "wall s": knn_compute},
    ]
    if reference:
        speed.append(
            {"run": "reference: naive scipy knn1 + knn5, 1 process, loading included", "wall s": reference[0]}
        )
        speed.append({"run": "  of which KNN compute", "wall s": reference[1]})
    print_table(speed, args.json, title="speed")
    facts = [
        {
            "fact": "worst task (all five + load)",
            "value": f"{worst['game']}_{worst['target']} {worst['task_s']:.2f}s",
        },
        {"fact": "peak RSS of one process", "value": f"{rss:.0f} MiB"},
        {"fact": "peak RSS bound, all processes", "value": f"{rss_sum:.0f} MiB"},
        {"fact": "load average at start (1, 5, 15 min)", "value": " ".join(f"{x:.2f}" for x in load_avg)},
        {"fact": "CPUs", "value": str(os.cpu_count())},
    ]
    if reference:
        facts.append({"fact": "reference counts identical to ours", "value": str(reference[2])})
        facts.append(
            {"fact": "speed-up, KNN compute, 1 process", "value": f"{reference[1] / knn_compute:.0f}x"}
        )
        facts.append(
            {"fact": "speed-up, end to end (reference 1 proc)", "value": f"{reference[0] / wall_knn:.1f}x"}
        )
    print_table(facts, args.json, title="facts")


if __name__ == "__main__":
    main()
