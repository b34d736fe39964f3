"""Ground absence tests, on a small hand-made lights game.

``lights``: a 4 x 4 board of lights; the robot wins when three given lights are on, whatever the
others, and it has won in 3 of 600 training states. So

    goal(robot, 0) :- not true_on(1, 1).   goal(robot, 0) :- not true_on(2, 3).
    goal(robot, 0) :- not true_on(4, 4).

Each rule is a negated fluent with two constants and no variable. The one-constant rule
(``not true_cell(_, _, b)``) cannot say it, and a rule that names other lights
(``goal(robot, 0) :- true_on(1, 2)``) fits the three training wins by chance, and the test
split's thirty wins refute it.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from learners.base import Budget
from learners.ilp.bias import Clause, Literal, Settings, bias_for
from learners.ilp.coverage import facts_for, targets_for
from learners.ilp.ilasp import IlaspLearner
from learners.ilp.refine import Bottom, Refiner
from learners.ilp.search import Node, Search
from learners.ilp.seeds import rare_negatives
from learners.metrics import evaluate, pool
from tasks.iggp import DatFile, task_from_dats
from tasks.signature import parse_typ

LIGHTS_TYP = """
true :: prop -> bool.
goal :: agent -> score -> bool.
on :: pos -> pos -> prop.
robot :: agent.
1, 2, 3, 4 :: pos.
0, 100 :: score.
"""
WINNING = [("1", "1"), ("2", "3"), ("4", "4")]
CELLS = [(str(i), str(j)) for i in range(1, 5) for j in range(1, 5)]


def _lights(seed: int, n: int, wins: int) -> DatFile:
    """``n`` states with random lights; in ``wins`` of them the three winning lights are on too."""
    rng = np.random.default_rng(seed)
    winners = set(rng.choice(n, size=wins, replace=False).tolist())
    examples = []
    for i in range(n):
        on = {c for c in CELLS if rng.random() < 0.5}
        if i in winners:
            on |= set(WINNING)
        elif set(WINNING) <= on:
            on.discard(WINNING[int(rng.integers(3))])
        won = set(WINNING) <= on
        background = [f"true_on({x}, {y})" for x, y in sorted(on)]
        examples.append((background, [f"goal(robot, {100 if won else 0})"]))
    return DatFile(["goal(robot, 0)", "goal(robot, 100)"], [], examples)


def lights_task():
    dats = {"train": _lights(1, 600, 3), "validate": _lights(2, 150, 2), "test": _lights(3, 300, 30)}
    return task_from_dats("lights", "goal", dats, signature=parse_typ(LIGHTS_TYP, "lights.typ"))


def _negations(bias, clause: Clause, seed_atoms) -> list[str]:
    refiner = Refiner(bias, Bottom.of(seed_atoms, []))
    theta = ("robot", "0")
    return [
        c.text()
        for c, _, lit in refiner.refinements(clause, theta)
        if isinstance(lit, Literal) and lit.negated
    ]


def test_a_clause_without_variables_gets_ground_absence_tests_of_the_fluents_seen():
    """``goal(robot, 0)`` with no body: ``not true_on(X, Y)`` for each light the data shows and
    the seed has off; two constants, which the one-constant rule never offers."""
    bias = bias_for(lights_task().learning_view())
    seed = [("true_on", c) for c in CELLS if c != ("1", "1")]
    texts = _negations(bias, Clause("goal", ("robot", "0"), (), bias.head_types), seed)
    assert "goal(robot,0) :- not true_on(1,1)." in texts
    assert not any("true_on(1,2)" in t for t in texts)  # on in the seed: it must stay covered


def test_a_clause_with_variables_gets_no_ground_absence_tests():
    bias = bias_for(lights_task().learning_view())
    body = (Literal("true_on", (2, 3)),)
    clause = Clause("goal", ("robot", "0"), body, (*bias.head_types, "pos", "pos"))
    refiner = Refiner(bias, Bottom.of([("true_on", ("1", "2"))], []))
    made = [lit for _, _, lit in refiner.refinements(clause, ("robot", "0", "1", "2"))]
    ground = [lit for lit in made if isinstance(lit, Literal) and lit.negated and not lit.variables()]
    assert all(None in lit.args for lit in ground), ground  # only the one-constant ones, with ``_``


def test_the_lights_goal_is_learned_exactly_at_a_work_bound():
    """Without the default-rule step, which would say ``goal(robot, 0) :- not goal(robot, 100)``
    (without ground absence tests the plain program scores 0.95 on test)."""
    task = lights_task()
    model = IlaspLearner(Settings(max_work=20_000, defaults=False)).fit(task, Budget(60))
    test = pool(evaluate(model, task, ["test"])["test"].values())
    assert test.balanced_accuracy == 1.0, model.rules()
    for x, y in WINNING:
        assert f"goal(robot,0) :- not true_on({x},{y})." in model.rules(), model.rules()


def test_the_search_sample_holds_the_rare_states_where_a_target_atom_is_false():
    """``goal(robot, 0)`` is false only in the three winning states of 600; a sample of 200 would
    hold one of them on average, so they are added (`learners.ilp.seeds.rare_negatives`), and
    nothing for ``goal(robot, 100)`` (false in most states)."""
    task = lights_task().learning_view()
    train = task.split("train")
    facts = facts_for(task, train)
    targets = targets_for(task, train, facts.constants)
    win = int(task.target_atoms.ids(["goal(robot, 100)"])[0])
    ex, atom = np.divmod(targets.positives, targets.n_atoms)
    won = ex[atom == win].tolist()
    learning = SimpleNamespace(targets=targets, facts=facts)
    assert rare_negatives(learning, 200).tolist() == sorted(won) and len(won) == 3
    assert len(rare_negatives(learning, 600)) == 0  # the sample is every example


def test_ties_in_the_beam_go_to_the_shorter_clause():
    """A named head with no body (``goal(robot, 0).``) before an equally scored clause that binds
    the head variable by a literal: its refinements are the short rules (``not true_on(3, 4)``)."""
    bias = bias_for(lights_task().learning_view())
    short = Clause("goal", ("robot", "0"), (), bias.head_types)
    longer = Clause("goal", ("robot", "0"), (Literal("true_on", (2, 3)),), (*bias.head_types, "pos", "pos"))
    theta = ("robot", "0", "1", "1")
    nodes = [Node(longer, theta, None, 10, 1, 0.9), Node(short, theta[:2], None, 10, 1, 0.9)]
    search = Search.__new__(Search)
    search.s = Settings()
    assert [n.clause for n in search._next_beam(nodes, 2)][:2] == [short, longer]


def test_each_lifted_clause_takes_one_lifted_place_in_the_beam():
    """One lifted clause under two thetas (reached from two seed cells) takes one of the lifted
    places; the next lifted clause gets the other (`learners.ilp.search._distinct_lifted`)."""
    bias = bias_for(lights_task().learning_view())
    types = (*bias.head_types, "pos", "pos")
    best = Clause("goal", ("robot", "0"), (), bias.head_types)
    cell = Clause("goal", ("robot", "0"), (Literal("true_on", (2, 3)),), types)
    other = Clause("goal", ("robot", "0"), (Literal("true_on", (2, 2)),), (*bias.head_types, "pos"))
    nodes = [
        Node(best, ("robot", "0"), None, 10, 0, 1.0),
        Node(cell, ("robot", "0", "1", "2"), None, 10, 5, 0.5),
        Node(cell, ("robot", "0", "3", "4"), None, 10, 5, 0.5),
        Node(other, ("robot", "0", "1", "2"), None, 10, 6, 0.4),
    ]
    search = Search.__new__(Search)
    search.s = Settings(precise=False)  # the lifted places alone (precise ones: test_ilasp_precise.py)
    beam = [n.clause for n in search._next_beam(nodes, 1)]
    assert beam == [best, cell, other]
