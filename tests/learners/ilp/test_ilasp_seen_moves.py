"""The moves seen legal in training as a base for ``legal`` targets of games that declare no moves.

``place`` is a GGP-style game with no ``input`` relation: two roles take turns marking an empty
cell of six, each with its own mark (``xp`` plays ``x``). ``legal_play(R, P, M)`` is "a move seen
legal, on my turn, onto an empty cell": with ``seen_legal_play`` (:mod:`learners.ilp.seen_moves`)
the frame step finds it as one clause; without it the frame step has no base at all.
"""

from __future__ import annotations

import numpy as np
from ilp_tasks import frame_texts

from learners.base import Budget, make_learner
from learners.ilp import seen_moves
from learners.ilp.bias import Settings
from learners.metrics import evaluate, pool
from tasks.iggp import DatFile, task_from_dats
from tasks.signature import parse_typ

PLACE_TYP = """
true :: prop -> bool.
legal :: role -> action -> bool.
cell :: pos -> mark -> prop.
control :: role -> prop.
play :: pos -> mark -> action.
index :: pos -> bool.
xp, op :: role.
x, o :: mark.
1, 2, 3, 4, 5, 6 :: pos.
"""
MARK = {"xp": "x", "op": "o"}
CELLS = range(1, 7)


def _place(seed: int, n: int) -> DatFile:
    rng = np.random.default_rng(seed)
    examples = []
    for _ in range(n):
        board = {p: str(rng.choice(["x", "o"])) for p in CELLS if rng.random() < 0.5}
        turn = str(rng.choice(["xp", "op"]))
        background = [f"true_cell({p}, {m})" for p, m in board.items()] + [f"true_control({turn})"]
        positives = [f"legal_play({turn}, {p}, {MARK[turn]})" for p in CELLS if p not in board]
        examples.append((background, positives))
    atoms = [f"legal_play({r}, {p}, {m})" for r in MARK for p in CELLS for m in ("x", "o")]
    return DatFile(atoms, [f"index({p})" for p in CELLS], examples)


def place_task():
    dats = {"train": _place(1, 300), "validate": _place(2, 100), "test": _place(3, 200)}
    task = task_from_dats("place", "legal", dats, signature=parse_typ(PLACE_TYP, "place.typ"))
    return task.for_predicate("legal_play")


def test_the_seen_moves_are_the_training_positives_as_a_static_with_the_heads_types():
    task = place_task().learning_view()
    extended, concept = seen_moves.extend(task)
    assert concept is not None and concept.name == "seen_legal_play"
    assert concept.types == ("role", "pos", "mark")
    facts = sorted(concept.definition.splitlines())
    assert facts == sorted(f"seen_legal_play({r},{p},{MARK[r]})." for r in MARK for p in CELLS)
    names = extended.background_atoms.names
    assert sorted(names[i] for i in extended.statics if names[i].startswith("seen_")) == sorted(
        f"seen_legal_play({r}, {p}, {MARK[r]})" for r in MARK for p in CELLS
    )
    assert len(task.background_atoms) < len(names)  # the task's own vocabulary is not changed


def test_the_frame_step_learns_legal_from_the_seen_moves():
    extended, _ = seen_moves.extend(place_task().learning_view())
    texts = frame_texts(extended)
    assert texts[0] == "legal_play(Role1,Pos1,Mark1) :- seen_legal_play(Role1,Pos1,Mark1)."
    assert set(texts[-1].split(" :- ")[1].rstrip(".").split(", ")) == {
        "seen_legal_play(Role1,Pos1,Mark1)",
        "true_control(Role1)",
        "not true_cell(Pos1,_)",
    }, texts
    assert frame_texts(place_task()) == []  # no base without them


def test_a_program_over_the_seen_moves_carries_their_facts_and_is_exact_on_test():
    task = place_task()
    model = make_learner("ilasp_w20000").fit(task.learning_view(), Budget(60))
    assert "seen_legal_play(xp,1,x)." in model.rules(), model.rules()
    assert pool(evaluate(model, task, ["test"])["test"].values()).balanced_accuracy == 1.0, model.rules()


def test_only_where_the_game_declares_no_moves_and_only_for_legal():
    task = place_task()
    declared = parse_typ(PLACE_TYP + "input :: role -> action -> bool.\n", "place.typ")
    with_input = task_from_dats("place", "legal", {"train": _place(1, 50)}, signature=declared).for_predicate(
        "legal_play"
    )
    assert seen_moves.extend(with_input) == (with_input, None)
    assert seen_moves.extend(task)[1] is not None
    other = place_task()
    other.target = "next"
    assert seen_moves.extend(other) == (other, None)
    learner = make_learner("ilasp_noseen")
    assert learner.settings == Settings(seen_moves=False)
