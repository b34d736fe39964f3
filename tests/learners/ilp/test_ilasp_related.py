"""Two constants made variables joined by a static (``Settings.related``; learners/ilp/refine.py).

``scores``: two players each hold a score from 0 to 9; a player wins when their score is greater
than the other's: ``goal(A, 100) :- true_score(A, X), true_score(B, Y), greater(X, Y)``. A seed's
search ends with the two scores it saw (``true_score(A, 7), true_score(B, 2)``); neither constant
alone can be made a variable, and the two-literal body with both variables covers every example,
so the beam does not keep it long enough to add ``greater``. Forty-five ordered pairs of scores and
sixty training examples: rules over the seeds' pairs do not reach every pair of the test split.
"""

from __future__ import annotations

import numpy as np
from ilp_tasks import test_ba, typed_task

from learners.base import Budget, make_learner
from tasks.iggp import DatFile

SCORES_TYP = """
true :: prop -> bool.
goal :: agent -> int -> bool.
black, white :: agent.
0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100 :: int.
x, o :: mark.
score :: agent -> int -> prop.
marked :: int -> mark -> prop.
greater :: int -> int -> bool.
"""

PLAYERS = ("black", "white")


def _scores(seed: int, n: int) -> DatFile:
    rng = np.random.default_rng(seed)
    examples = []
    for _ in range(n):
        scores = {p: int(rng.integers(0, 10)) for p in PLAYERS}
        background = [f"true_score({p}, {s})" for p, s in scores.items()]
        for _ in range(int(rng.integers(0, 6))):
            background.append(f"true_marked({int(rng.integers(0, 10))}, {'xo'[int(rng.integers(2))]})")
        black, white = scores["black"], scores["white"]
        positives = [
            f"goal({p}, 100)"
            for p, mine, theirs in (("black", black, white), ("white", white, black))
            if mine > theirs
        ]
        examples.append((sorted(set(background)), positives))
    atoms = [f"goal({p}, 100)" for p in PLAYERS]
    statics = [f"greater({x}, {y})" for x in range(10) for y in range(10) if x > y]
    return DatFile(atoms, statics, examples)


def _task():
    dats = {"train": _scores(1, 60), "validate": _scores(2, 30), "test": _scores(3, 300)}
    return typed_task("scores", "goal", "goal", SCORES_TYP, dats)


def test_a_comparison_of_two_values_is_learned_from_the_seeds_constants():
    task = _task()
    name = "ilasp_w20000_nodefaults"  # a work bound: the same search on any machine
    model = make_learner(name).fit(task.learning_view(), Budget(120))
    assert test_ba(model, task) == 1.0, model.rules()
    assert "greater(" in model.rules()
    without = make_learner(name + "_norelated").fit(task.learning_view(), Budget(120))
    assert test_ba(without, task) < 1.0, without.rules()
