"""Bench: the symbolic evaluation path (``learners.ilp.evaluate.RuleModel``), both strategies side by side.

For each (model, task) it measures examples per second over the validate and test splits:

* ``cold``: the first ``predict`` calls on a fresh model (parsing, rewriting, grounding included) -
  what an orchestrator job pays, since it scores one model once;
* ``warm``: the same calls again on the same model (the externals strategy reuses its grounding,
  the batched one grounds each split again);

and checks that the two strategies give identical predictions (``agree``) and the balanced
accuracy of the model on test. Models: a hand-written tictactoe ``next`` program (a small learned
program's size) and the ``reference`` learner's GDL programs (the heaviest rule sets we evaluate).

    python bench/bench_evaluate.py                       # the default cases (about a minute)
    python bench/bench_evaluate.py --cases tictactoe:next breakthrough:next --json
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import iggp_dir, peak_rss_mb, print_table  # noqa: E402
from learners.ilp.evaluate import STRATEGIES, RuleModel  # noqa: E402
from learners.ilp.reference import reference_model  # noqa: E402
from learners.metrics import count, pool  # noqa: E402
from tasks.iggp import Dataset  # noqa: E402

TICTACTOE_NEXT = """
next_cell(M, N, x) :- does_mark(white, M, N), true_cell(M, N, b).
next_cell(M, N, o) :- does_mark(black, M, N), true_cell(M, N, b).
next_cell(M, N, W) :- true_cell(M, N, W), W != b.
next_cell(M, N, b) :- true_cell(M, N, b), does_mark(P, J, K), M != J.
next_cell(M, N, b) :- true_cell(M, N, b), does_mark(P, J, K), N != K.
next_control(white) :- true_control(black).
next_control(black) :- true_control(white).
"""

DEFAULT_CASES = [
    "tictactoe:next:hand",
    "tictactoe:next",
    "tictactoe:legal",
    "breakthrough:next",
    "farming:goal",
    "checkers:legal",
]


def _model(dataset: Dataset, case: str, strategy: str):
    game, target, *kind = case.split(":")
    task = dataset.load_task(game, target)
    if kind == ["hand"]:
        return task, RuleModel(TICTACTOE_NEXT, name="hand-written", strategy=strategy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Prolog-style lines in some GDL files
        model = reference_model(task)
    model.strategy = strategy
    return task, model


def measure(dataset: Dataset, case: str, strategy: str) -> dict:
    task, model = _model(dataset, case, strategy)
    splits = [task.split(s) for s in ("validate", "test") if s in task.splits]
    n = sum(s.n_examples for s in splits)
    t0 = time.perf_counter()
    first = [model.predict(task, s) for s in splits]
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    for s in splits:
        model.predict(task, s)
    warm = time.perf_counter() - t0
    test = pool(count(task, splits[-1], first[-1]).values())
    return {
        "case": case,
        "strategy": strategy,
        "examples": n,
        "rules": model.describe().split(":")[1].split(";")[0].strip(),
        "cold_ex_s": n / cold,
        "warm_ex_s": n / warm,
        "test_bacc": test.balanced_accuracy,
        "_predictions": first,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", nargs="*", default=DEFAULT_CASES, help="GAME:TARGET[:hand]")
    parser.add_argument("--strategies", nargs="*", default=list(STRATEGIES))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    dataset = Dataset(iggp_dir())
    rows = []
    for case in args.cases:
        results = [measure(dataset, case, s) for s in args.strategies]
        base = results[0]["_predictions"]
        for r in results:
            preds = r.pop("_predictions")
            r["agree"] = all((a != b).nnz == 0 for a, b in zip(base, preds, strict=True))
            rows.append(r)
    print_table(rows, args.json, title=f"symbolic evaluation, examples/s (peak RSS {peak_rss_mb():.0f} MiB)")


if __name__ == "__main__":
    main()
