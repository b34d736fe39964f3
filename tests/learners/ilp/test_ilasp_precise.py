"""The beam keeps places for its most precise clauses (``Settings.precise``; learners/ilp/search.py).

``runners``: two players each steer a piece one step left, right, up or down; ``next_at`` is four
rules, one per direction, each covering a quarter of the positives and nothing else:
``next_at(X, Y, O) :- true_at(Z, Y, O), succ(X, Z), controls(R, O), does(R, left)``. Ranked by the
balanced-accuracy gain alone, ``true_at(Z, Y, O), cell(X)`` (every column of the piece's row) covers
every positive and outranks the precise branch, whose second literal covers only a quarter, so
the beam never holds it long enough to add the move.
"""

from __future__ import annotations

import numpy as np
import pytest
from ilp_tasks import test_ba, typed_task

from learners.base import Budget, make_learner
from tasks.iggp import DatFile

RUNNERS_TYP = """
true, next :: prop -> bool.
does :: agent -> action -> bool.
black, white :: agent.
1, 2, 3, 4, 5 :: int.
x, o :: object.
at :: int -> int -> object -> prop.
marked :: int -> int -> prop.
left, right, up, down :: action.
cell :: int -> bool.
controls :: agent -> object -> bool.
succ :: int -> int -> bool.
"""

STEPS = {"left": (-1, 0), "right": (1, 0), "up": (0, 1), "down": (0, -1)}
OWNER = {"black": "x", "white": "o"}


def _runners(seed: int, n: int) -> DatFile:
    rng = np.random.default_rng(seed)
    examples = []
    for _ in range(n):
        background, positives = [], []
        for agent, piece in OWNER.items():
            x, y = (int(v) for v in rng.integers(1, 6, size=2))
            move = list(STEPS)[int(rng.integers(len(STEPS)))]
            dx, dy = STEPS[move]
            background += [f"true_at({x}, {y}, {piece})", f"does({agent}, {move})"]
            if 1 <= x + dx <= 5 and 1 <= y + dy <= 5:  # off the board, the piece is gone
                positives.append(f"next_at({x + dx}, {y + dy}, {piece})")
        for _ in range(int(rng.integers(0, 12))):
            background.append("true_marked({}, {})".format(*rng.integers(1, 6, size=2)))
        examples.append((sorted(set(background)), sorted(set(positives))))
    atoms = [f"next_at({x}, {y}, {p})" for p in OWNER.values() for x in range(1, 6) for y in range(1, 6)]
    statics = (
        [f"cell({i})" for i in range(1, 6)]
        + [f"succ({i}, {i + 1})" for i in range(1, 5)]
        + [f"controls({a}, {p})" for a, p in OWNER.items()]
    )
    return DatFile(atoms, statics, examples)


def _task():
    dats = {"train": _runners(1, 200), "validate": _runners(2, 50), "test": _runners(3, 200)}
    return typed_task("runners", "next", "next_at", RUNNERS_TYP, dats)


@pytest.mark.slow  # about 80 s: two fits of 50,000 units
def test_a_rule_of_four_precise_clauses_is_not_crowded_out_by_an_overgeneral_branch():
    task = _task()
    # a work bound, not seconds: the same search on any machine, however loaded (with the
    # precise places the program is complete after about 47,000 units; without, the beam spends
    # the bound on the overgeneral branch and ends with clauses that ignore the move)
    name = "ilasp_w50000_noframe"
    model = make_learner(name).fit(task.learning_view(), Budget(300))
    assert test_ba(model, task) == 1.0, model.rules()
    without = make_learner(name + "_noprecise").fit(task.learning_view(), Budget(300))
    assert test_ba(without, task) < 1.0, without.rules()
