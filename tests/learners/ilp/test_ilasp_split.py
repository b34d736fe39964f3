"""Variables split in two after the search (``Settings.split``, ``_nosplit``; `refine.splits`).

``jumped``: the game is over once a player jumps, from any square to any square of a 3 x 3
board. A jump names four coordinates over three values, so every seed repeats a value
(``does_jump(white, 1, 2, 3, 1)``), and the refinement operator joins the repeated places into
one variable (``does_jump(Agent1, Pos1, Pos2, Pos3, Pos1)``). That clause is consistent, so
the search stops there: each seed gives a rule for its own jump shape. Splitting the variable
back is what reaches ``does_jump(Agent1, Pos1, Pos2, Pos3, Pos4)``.
"""

from __future__ import annotations

import numpy as np

from learners.base import Budget, make_learner
from learners.ilp.bias import Clause, Literal
from learners.ilp.refine import MAX_SPLITS, splits
from learners.metrics import evaluate, pool
from tasks.iggp import DatFile, task_from_dats
from tasks.signature import parse_typ

JUMP_TYP = """
true, next :: prop -> bool.
does :: agent -> action -> bool.
control :: agent -> prop.
jumped :: prop.
white, black :: agent.
1, 2, 3 :: pos.
jump :: pos -> pos -> pos -> pos -> action.
pass, wait :: action.
"""


def _jumps(seed: int, n: int, shapes: int) -> DatFile:
    """``n`` moves; a jump's coordinates are drawn from the first ``shapes`` of a fixed list of
    coordinate tuples (training sees few shapes, test all of them)."""
    rng = np.random.default_rng(seed)
    every = [(a, b, c, d) for a in (1, 2, 3) for b in (1, 2, 3) for c in (1, 2, 3) for d in (1, 2, 3)]
    order = np.random.default_rng(0).permutation(len(every))
    allowed = [every[i] for i in order[:shapes]]
    examples = []
    for _ in range(n):
        mover, other = ("white", "black") if rng.random() < 0.5 else ("black", "white")
        background = [f"true_control({mover})", f"does({other}, wait)"]
        if rng.random() < 0.5:
            x1, y1, x2, y2 = allowed[rng.integers(len(allowed))]
            background.append(f"does_jump({mover}, {x1}, {y1}, {x2}, {y2})")
            positives = ["next_jumped"]
        else:
            background.append(f"does({mover}, pass)")
            positives = []
        examples.append((background, positives))
    return DatFile(["next_jumped"], [], examples)


def _task():
    dats = {"train": _jumps(1, 200, 40), "validate": _jumps(2, 60, 40), "test": _jumps(3, 300, 81)}
    task = task_from_dats("jumps", "next", dats, signature=parse_typ(JUMP_TYP, "jumps.typ"))
    return task.for_predicate("next_jumped")


def test_a_seeds_coincidence_of_values_is_split_back_into_the_rule():
    task = _task()
    model = make_learner("ilasp_w100000").fit(task.learning_view(), Budget(300))
    assert model.rules().strip() == "next_jumped :- does_jump(Agent1,Pos1,Pos2,Pos3,Pos4).", model.rules()
    assert pool(evaluate(model, task, ["test"])["test"].values()).balanced_accuracy == 1.0
    without = make_learner("ilasp_w100000_nosplit").fit(task.learning_view(), Budget(300))
    assert "does_jump(Agent1,Pos1,Pos2,Pos3,Pos4)" not in without.rules(), without.rules()


def test_splits_keep_the_first_place_and_stay_safe():
    # next_cell(X, Y) :- does_move(X, Y, X), true_cell(X, Y): X at the head, twice in the move, once in the cell
    c = Clause(
        "next_cell",
        (0, 1),
        (
            Literal("does_move", (0, 1, 0)),
            Literal("true_cell", (0, 1)),
            Literal("true_cell", (1, 0), negated=True),
        ),
        ("pos", "pos"),
    )
    made = [m for m, _ in splits(c, ("1", "2"))]
    bodies = {tuple((lit.pred, lit.args) for lit in m.body) for m in made}
    # one place of X moved: the move's first, its third, the cell's
    assert (("does_move", (2, 1, 0)), ("true_cell", (0, 1)), ("true_cell", (1, 0))) in bodies
    assert (("does_move", (0, 1, 2)), ("true_cell", (0, 1)), ("true_cell", (1, 0))) in bodies
    assert (("does_move", (2, 1, 2)), ("true_cell", (2, 1)), ("true_cell", (1, 0))) not in bodies  # X unbound
    for m in made:
        assert m.safe() and len(m.types) == 3
        assert m.body[2] == c.body[2]  # a negated literal's places are never moved
    # the new variable's theta is marked, so the search tells the split clause from its parent
    assert all(th[-1].startswith(("1#", "2#")) for _, th in splits(c, ("1", "2")))
    assert len(made) <= 2 * MAX_SPLITS
