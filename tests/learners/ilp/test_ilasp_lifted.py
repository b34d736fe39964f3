"""The beam keeps a place for lifted clauses (``Settings.lifted``; learners/ilp/search.py).

``knight``: the game ends when the knight stands on a hole. ``true_cell(X, Y, knight)`` alone
covers every state (it scores nothing), while literals with a constant (a hole on row 3) fit a
part of the positives and fill the beam; only the lifted literal joined with
``true_cell(X, Y, hole)`` is the rule.
"""

from __future__ import annotations

import numpy as np
from ilp_tasks import test_ba, typed_task

from learners.base import Budget, make_learner
from tasks.iggp import DatFile

KNIGHT_TYP = """
true :: prop -> bool.
terminal :: bool.
cell :: pos -> pos -> piece -> prop.
1, 2, 3, 4, 5 :: pos.
knight, hole :: piece.
"""


def _knight(seed: int, n: int) -> DatFile:
    rng = np.random.default_rng(seed)
    cells = [(x, y) for x in range(1, 6) for y in range(1, 6)]
    examples = []
    for _ in range(n):
        holes = [cells[i] for i in rng.choice(len(cells), size=int(rng.integers(2, 12)), replace=False)]
        knight = cells[int(rng.integers(len(cells)))]
        background = [f"true_cell({x}, {y}, hole)" for x, y in holes] + [
            f"true_cell({knight[0]}, {knight[1]}, knight)"
        ]
        examples.append((background, ["terminal"] if knight in holes else []))
    return DatFile(["terminal"], [], examples)


def _task():
    dats = {"train": _knight(1, 300), "validate": _knight(2, 100), "test": _knight(3, 200)}
    return typed_task("knight", "terminal", "terminal", KNIGHT_TYP, dats)


def test_a_lifted_literal_that_pays_off_with_the_next_keeps_its_place_in_the_beam():
    task = _task()
    # a work bound, not seconds: the same search on a loaded machine (each fit ends "bias too
    # small" after about 8,000 units, 4 s on an idle core; 20 s was cut short under load)
    name = "ilasp_w100000_nocomplement_noconcepts"
    model = make_learner(name).fit(task.learning_view(), Budget(300))
    assert test_ba(model, task) == 1.0, model.rules()
    assert len(model.rules().splitlines()) == 1, model.rules()  # the one lifted rule
    # without the lifted places, the beam finds a rule per row or column (since its ties go to the
    # shorter clause, the five column rules are all found, exact on test too); generalisation then
    # makes each column's constant a variable, which is the lifted rule again
    alone = make_learner(name + "_nolifted").fit(task.learning_view(), Budget(300))
    assert len(alone.rules().splitlines()) == 1, alone.rules()
    without = make_learner(name + "_nolifted_nogeneralise").fit(task.learning_view(), Budget(300))
    assert len(without.rules().splitlines()) > 1, without.rules()
