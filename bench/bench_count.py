"""Scoring speed: ``learners.metrics.count`` against the previous implementation, on real tasks.

Why: scoring dominated the GGP benchmark's baseline jobs (a generated task can have 10^5 target
atoms; the old count copied the dense prediction matrix and multiplied it with the labels).
Both implementations score the same predictions (all-true, all-false, and a random 5%) on the
validate and test splits of each task; the table shows seconds and whether every count agrees.

    python bench/bench_count.py --dataset DIR --tasks ttcc4/legal,amazons/next
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
import typer
from rich.console import Console
from rich.table import Table

from learners.metrics import Counts, count
from tasks.sources import open_source
from tasks.task import Split, Task


def count_before(task: Task, split: Split, predictions: np.ndarray | sp.spmatrix) -> dict[str, Counts]:
    """The implementation before this change (a fancy-indexed copy and a sparse-dense multiply)."""
    n = split.n_examples

    def column_sums(m: np.ndarray | sp.spmatrix) -> np.ndarray:
        return np.asarray(m.sum(axis=0)).ravel().astype(np.int64)

    cand = np.unique(np.asarray(split.candidates, dtype=np.int64))
    labels = split.positives[:, cand]
    if sp.issparse(predictions):
        pred = sp.csr_matrix(predictions, dtype=bool)[:, cand]
        tp_col = column_sums(pred.multiply(labels))
    else:
        pred = np.asarray(predictions, dtype=bool)[:, cand]
        tp_col = column_sums(labels.multiply(pred))
    pp_col, lp_col = column_sums(pred), column_sums(labels)
    pid = task.predicate_ids()[cand]
    k = len(task.predicates)
    tp, pp, lp = (np.bincount(pid, c, minlength=k).astype(np.int64) for c in (tp_col, pp_col, lp_col))
    cells = np.bincount(pid, minlength=k).astype(np.int64) * n
    return {
        name: Counts(
            int(tp[i]), int(pp[i] - tp[i]), int(cells[i] - pp[i] - lp[i] + tp[i]), int(lp[i] - tp[i])
        )
        for i, name in enumerate(task.predicates)
    }


def predictions_for(kind: str, task: Task, split: Split) -> np.ndarray | sp.spmatrix:
    shape = (split.n_examples, len(task.target_atoms))
    if kind == "all-true":
        return np.ones(shape, dtype=bool)
    if kind == "all-false":
        return sp.csr_matrix(shape, dtype=bool)
    return sp.random(*shape, density=0.05, format="csr", random_state=np.random.default_rng(0)).astype(bool)


def timed(f, *args):  # noqa: ANN001, ANN202
    t0 = time.perf_counter()
    out = f(*args)
    return out, time.perf_counter() - t0


def main(
    dataset: str = typer.Option(..., help="A dataset folder (IGGP layout)."),
    tasks: str = typer.Option(..., help="Comma-separated GAME/TARGET."),
) -> None:
    source = open_source(dataset)
    table = Table("task", "atoms", "predictions", "split", "before s", "now s", "speed-up", "equal")
    all_equal = True
    for spec in tasks.split(","):
        game, target = spec.split("/")
        task = source.load_task(game, target)
        for kind in ("all-true", "all-false", "random-5%"):
            for name in ("validate", "test"):
                if name not in task.splits:
                    continue
                split = task.splits[name]
                pred = predictions_for(kind, task, split)
                old, t_old = timed(count_before, task, split, pred)
                new, t_new = timed(count, task, split, pred)
                all_equal &= old == new
                table.add_row(spec, str(len(task.target_atoms)), kind, name, f"{t_old:.2f}", f"{t_new:.2f}",
                              f"{t_old / max(t_new, 1e-9):.0f}x", str(old == new))  # fmt: skip
    Console().print(table)
    raise typer.Exit(0 if all_equal else 1)


if __name__ == "__main__":
    typer.run(main)
