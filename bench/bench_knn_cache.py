"""knn on every predicate of a task, as a sweep runs it (one job per predicate and k), with the
neighbour-ranking cache off and on.

Why: each flattened predicate of a task is its own job, but the backgrounds (and so the
neighbours) are the same for all of them and for knn1 and knn5. With the cache, the first job ranks
and the others read. The table gives seconds for all the task's knn1 and knn5 jobs (fit and
predict on validate and test) and whether every prediction agrees.

    python bench/bench_knn_cache.py --dataset DIR --tasks skirmishFinal2/next,kalaha_2009/next
"""

from __future__ import annotations

import os
import tempfile
import time

import typer
from rich.console import Console
from rich.table import Table

from learners.base import Budget, make_learner
from tasks.sources import open_source


def all_jobs(task) -> tuple[float, list]:  # noqa: ANN001
    """Every (predicate, k) job of ``task``: seconds and the predictions, in order."""
    out, t0 = [], time.perf_counter()
    for predicate in task.predicates:
        one = task.for_predicate(predicate)
        for name in ("knn1", "knn5"):
            model = make_learner(name).fit(one, Budget(600))
            out += [model.predict(one, one.splits[s]) for s in ("validate", "test") if s in one.splits]
    return time.perf_counter() - t0, out


def main(
    dataset: str = typer.Option(..., help="A dataset folder (IGGP layout)."),
    tasks: str = typer.Option(..., help="Comma-separated GAME/TARGET."),
) -> None:
    source = open_source(dataset)
    table = Table("task", "predicates", "jobs", "no cache s", "cache s", "speed-up", "equal")
    same = True
    with tempfile.TemporaryDirectory() as cache:
        os.environ["ORCH_CACHE"] = cache
        for spec in tasks.split(","):
            game, target = spec.split("/")
            task = source.load_task(game, target)
            os.environ["ORCH_NEIGHBOUR_CACHE"] = "off"
            t_off, off = all_jobs(task)
            os.environ["ORCH_NEIGHBOUR_CACHE"] = "on"
            t_on, on = all_jobs(task)
            equal = all((a != b).nnz == 0 for a, b in zip(off, on, strict=True))
            same &= equal
            n = len(task.predicates)
            table.add_row(
                spec, str(n), str(2 * n), f"{t_off:.1f}", f"{t_on:.1f}", f"{t_off / t_on:.1f}x", str(equal)
            )
    Console().print(table)
    raise typer.Exit(0 if same else 1)


if __name__ == "__main__":
    typer.run(main)
