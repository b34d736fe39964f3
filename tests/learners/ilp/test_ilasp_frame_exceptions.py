"""Frame clauses whose exceptions are rare or state-wide, on a small hand-made farming game.

``crops``: a crop stays on its cell unless it is winter (every crop is gone next) or the player
burns that cell. Burning is rare: 2 of 2,000 training states, so the frame step's sample of 200
states (`learners.ilp.frame.SAMPLE`) misses it. The rule is one frame clause,

    next_crop(Pos1) :- true_crop(Pos1), not true_season(winter), not does_burn(_,Pos1).

* ``not true_season(winter)`` is a negated literal with no variable (a state-wide exception);
* ``not does_burn(_,Pos1)`` is an exception that only the examples outside the sample show: the
  frame step checks its choice on every row and chooses again with the examples where it keeps a
  negative (`learners.ilp.frame._choose`).
"""

from __future__ import annotations

import numpy as np
from ilp_tasks import frame_texts

from learners.base import Budget, make_learner
from learners.ilp import frame
from learners.ilp.bias import bias_for
from learners.ilp.coverage import facts_for, targets_for
from learners.ilp.meter import Meter
from learners.metrics import evaluate, pool
from tasks.iggp import DatFile, task_from_dats
from tasks.signature import parse_typ

CROPS_TYP = """
true, next :: prop -> bool.
does :: agent -> action -> bool.
crop :: pos -> prop.
season :: season -> prop.
burn :: pos -> action.
tend :: pos -> action.
index :: pos -> bool.
a :: agent.
1, 2, 3, 4, 5, 6 :: pos.
spring, summer, fall, winter :: season.
"""
CELLS = ["1", "2", "3", "4", "5", "6"]
RULE = {"true_crop(Pos1)", "not true_season(winter)", "not does_burn(_,Pos1)"}


def _crops(seed: int, n: int, burns: int) -> DatFile:
    """``n`` states; in ``burns`` of them the player burns a cell with a crop, else tends a cell."""
    rng = np.random.default_rng(seed)
    burnt = set(rng.choice(n, size=burns, replace=False).tolist())
    examples = []
    for i in range(n):
        season = str(rng.choice(["spring", "summer", "fall", "winter"]))
        crops = [p for p in CELLS if rng.random() < 0.5] or ["1"]
        target = str(rng.choice(crops if i in burnt else CELLS))
        move = f"does_burn(a, {target})" if i in burnt else f"does_tend(a, {target})"
        after = [] if season == "winter" else [p for p in crops if not (i in burnt and p == target)]
        background = [f"true_crop({p})" for p in crops] + [f"true_season({season})", move]
        examples.append((background, [f"next_crop({p})" for p in after]))
    return DatFile([f"next_crop({p})" for p in CELLS], [f"index({p})" for p in CELLS], examples)


def crops_task():
    dats = {"train": _crops(1, 2000, 2), "validate": _crops(2, 200, 2), "test": _crops(3, 300, 30)}
    task = task_from_dats("crops", "next", dats, signature=parse_typ(CROPS_TYP, "crops.typ"))
    return task.for_predicate("next_crop")


def _bodies(task) -> list[set[str]]:
    return [set(text.split(" :- ")[1].rstrip(".").split(", ")) for text in frame_texts(task)]


def test_a_frame_exception_outside_the_sample_is_found_by_choosing_again(monkeypatch):
    task = crops_task()
    assert RULE in _bodies(task)
    monkeypatch.setattr(frame, "COUNTER_ROUNDS", 0)  # the sample's choice only: it misses the burns
    once = _bodies(task)
    assert RULE not in once and any(b == RULE - {"not does_burn(_,Pos1)"} for b in once), once


def test_the_crops_rule_is_learned_exactly():
    task = crops_task()
    model = make_learner("ilasp").fit(task, Budget(30))
    test = pool(evaluate(model, task, ["test"])["test"].values())
    assert test.balanced_accuracy == 1.0, model.rules()


def test_choosing_again_spends_work_and_is_repeatable():
    """The rounds spend units of a work meter (each literal tested, on the sample or on every row),
    and two runs with the same meter choose the same clauses."""
    task = crops_task()
    train = task.split("train")
    facts = facts_for(task, train)
    targets = targets_for(task, train, facts.constants)
    runs = []
    for _ in range(2):
        meter = Meter.of(Budget(60), 10**6)
        single, several = frame.frame_step(bias_for(task), facts, targets, 10**6, meter)
        runs.append(([c.text() for c in single + several], meter.work.done))
    assert runs[0] == runs[1]
    assert runs[0][1] > 0


def test_counterexamples_are_the_examples_where_a_clause_keeps_a_negative():
    """Only examples outside the sample, where the chosen clause (here the base alone) keeps a
    negative row."""
    table = frame.Table({"ex": np.array([0, 0, 1, 2, 3, 3]), 0: np.array([1, 2, 1, 1, 1, 2])}, 6)
    is_pos = np.array([True, False, True, False, False, True])
    meter = Meter.of(Budget(60), 10**6)
    missed = frame._counterexamples(table, is_pos, [], [], None, np.array([0]), meter, 0, 2)
    assert missed.tolist() == [2, 3]
